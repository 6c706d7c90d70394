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
	// linkless says that the lower endpoint adds no link header (its
	// MaxHeaderLength is 0), so no packet has one: headers need not ask.
	linkless
)

// flowQueues are the registry's queues that keep flows apart by
// aqm.Meta.Hash; the others never read it, so it is not computed for them.
var flowQueues = map[string]bool{"fq-codel": true, "fq-cobalt": true, "fq-pie": true, "sfq": true, "cake": true}

// meta returns the queue's view of pkt: its size (pkt.Size(), every byte
// the link will carry) and, as far as the queue needs them, its ECN
// codepoint and a flow hash. It reads the headers netstack already built,
// in place where they lie side by side, and never touches the payload.
//
// The flow hash is netstack's own endpoint hash (PacketBuffer.Hash) when
// the packet carries one: a TCP endpoint sets it on every packet it sends,
// to a random value drawn when the endpoint is created, so it tells
// connections apart as the 5-tuple does and no sender can choose it; the
// queue mixes it with its own secret key as it mixes every hash. Other
// packets (UDP, ICMP, forwarded ones) get the keyed SipHash of their
// addresses, protocol and ports from package iphdr, read from a copy of
// at most maxHeaderBytes of the headers whose IP length field is set to
// what was copied: the length is no part of the flow key, and the packet
// itself is not changed.
func meta(h *iphdr.Hasher, pkt *stack.PacketBuffer, n need) aqm.Meta {
	size := uint32(min(uint64(pkt.Size()), 1<<32-1))
	n, nolink := n&^linkless, n&linkless != 0
	if n == 0 {
		return aqm.Meta{Size: size}
	}
	hb, inPlace := headers(pkt, nolink)
	if !inPlace {
		return metaSlow(h, pkt, n, size)
	}
	if n == needECN || pkt.Hash != 0 {
		m := aqm.Meta{Size: size, ECN: ecnOf(hb)}
		if n&needHash != 0 {
			m.Hash = pkt.Hash
		}
		return m
	}
	if len(hb) >= 20 && hb[0] == 0x45 {
		// IPv4 without options, the common case: its flow key lies in
		// the first 20+transportKeyBytes bytes.
		var buf [20 + transportKeyBytes]byte
		return hashCopy(h, buf[:], hb, size)
	}
	var buf [maxHeaderBytes]byte
	return hashCopy(h, buf[:], hb, size)
}

// metaSlow is meta for a packet whose headers do not lie side by side in
// its first view: each header is read through its own header view.
func metaSlow(h *iphdr.Hasher, pkt *stack.PacketBuffer, n need, size uint32) aqm.Meta {
	nh := pkt.NetworkHeader().Slice()
	if n == needECN || pkt.Hash != 0 {
		m := aqm.Meta{Size: size, ECN: ecnOf(nh)}
		if n&needHash != 0 {
			m.Hash = pkt.Hash
		}
		return m
	}
	var buf [maxHeaderBytes]byte
	k := copy(buf[:], nh)
	th := pkt.TransportHeader().Slice()
	k += copy(buf[k:], th[:min(len(th), transportKeyBytes)])
	return hashCopy(h, buf[:k], buf[:k], size)
}

// hashCopy copies as much of the headers hb as fits into buf, sets the
// copy's IP length field to its length, and returns the Meta that h
// computes from it, with the given size. buf and hb may be the same.
func hashCopy(h *iphdr.Hasher, buf, hb []byte, size uint32) aqm.Meta {
	k := copy(buf, hb)
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

// headers returns pkt's network and transport headers in place, and true,
// when they lie side by side at the start of its first buffer view, as
// the headers a stack pushes onto an outgoing packet do (link header
// first). Otherwise (headers spread over views, as in some forwarded
// packets) it returns false. With nolink the link header is known to be
// empty, which saves asking for it: netstack's header accessor costs
// some 15 ns even for an empty header.
func headers(pkt *stack.PacketBuffer, nolink bool) ([]byte, bool) {
	vl, off := pkt.AsViewList()
	hs := pkt.HeaderSize()
	if first := vl.Front(); first != nil && hs > 0 && first.Size()-off >= hs {
		link := 0
		if !nolink {
			link = len(pkt.LinkHeader().Slice()) // no pull-up when there is none
		}
		return first.AsSlice()[off+link : off+hs], true
	}
	return nil, false
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
