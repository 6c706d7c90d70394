package iphdr

import (
	"encoding/binary"

	"github.com/aqmkit/aqmkit/aqm"
)

// IP protocol numbers (IANA) that the parser treats specially.
const (
	protoHopOpts  = 0
	protoICMP     = 1
	protoTCP      = 6
	protoUDP      = 17
	protoDCCP     = 33
	protoRouting  = 43
	protoFragment = 44
	protoGRE      = 47
	protoESP      = 50
	protoAH       = 51
	protoICMPv6   = 58
	protoDstOpts  = 60
	protoSCTP     = 132
	protoUDPLite  = 136
)

// maxExtHeaders is the most IPv6 extension headers (and IPv4 AH headers)
// the parser walks before it stops and keys the packet on its addresses and
// the last Next Header value it read. Eight covers RFC 8200's recommended
// order, in which Destination Options may appear twice.
const maxExtHeaders = 8

// Flow is what one parse of a packet yields: its three keyed hashes and
// the header fields that are free to read on the way.
type Flow struct {
	// Hash is the keyed hash of the flow key: addresses, protocol and
	// transport words (ports, ICMP echo identifier, SPI or GRE key), or
	// addresses and protocol alone for fragments, unknown protocols and
	// truncated headers. A Hasher in [HashFlowSymmetric] mode gives the
	// symmetric key's hash, the same for both directions.
	Hash uint32
	// SrcHostHash is the keyed hash of the source address alone.
	SrcHostHash uint32
	// DstHostHash is the keyed hash of the destination address alone.
	DstHostHash uint32
	// L4Offset is the offset in the packet of the header whose protocol is
	// Protocol (the transport header, for TCP and UDP), or 0 if the parser
	// did not reach it: a fragment, a truncated extension header, or more
	// than eight of them. The header found there may itself be
	// truncated; it ends at the IP packet's end (total or payload length),
	// not at len(pkt).
	L4Offset uint16
	// Version is 4 or 6.
	Version uint8
	// Protocol is the IPv4 protocol, or the last IPv6 Next Header value
	// read: the transport protocol once extension headers are skipped.
	Protocol uint8
	// DSCP is the Differentiated Services codepoint (RFC 2474), 0–63.
	DSCP uint8
	// ECN is the packet's ECN codepoint.
	ECN aqm.ECN
	// Fragment reports an IPv4 fragment (MF set or a non-zero offset) or an
	// IPv6 packet with a Fragment header.
	Fragment bool
	// Ports reports that the flow key holds transport words, that is, a
	// full 5-tuple (or its ICMP, ESP, AH or GRE equivalent).
	Ports bool
}

// tuple is a parse's result, values read in place. It has four fields so
// that the compiler passes it in registers.
type tuple struct {
	tail  uint64 // the flow key's last word: ports | proto<<32 | kind<<40, without the role bits
	l4off uint16
	ds    uint8 // the DS byte (IPv4 TOS, IPv6 traffic class)
	flags uint8 // tupleV6, tupleFrag
}

const (
	tupleV6   = 1
	tupleFrag = 2
)

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }

// check validates the fixed IP header and returns the packet's end (the
// IPv4 total length, or 40 plus the IPv6 payload length) and the IPv4
// header length. The order of the checks fixes which error a packet gets.
func check(pkt []byte) (v6 bool, hlen, end int, err error) {
	if len(pkt) == 0 {
		return false, 0, 0, ErrTruncated
	}
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < 20 {
			return false, 0, 0, ErrTruncated
		}
		hlen = int(pkt[0]&0x0f) * 4
		if hlen < 20 {
			return false, 0, 0, ErrNotIP
		}
		end = int(be16(pkt[2:4]))
		if end < hlen {
			return false, 0, 0, ErrNotIP
		}
		if end > len(pkt) {
			return false, 0, 0, ErrTruncated
		}
		return false, hlen, end, nil
	case 6:
		if len(pkt) < 40 {
			return true, 0, 0, ErrTruncated
		}
		plen := int(be16(pkt[4:6]))
		if plen == 0 { // Jumbo Payload (RFC 2675) or an empty payload
			return true, 40, len(pkt), nil
		}
		if plen > len(pkt)-40 {
			return true, 0, 0, ErrTruncated
		}
		return true, 40, 40 + plen, nil
	}
	return false, 0, 0, ErrNotIP
}

// parse reads the flow key of a packet. It never reads past the packet's
// end nor walks more than maxExtHeaders headers.
func parse(pkt []byte) (t tuple, err error) {
	if len(pkt) >= 20 && pkt[0] == 0x45 {
		// The common case, IPv4 without options, inline: the general
		// path below gives the same result.
		end := int(be16(pkt[2:4]))
		if end < 20 || end > len(pkt) {
			return t, check4err(pkt)
		}
		t.ds = pkt[1]
		nh := pkt[9]
		if be16(pkt[6:8])&0x3fff != 0 {
			t.flags = tupleFrag
			t.tail = uint64(nh) << 32
			return t, nil
		}
		if nh != protoAH {
			t.l4off = 20
			t.tail = uint64(nh) << 32
			if (nh == protoTCP || nh == protoUDP) && end >= 24 {
				t.tail |= uint64(le32(pkt[20:24])) | kindPorts<<40
			} else if p, ok := ports(pkt[:end], nh, 20); ok {
				t.tail |= uint64(p) | kindPorts<<40
			}
			return t, nil
		}
	}
	if len(pkt) >= 40 && pkt[0]>>4 == 6 {
		// IPv6 without extension headers, inline likewise.
		end := 40 + int(be16(pkt[4:6]))
		nh := pkt[6]
		if end > 40 && end <= len(pkt) && !isExt6(nh) {
			t.flags = tupleV6
			t.ds = pkt[0]<<4 | pkt[1]>>4
			t.l4off = 40
			t.tail = uint64(nh) << 32
			if (nh == protoTCP || nh == protoUDP) && end >= 44 {
				t.tail |= uint64(le32(pkt[40:44])) | kindPorts<<40
			} else if p, ok := ports(pkt[:end], nh, 40); ok {
				t.tail |= uint64(p) | kindPorts<<40
			}
			return t, nil
		}
	}
	return parseSlow(pkt)
}

// isExt6 reports whether the parser walks IPv6 Next Header value nh: the
// extension headers Hop-by-Hop, Routing, Fragment and Destination Options,
// and AH.
func isExt6(nh uint8) bool {
	return nh == protoHopOpts || nh == protoRouting || nh == protoFragment || nh == protoDstOpts || nh == protoAH
}

// check4err is the error check gives an IPv4 packet that failed the fast
// path's test.
func check4err(pkt []byte) error {
	_, _, _, err := check(pkt)
	return err
}

// parseSlow is parse for every packet.
func parseSlow(pkt []byte) (t tuple, err error) {
	v6, off, end, err := check(pkt)
	if err != nil {
		return t, err
	}
	b := pkt[:end]
	var nh uint8
	if v6 {
		t.flags = tupleV6
		t.ds = pkt[0]<<4 | pkt[1]>>4
		nh = pkt[6]
	} else {
		t.ds = pkt[1]
		nh = pkt[9]
		if be16(pkt[6:8])&0x3fff != 0 {
			t.flags = tupleFrag
			t.tail = uint64(nh) << 32
			return t, nil
		}
	}
	var ah uint32 // the SPI of the last AH header walked
	seenAH := false
	for n := 0; ; n++ {
		var size int
		switch nh {
		case protoHopOpts, protoRouting, protoDstOpts:
			if !v6 {
				goto transport
			}
			if n == maxExtHeaders || off+2 > end {
				goto stop
			}
			size = (int(b[off+1]) + 1) * 8
		case protoAH:
			if n == maxExtHeaders || off+8 > end {
				goto stop
			}
			ah, seenAH = le32(b[off+4:off+8]), true
			size = (int(b[off+1]) + 2) * 4
		case protoFragment:
			if !v6 {
				goto transport
			}
			if n == maxExtHeaders || off+8 > end {
				goto stop
			}
			t.flags |= tupleFrag
			t.tail = uint64(b[off]) << 32
			return t, nil
		default:
			goto transport
		}
		if off+size > end {
			goto stop
		}
		nh, off = b[off], off+size
	}
	// A header was truncated or the bound was hit: no transport header.
stop:
	t.tail = uint64(nh) << 32
	if seenAH {
		t.tail |= uint64(ah) | kindPorts<<40
	}
	return t, nil
transport:
	t.l4off = uint16(off)
	t.tail = uint64(nh) << 32
	if (nh == protoTCP || nh == protoUDP) && off+4 <= end {
		t.tail |= uint64(le32(b[off:off+4])) | kindPorts<<40
	} else if p, ok := ports(b, nh, off); ok {
		t.tail |= uint64(p) | kindPorts<<40
	} else if seenAH {
		t.tail |= uint64(ah) | kindPorts<<40
	}
	return t, nil
}

// ports returns the transport words of the header at b[off:] (b ends at the
// packet's end) as four packet bytes read little-endian, and whether the
// protocol has them and they are all there.
func ports(b []byte, proto uint8, off int) (uint32, bool) {
	switch proto {
	case protoTCP, protoUDP, protoDCCP, protoSCTP, protoUDPLite, protoESP:
		// source and destination port; ESP: the SPI
		if off+4 <= len(b) {
			return le32(b[off : off+4]), true
		}
	case protoICMP, protoICMPv6:
		// the echo (and ICMPv4 timestamp) identifier: bytes 4–5 of the
		// 8-byte header, stored as id(2) 0(2)
		if off+8 <= len(b) && isEcho(proto, b[off]) {
			return uint32(b[off+4]) | uint32(b[off+5])<<8, true
		}
	case protoGRE:
		return greKey(b, off)
	}
	return 0, false
}

func isEcho(proto, typ uint8) bool {
	if proto == protoICMP {
		return typ == 0 || typ == 8 || typ == 13 || typ == 14
	}
	return typ == 128 || typ == 129
}

// greKey returns the key of a GRE header (RFC 2890) if its K bit is set:
// all four bytes for version 0, the call ID alone for version 1 (PPTP,
// RFC 2637), whose other half is a per-packet payload length. Headers with
// the routing bit, or of other versions, have none.
func greKey(b []byte, off int) (uint32, bool) {
	if off+4 > len(b) {
		return 0, false
	}
	flags := be16(b[off : off+2])
	const c, r, k = 0x8000, 0x4000, 0x2000
	if flags&k == 0 || flags&r != 0 {
		return 0, false
	}
	at := off + 4
	if flags&c != 0 {
		at += 4 // checksum and reserved word
	}
	if at+4 > len(b) {
		return 0, false
	}
	switch flags & 7 {
	case 0:
		return le32(b[at : at+4]), true
	case 1:
		return le32(b[at:at+4]) & 0xffff0000, true
	}
	return 0, false
}

// Flow parses pkt, which starts at the IP header, and returns its flow and
// host hashes and header fields. It reads the packet and never modifies
// it. On an error ([ErrTruncated], [ErrNotIP]) the Flow is the zero Flow.
func (h Hasher) Flow(pkt []byte) (Flow, error) {
	if h.mode == HashFlowSymmetric {
		return h.flowSymmetric(pkt)
	}
	t, err := parse(pkt)
	if err != nil {
		return Flow{}, err
	}
	f := Flow{
		Protocol: uint8(t.tail >> 32),
		L4Offset: t.l4off,
		DSCP:     t.ds >> 2,
		ECN:      aqm.ECN(t.ds & 3),
		Fragment: t.flags&tupleFrag != 0,
		Ports:    t.tail&(kindPorts<<40) != 0,
	}
	if t.flags&tupleV6 != 0 {
		f.Version = 6
		f.Hash, f.SrcHostHash, f.DstHostHash = h.all6(pkt, t.tail|(kindFlow|kindIPv6)<<40)
	} else {
		f.Version = 4
		f.Hash, f.SrcHostHash, f.DstHostHash = h.all4(pkt, t.tail|kindFlow<<40)
	}
	return f, nil
}

// flowSymmetric is Flow in HashFlowSymmetric mode, apart so that the
// default mode's code is as it was.
func (h Hasher) flowSymmetric(pkt []byte) (Flow, error) {
	t, err := parse(pkt)
	if err != nil {
		return Flow{}, err
	}
	f := Flow{
		Protocol: uint8(t.tail >> 32),
		L4Offset: t.l4off,
		DSCP:     t.ds >> 2,
		ECN:      aqm.ECN(t.ds & 3),
		Fragment: t.flags&tupleFrag != 0,
		Ports:    t.tail&(kindPorts<<40) != 0,
	}
	if t.flags&tupleV6 != 0 {
		f.Version = 6
		f.Hash, f.SrcHostHash, f.DstHostHash = h.allSym6(pkt, t.tail|(kindFlow|kindIPv6)<<40)
	} else {
		f.Version = 4
		f.Hash, f.SrcHostHash, f.DstHostHash = h.allSym4(pkt, t.tail|kindFlow<<40)
	}
	return f, nil
}

// Meta parses pkt, which starts at the IP header, into the [aqm.Meta] a
// queue needs:
//
//   - Size is len(pkt): the bytes of the IP packet as given, link-layer
//     padding included if the caller left it on. Add link or tunnel
//     overhead yourself if a shaper should count it.
//   - Hash is the keyed hash that h's [Mode] selects.
//   - ECN is the codepoint in the header.
//
// Meta never fails to give a usable value: on an error ([ErrTruncated],
// [ErrNotIP]) Size is still len(pkt), Hash is one fixed value per key
// shared by all invalid packets, and ECN is [aqm.NotECT], so such a packet
// is dropped, never marked.
func (h Hasher) Meta(pkt []byte) (aqm.Meta, error) {
	// The most common packets, unfragmented IPv4 TCP or UDP without
	// options and IPv6 TCP or UDP without extension headers, skip the
	// general parse in the default mode; metaSlow gives the same result.
	if len(pkt) >= 24 && pkt[0] == 0x45 && (pkt[9] == protoTCP || pkt[9] == protoUDP) && h.mode == HashFlow {
		if end := int(be16(pkt[2:4])); end >= 24 && end <= len(pkt) && be16(pkt[6:8])&0x3fff == 0 {
			tail := uint64(le32(pkt[20:24])) | uint64(pkt[9])<<32 | (kindFlow|kindPorts)<<40
			return aqm.Meta{Size: size(pkt), Hash: h.flow4(pkt, tail), ECN: aqm.ECN(pkt[1] & 3)}, nil
		}
	}
	if len(pkt) >= 44 && pkt[0]>>4 == 6 && (pkt[6] == protoTCP || pkt[6] == protoUDP) && h.mode == HashFlow {
		// Likewise IPv6 TCP or UDP without extension headers.
		if end := 40 + int(be16(pkt[4:6])); end >= 44 && end <= len(pkt) {
			tail := uint64(le32(pkt[40:44])) | uint64(pkt[6])<<32 | (kindFlow|kindIPv6|kindPorts)<<40
			return aqm.Meta{Size: size(pkt), Hash: h.flow6(pkt, tail), ECN: aqm.ECN(pkt[1]>>4) & aqm.ECNMask}, nil
		}
	}
	return h.metaSlow(pkt)
}

// metaSlow is Meta for every packet.
func (h Hasher) metaSlow(pkt []byte) (aqm.Meta, error) {
	t, err := parse(pkt)
	m := aqm.Meta{Size: size(pkt)}
	if err != nil {
		m.Hash = h.invalid()
		return m, err
	}
	m.ECN = aqm.ECN(t.ds & 3)
	v6 := t.flags&tupleV6 != 0
	switch {
	case h.mode == HashFlowSymmetric:
		m.Hash = h.flowSym(pkt, t)
	case h.mode > HashDstHost || h.mode == HashFlow:
		if v6 {
			m.Hash = h.flow6(pkt, t.tail|(kindFlow|kindIPv6)<<40)
		} else {
			m.Hash = h.flow4(pkt, t.tail|kindFlow<<40)
		}
	case h.mode == HashSrcHost && v6:
		m.Hash = h.host6(le64(pkt[8:16]), le64(pkt[16:24]), kindSrcHost|kindIPv6)
	case h.mode == HashSrcHost:
		m.Hash = h.host4(le32(pkt[12:16]), kindSrcHost)
	case v6:
		m.Hash = h.host6(le64(pkt[24:32]), le64(pkt[32:40]), kindDstHost|kindIPv6)
	default:
		m.Hash = h.host4(le32(pkt[16:20]), kindDstHost)
	}
	return m, nil
}

// flowSym is the symmetric flow hash of a parsed packet.
func (h Hasher) flowSym(pkt []byte, t tuple) uint32 {
	if t.flags&tupleV6 != 0 {
		return h.flowSym6(pkt, t.tail|(kindFlow|kindIPv6)<<40)
	}
	return h.flowSym4(pkt, t.tail|kindFlow<<40)
}

// size is len(pkt), saturated at the largest uint32.
func size(pkt []byte) uint32 {
	if uint64(len(pkt)) > 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(len(pkt))
}
