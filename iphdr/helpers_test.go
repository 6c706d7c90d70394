package iphdr

import (
	"encoding/binary"
	"net/netip"
)

// Packet builders for the tests: plain code that lays headers out field by
// field, so that tests state packets the way a reader of RFC 791 and 8200
// would.

var (
	srcA4 = netip.MustParseAddr("192.0.2.1")
	dstB4 = netip.MustParseAddr("198.51.100.7")
	srcA6 = netip.MustParseAddr("2001:db8::1")
	dstB6 = netip.MustParseAddr("2001:db8:ffff::42")
)

// sum16 is the RFC 1071 ones'-complement sum of b (even length), folded.
func sum16(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// fixChecksum recomputes the IPv4 header checksum in full.
func fixChecksum(hdr []byte) {
	hdr[10], hdr[11] = 0, 0
	binary.BigEndian.PutUint16(hdr[10:], ^sum16(hdr))
}

// v4 builds an IPv4 packet: options (a multiple of 4 bytes) and payload
// after the 20-byte fixed header; fragField is the flags+offset word.
func v4(tos, proto byte, src, dst netip.Addr, fragField uint16, options, payload []byte) []byte {
	hlen := 20 + len(options)
	p := make([]byte, hlen+len(payload))
	p[0] = 0x40 | byte(hlen/4)
	p[1] = tos
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	binary.BigEndian.PutUint16(p[4:], 0x1234) // ID
	binary.BigEndian.PutUint16(p[6:], fragField)
	p[8] = 64
	p[9] = proto
	s, d := src.As4(), dst.As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	copy(p[20:], options)
	copy(p[hlen:], payload)
	fixChecksum(p[:hlen])
	return p
}

// v6 builds an IPv6 packet whose payload (extension headers included)
// follows the fixed header.
func v6(tc byte, label uint32, nh byte, src, dst netip.Addr, payload []byte) []byte {
	p := make([]byte, 40+len(payload))
	binary.BigEndian.PutUint32(p[0:], 6<<28|uint32(tc)<<20|label&0xfffff)
	binary.BigEndian.PutUint16(p[4:], uint16(len(payload)))
	p[6] = nh
	p[7] = 64
	s, d := src.As16(), dst.As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	copy(p[40:], payload)
	return p
}

// ext builds an 8-byte-unit extension header (Hop-by-Hop, Routing,
// Destination Options) of units×8 bytes in front of rest.
func ext(nh byte, units int, rest []byte) []byte {
	h := make([]byte, units*8)
	h[0] = nh
	h[1] = byte(units - 1)
	for i := 2; i < len(h); i++ {
		h[i] = 0x01 // PadN-ish filler; the parser never reads it
	}
	return append(h, rest...)
}

// frag6 builds an IPv6 Fragment header.
func frag6(nh byte, offset8 uint16, more bool, id uint32, rest []byte) []byte {
	h := make([]byte, 8)
	h[0] = nh
	w := offset8 << 3
	if more {
		w |= 1
	}
	binary.BigEndian.PutUint16(h[2:], w)
	binary.BigEndian.PutUint32(h[4:], id)
	return append(h, rest...)
}

// ah builds an Authentication Header with a 12-byte ICV (24 bytes).
func ah(nh byte, spi uint32, rest []byte) []byte {
	h := make([]byte, 24)
	h[0] = nh
	h[1] = byte(len(h)/4 - 2)
	binary.BigEndian.PutUint32(h[4:], spi)
	binary.BigEndian.PutUint32(h[8:], 1) // sequence number
	return append(h, rest...)
}

// tcp builds a 20-byte TCP header followed by data.
func tcp(sport, dport uint16, data []byte) []byte {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint32(h[4:], 1000) // seq
	h[12] = 5 << 4
	h[13] = 0x18 // PSH, ACK
	binary.BigEndian.PutUint16(h[14:], 65535)
	return append(h, data...)
}

// udp builds an 8-byte UDP (or UDP-Lite) header followed by data.
func udp(sport, dport uint16, data []byte) []byte {
	h := make([]byte, 8)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(data)))
	return append(h, data...)
}

// icmpEcho builds an ICMP or ICMPv6 message of the given type with an
// identifier and sequence number.
func icmpEcho(typ byte, id, seq uint16, data []byte) []byte {
	h := make([]byte, 8)
	h[0] = typ
	binary.BigEndian.PutUint16(h[4:], id)
	binary.BigEndian.PutUint16(h[6:], seq)
	return append(h, data...)
}

// gre builds a GRE header: flags word (C, K bits; version), optional
// checksum word, key.
func gre(flags uint16, key uint32, rest []byte) []byte {
	h := make([]byte, 4)
	binary.BigEndian.PutUint16(h[0:], flags)
	binary.BigEndian.PutUint16(h[2:], 0x0800)
	if flags&0x8000 != 0 {
		h = append(h, 0, 0, 0, 0)
	}
	if flags&0x2000 != 0 {
		h = binary.BigEndian.AppendUint32(h, key)
	}
	return append(h, rest...)
}

func data(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}
