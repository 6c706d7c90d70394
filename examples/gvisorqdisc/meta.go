package gvisorqdisc

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/iphdr"
)

// maxHeaderBytes is the most header bytes meta reads from a packet: the
// network header (an IPv4 header with options is at most 60 bytes, an IPv6
// header with a few extension headers fits) and the start of the transport
// header.
const maxHeaderBytes = 192

// transportKeyBytes is how much of the transport header the flow key can
// use: the ports (TCP, UDP, SCTP, DCCP), the ICMP echo identifier, the ESP
// SPI and the GRE key all lie in its first 16 bytes.
const transportKeyBytes = 16

// meta returns the queue's view of pkt: its size (pkt.Size(), every byte
// the link will carry), the keyed flow hash of its addresses, protocol and
// ports, and its ECN codepoint. It reads the headers netstack already
// parsed or built, copying at most maxHeaderBytes of them into a buffer on
// the stack and never touching the payload.
//
// The copy ends after the transport header's first bytes, so its IP length
// field is set to what was copied before the hasher reads it: the length
// is no part of the flow key, and the packet itself is not changed.
func meta(h *iphdr.Hasher, pkt *stack.PacketBuffer) aqm.Meta {
	var buf [maxHeaderBytes]byte
	n := copy(buf[:], pkt.NetworkHeader().Slice())
	th := pkt.TransportHeader().Slice()
	n += copy(buf[n:], th[:min(len(th), transportKeyBytes)])
	b := buf[:n]
	switch {
	case n >= 20 && b[0]>>4 == 4:
		binary.BigEndian.PutUint16(b[2:4], uint16(n))
	case n >= 40 && b[0]>>4 == 6:
		binary.BigEndian.PutUint16(b[4:6], uint16(n-40))
	}
	m, _ := h.Meta(b) // a bad header still gets a usable Meta, and is Not-ECT
	m.Size = uint32(min(pkt.Size(), 1<<32-1))
	return m
}

// setCE marks pkt Congestion Experienced in its IP header, as the queue
// decided: an ECT(0) or ECT(1) packet becomes CE, with the IPv4 header
// checksum updated (RFC 1624); CE and Not-ECT packets, and anything that
// is not an IPv4 or IPv6 header, are left alone. It reports whether it
// changed the packet.
func setCE(pkt *stack.PacketBuffer) bool {
	nh := pkt.NetworkHeader().Slice()
	switch {
	case len(nh) >= 20 && nh[0]>>4 == 4 && int(nh[0]&0x0f)*4 <= len(nh):
		if nh[1]&3 == 0 || nh[1]&3 == 3 {
			return false
		}
		// The first 16-bit word of the header changes from old to new;
		// HC' = ~(~HC + ~old + new) in ones' complement arithmetic.
		old := binary.BigEndian.Uint16(nh[0:2])
		nh[1] |= 3
		sum := checksum.Combine(^binary.BigEndian.Uint16(nh[10:12]), ^old)
		sum = checksum.Combine(sum, binary.BigEndian.Uint16(nh[0:2]))
		binary.BigEndian.PutUint16(nh[10:12], ^sum)
		return true
	case len(nh) >= 40 && nh[0]>>4 == 6:
		// The ECN field is the low two bits of the traffic class, which
		// straddles bytes 0 and 1: bits 4 and 5 of byte 1.
		ecn := nh[1] >> 4 & 3
		if ecn == 0 || ecn == 3 {
			return false
		}
		nh[1] |= 3 << 4
		return true
	}
	return false
}
