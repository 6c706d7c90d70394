package aqm_test

import (
	"fmt"

	"github.com/aqmkit/aqmkit/aqm"
)

// A drop-tail FIFO of three packets: the fourth arrival is refused and stays
// with the caller.
func ExampleNewFIFO() {
	q, err := aqm.NewFIFO[string](aqm.FIFOConfig{LimitPackets: 3}, nil)
	if err != nil {
		panic(err)
	}
	now := aqm.Time(1_000_000_000)
	for _, name := range []string{"a", "b", "c", "d"} {
		v := q.Enqueue(aqm.Packet[string]{Payload: name, Meta: aqm.Meta{Size: 1500}}, now)
		fmt.Println(name, v)
	}
	p, _ := q.Dequeue(now + 2_000_000)
	fmt.Println("sent", p.Payload, "after", aqm.Sojourn(p, now+2_000_000))
	s := q.Stats()
	fmt.Println("offered", s.Offered().Packets, "queued", s.Len, "dropped", s.Dropped().Packets)
	// Output:
	// a enqueued
	// b enqueued
	// c enqueued
	// d dropped-overlimit
	// sent a after 2ms
	// offered 4 queued 2 dropped 1
}

// A dequeued packet that comes out with CE must be sent with CE set.
func ExampleQueue_ecn() {
	var q aqm.Queue[[]byte]
	q, _ = aqm.NewFIFO[[]byte](aqm.FIFOConfig{}, nil)
	hdr := []byte{0x45, 0x02} // IPv4, ECT(0) in the low bits of the TOS byte
	q.Enqueue(aqm.Packet[[]byte]{Payload: hdr, Meta: aqm.Meta{Size: 20, ECN: aqm.ECN(hdr[1] & 3)}}, 1)
	p, ok := q.Dequeue(2)
	if ok && p.ECN == aqm.CE {
		p.Payload[1] |= 3 // write CE (and fix the checksum in real code)
	}
	fmt.Printf("ECN %v, TOS %#x\n", p.ECN, p.Payload[1])
	// Output: ECN ECT(0), TOS 0x2
}
