package iphdr_test

import (
	"fmt"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/iphdr"
)

// Parse a packet into the Meta a queue needs, queue it, and write CE into
// its header when it leaves the queue marked.
func Example() {
	h := iphdr.NewHasher() // secret random key; NewHasherWithKey only for tests
	q, _ := fifo.New[[]byte](fifo.Config{}, nil)
	pkt := []byte{ // IPv4 UDP 192.0.2.1:5353 -> 198.51.100.7:53, ECT(0)
		0x45, 0x02, 0x00, 0x24, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x4e, 0x8b,
		192, 0, 2, 1, 198, 51, 100, 7,
		0x14, 0xe9, 0x00, 0x35, 0x00, 0x10, 0x00, 0x00, 'p', 'a', 'y', 'l', 'o', 'a', 'd', '!'}
	m, err := h.Meta(pkt)
	fmt.Println(m.Size, m.ECN, err)
	q.Enqueue(aqm.Packet[[]byte]{Payload: pkt, Meta: m}, 1)
	p, _ := q.Dequeue(2)
	p.ECN = aqm.CE // a FIFO never marks; an AQM such as codel would
	if p.ECN == aqm.CE {
		err = iphdr.SetCE(p.Payload)
	}
	e, _ := iphdr.ECN(p.Payload)
	fmt.Printf("%v %v checksum %#x\n", e, err, p.Payload[10:12])
	// Output:
	// 36 ECT(0) <nil>
	// CE <nil> checksum 0x4e8a
}
