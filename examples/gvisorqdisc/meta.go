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

// need says which parts of a packet's Meta its queue reads.
type need uint8

const (
	needECN  need = 1 << iota // the queue marks (queues.Spec.Marks)
	needHash                  // the queue keeps flows apart
)

// flowQueues are the registry's queues that keep flows apart by
// aqm.Meta.Hash; the others never read it, so it is not computed for them.
var flowQueues = map[string]bool{"fq-codel": true, "fq-cobalt": true, "fq-pie": true, "sfq": true, "cake": true}

// meta returns the queue's view of pkt: its size (pkt.Size(), every byte
// the link will carry) and, as far as the queue needs them, its ECN
// codepoint and the keyed flow hash of its addresses, protocol and ports.
// It reads the headers netstack already built, copying at most
// maxHeaderBytes of them into a buffer on the stack and never touching
// the payload.
//
// The copy ends within or after the transport header, so its IP length
// field is set to what was copied before the hasher reads it: the length
// is no part of the flow key, and the packet itself is not changed.
func meta(h *iphdr.Hasher, pkt *stack.PacketBuffer, n need) aqm.Meta {
	size := uint32(min(pkt.Size(), 1<<32-1))
	switch n {
	case 0:
		return aqm.Meta{Size: size}
	case needECN:
		return aqm.Meta{Size: size, ECN: ecnOf(pkt.NetworkHeader().Slice())}
	}
	var buf [maxHeaderBytes]byte
	k := copyHeaders(buf[:], pkt)
	b := buf[:k]
	switch {
	case k >= 20 && b[0]>>4 == 4:
		binary.BigEndian.PutUint16(b[2:4], uint16(k))
	case k >= 40 && b[0]>>4 == 6:
		binary.BigEndian.PutUint16(b[4:6], uint16(k-40))
	}
	m, _ := h.Meta(b) // a bad header still gets a usable Meta, and is Not-ECT
	m.Size = size
	return m
}

// ecnOf returns the ECN codepoint of the IP header nh, or Not-ECT if nh is
// not one.
func ecnOf(nh []byte) aqm.ECN {
	switch {
	case len(nh) >= 20 && nh[0]>>4 == 4:
		return aqm.ECN(nh[1] & 3)
	case len(nh) >= 40 && nh[0]>>4 == 6:
		return aqm.ECN(nh[1]>>4) & aqm.ECNMask
	}
	return aqm.NotECT
}

// copyHeaders copies pkt's network header and the start of its transport
// header into buf and returns how many bytes it copied.
//
// The headers a stack pushes onto an outgoing packet lie side by side at
// the start of its first buffer view, link header first; when they all
// fit there, they are read in one place. Otherwise (headers spread over
// views, as in some forwarded packets) each is read through its own
// header view.
func copyHeaders(buf []byte, pkt *stack.PacketBuffer) int {
	vl, off := pkt.AsViewList()
	hs := pkt.HeaderSize()
	if first := vl.Front(); first != nil && hs > 0 && first.Size()-off >= hs {
		link := len(pkt.LinkHeader().Slice()) // no pull-up when there is none
		return copy(buf, first.AsSlice()[off+link:off+hs])
	}
	n := copy(buf, pkt.NetworkHeader().Slice())
	th := pkt.TransportHeader().Slice()
	return n + copy(buf[n:], th[:min(len(th), transportKeyBytes)])
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
