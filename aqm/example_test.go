package aqm_test

import (
	"fmt"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
)

// A dequeued packet that comes out with CE must be sent with CE set.
func ExampleQueue_ecn() {
	var q aqm.Queue[[]byte]
	q, _ = fifo.New[[]byte](fifo.Config{}, nil)
	hdr := []byte{0x45, 0x02} // IPv4, ECT(0) in the low bits of the TOS byte
	q.Enqueue(aqm.Packet[[]byte]{Payload: hdr, Meta: aqm.Meta{Size: 20, ECN: aqm.ECN(hdr[1] & 3)}}, 1)
	p, ok := q.Dequeue(2)
	if ok && p.ECN == aqm.CE {
		p.Payload[1] |= 3 // write CE (and fix the checksum in real code)
	}
	fmt.Printf("ECN %v, TOS %#x\n", p.ECN, p.Payload[1])
	// Output: ECN ECT(0), TOS 0x2
}
