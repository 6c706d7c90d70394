package iphdr_test

import (
	"fmt"

	"github.com/aqmkit/aqmkit/iphdr"
)

// An IPv4-in-IPv4 tunnel: the ingress copies the inner packet's ECT(0)
// into the outer header, a router inside the tunnel marks the outer header
// CE, and the egress passes the mark on to the inner packet.
func ExampleDecapsulate() {
	inner := []byte{ // IPv4 UDP 192.0.2.1:5353 -> 198.51.100.7:53, ECT(0)
		0x45, 0x02, 0x00, 0x24, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x4e, 0x8b,
		192, 0, 2, 1, 198, 51, 100, 7,
		0x14, 0xe9, 0x00, 0x35, 0x00, 0x10, 0x00, 0x00, 'p', 'a', 'y', 'l', 'o', 'a', 'd', '!'}
	outer := append([]byte{ // IPv4, protocol 4 (IP in IP), 203.0.113.1 -> 203.0.113.2, Not-ECT
		0x45, 0x00, 0x00, 0x38, 0x00, 0x00, 0x40, 0x00, 0x40, 0x04, 0xc2, 0xbd,
		203, 0, 113, 1, 203, 0, 113, 2}, inner...)
	inner = outer[20:]

	err := iphdr.Encapsulate(outer, inner)
	e, _ := iphdr.ECN(outer)
	fmt.Printf("outer %v %v, checksum %#x\n", e, err, outer[10:12])

	_ = iphdr.SetCE(outer) // congestion inside the tunnel

	suspect, err := iphdr.Decapsulate(outer, inner)
	e, _ = iphdr.ECN(inner)
	fmt.Printf("inner %v (suspect %v, %v), checksum %#x\n", e, suspect, err, inner[10:12])
	// Output:
	// outer ECT(0) <nil>, checksum 0xc2bb
	// inner CE (suspect false, <nil>), checksum 0x4e8a
}
