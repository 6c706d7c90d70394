package iphdr

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"strconv"
)

// Mode selects which key [Hasher.Meta] puts in [aqm.Meta.Hash].
type Mode uint8

const (
	// HashFlow keys on the flow: addresses, protocol and ports (or the
	// fallback described in the package documentation). It is the default.
	HashFlow Mode = iota
	// HashSrcHost keys on the source address alone: a fair queue then
	// shares capacity per sending host (a gateway's upload direction).
	HashSrcHost
	// HashDstHost keys on the destination address alone: per-receiver
	// fairness (a gateway's download direction).
	HashDstHost
	// HashFlowSymmetric keys on the flow like [HashFlow], with the two
	// endpoints put in order first, so that both directions of a
	// connection get one hash (a queue that sees both directions, as
	// CAKE does, then keeps a connection in one queue). See the package
	// documentation for the order. It also makes [Hasher.Flow]'s Hash
	// symmetric.
	HashFlowSymmetric
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case HashFlow:
		return "flow"
	case HashSrcHost:
		return "src-host"
	case HashDstHost:
		return "dst-host"
	case HashFlowSymmetric:
		return "flow-symmetric"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Hasher computes keyed flow and host hashes of IP packets with
// SipHash-1-3 under a 128-bit key. It is a small value type: copy it
// freely. It is never modified after construction, so one Hasher may be
// used by any number of goroutines at once.
//
// Use [NewHasher] in production: its key is secret and random, so nobody
// outside the process can predict which packets collide. Use
// [NewHasherWithKey] only where runs must be reproducible (tests,
// simulations). The zero Hasher hashes with the all-zero key and
// [HashFlow]: deterministic, and as predictable as any fixed key.
type Hasher struct {
	k0, k1 uint64
	mode   Mode
}

// NewHasher returns a [HashFlow] Hasher with a secret key read from
// crypto/rand. This is the one to use on real traffic.
func NewHasher() Hasher {
	var b [16]byte
	rand.Read(b[:]) // never returns an error (Go 1.24+): it crashes the program instead
	return Hasher{k0: binary.LittleEndian.Uint64(b[:8]), k1: binary.LittleEndian.Uint64(b[8:])}
}

// NewHasherWithKey returns a [HashFlow] Hasher with the SipHash key (k0, k1),
// k0 being the key's first eight bytes read little-endian. Equal keys give
// equal hashes in every process, which is what tests and simulations need;
// a key that an outsider can learn or guess lets that outsider craft
// colliding flows (see the package documentation), so do not use a fixed
// key on real traffic.
func NewHasherWithKey(k0, k1 uint64) Hasher { return Hasher{k0: k0, k1: k1} }

// WithMode returns a copy of h that uses mode m in [Hasher.Meta]. The key is
// unchanged, so [Hasher.Flow] gives the same hashes from either copy, but
// for the flow hash of [HashFlowSymmetric], which Flow also uses. An
// unknown mode is treated as [HashFlow].
func (h Hasher) WithMode(m Mode) Hasher { h.mode = m; return h }

// start returns the SipHash state initialised from h's key.
func (h Hasher) start() (v0, v1, v2, v3 uint64) {
	return h.k0 ^ 0x736f6d6570736575, // "somepseu"
		h.k1 ^ 0x646f72616e646f6d, // "dorandom"
		h.k0 ^ 0x6c7967656e657261, // "lygenera"
		h.k1 ^ 0x7465646279746573 // "tedbytes"
}

// round is one SipRound. It takes and returns the four state words as
// plain values, which keeps it within the compiler's inlining budget and
// the state in registers. Each message word m is absorbed as
//
//	v3 ^= m; v0, v1, v2, v3 = round(v0, v1, v2, v3); v0 ^= m
//
// once (the "1" of SipHash-1-3), written out at each use for the same
// reason.
func round(v0, v1, v2, v3 uint64) (uint64, uint64, uint64, uint64) {
	v0, v1, v2, v3 = v0+v1, bits.RotateLeft64(v1, 13), v2+v3, bits.RotateLeft64(v3, 16)
	v1 ^= v0
	v3 ^= v2
	v0 = bits.RotateLeft64(v0, 32)
	v2 += v1
	v0 += v3
	v1 = bits.RotateLeft64(v1, 17) ^ v2
	v3 = bits.RotateLeft64(v3, 21) ^ v0
	return v0, v1, bits.RotateLeft64(v2, 32), v3
}

// final absorbs the last block b of the message (its last len%8 bytes,
// with the length in the top byte), runs the three finalisation rounds
// (the "3") and folds the 64-bit result to 32 bits.
func final(v0, v1, v2, v3, b uint64) uint32 {
	v3 ^= b
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= b
	v2 ^= 0xff
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	r := v0 ^ v1 ^ v2 ^ v3
	return uint32(r) ^ uint32(r>>32)
}

// Key layout. Each key is a short byte string hashed as one SipHash
// message:
//
//	IPv4 flow:  src(4) dst(4) ports(4) proto(1) kind(1)    14 bytes
//	IPv6 flow:  src(16) dst(16) ports(4) proto(1) kind(1)  38 bytes
//	IPv4 host:  addr(4) kind(1)                            5 bytes
//	IPv6 host:  addr(16) kind(1)                           17 bytes
//	invalid:    the empty message
//
// Addresses and ports are in network byte order, as in the packet, so each
// full word is one little-endian load from the packet, and the tail after
// the last full word is a single word that also carries SipHash's length
// byte: no key wastes a block on padding. kind tags what the key is; with
// the length it keeps the families and roles apart.
const (
	kindFlow    = 1
	kindSrcHost = 2
	kindDstHost = 3
	kindIPv6    = 0x04 // the key comes from an IPv6 packet
	kindPorts   = 0x08 // ports holds transport words (flow keys only)
	kindSym     = 0x10 // the endpoints are in order (HashFlowSymmetric)
)

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// flow4 hashes an IPv4 flow key; pkt holds at least 20 bytes and tail is
// the key's last six bytes (ports, proto and kind) as a little-endian word.
func (h Hasher) flow4(pkt []byte, tail uint64) uint32 {
	v0, v1, v2, v3 := h.start()
	m := le64(pkt[12:20])
	v3 ^= m
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= m
	// final, written out: this is the default hash of every IPv4 packet.
	b := tail | 14<<56
	v3 ^= b
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= b
	v2 ^= 0xff
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	r := v0 ^ v1 ^ v2 ^ v3
	return uint32(r) ^ uint32(r>>32)
}

// flow6 hashes an IPv6 flow key; pkt holds at least 40 bytes.
func (h Hasher) flow6(pkt []byte, tail uint64) uint32 {
	_ = pkt[39]
	v0, v1, v2, v3 := h.start()
	m := le64(pkt[8:16])
	v3 ^= m
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= m
	m = le64(pkt[16:24])
	v3 ^= m
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= m
	m = le64(pkt[24:32])
	v3 ^= m
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= m
	m = le64(pkt[32:40])
	v3 ^= m
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= m
	// final, written out: this is the default hash of every IPv6 packet.
	b := tail | 38<<56
	v3 ^= b
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= b
	v2 ^= 0xff
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	r := v0 ^ v1 ^ v2 ^ v3
	return uint32(r) ^ uint32(r>>32)
}

// host4 hashes the IPv4 host key of addr (four packet bytes read
// little-endian).
func (h Hasher) host4(addr uint32, kind uint64) uint32 {
	v0, v1, v2, v3 := h.start()
	return final(v0, v1, v2, v3, uint64(addr)|kind<<32|5<<56)
}

// host6 hashes the IPv6 host key of the address whose halves are a and b.
func (h Hasher) host6(a, b, kind uint64) uint32 {
	v0, v1, v2, v3 := h.start()
	v3 ^= a
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= a
	v3 ^= b
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= b
	return final(v0, v1, v2, v3, kind|17<<56)
}

// invalid is the hash given to bytes that are not a valid IP packet: that
// of the empty message.
func (h Hasher) invalid() uint32 {
	v0, v1, v2, v3 := h.start()
	return final(v0, v1, v2, v3, 0)
}

// final3 is final for three independent states (a, b, c) at once:
// interleaving them lets the processor overlap the three dependency
// chains. The states are scalars, not arrays, so that most of them stay in
// registers. Measured against three hashes in turn, and against two
// interleaved plus one, this was the fastest of the three.
func final3(a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, ba, bb, bc uint64) (uint32, uint32, uint32) {
	a3 ^= ba
	b3 ^= bb
	c3 ^= bc
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	b0, b1, b2, b3 = round(b0, b1, b2, b3)
	c0, c1, c2, c3 = round(c0, c1, c2, c3)
	a0 ^= ba
	b0 ^= bb
	c0 ^= bc
	a2 ^= 0xff
	b2 ^= 0xff
	c2 ^= 0xff
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	b0, b1, b2, b3 = round(b0, b1, b2, b3)
	c0, c1, c2, c3 = round(c0, c1, c2, c3)
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	b0, b1, b2, b3 = round(b0, b1, b2, b3)
	c0, c1, c2, c3 = round(c0, c1, c2, c3)
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	b0, b1, b2, b3 = round(b0, b1, b2, b3)
	c0, c1, c2, c3 = round(c0, c1, c2, c3)
	ra, rb, rc := a0^a1^a2^a3, b0^b1^b2^b3, c0^c1^c2^c3
	return uint32(ra) ^ uint32(ra>>32), uint32(rb) ^ uint32(rb>>32), uint32(rc) ^ uint32(rc>>32)
}

// all4 returns the flow, source-host and destination-host hashes of an
// IPv4 packet (at least 20 bytes) whose flow key ends in tail.
func (h Hasher) all4(pkt []byte, tail uint64) (flow, src, dst uint32) {
	v0, v1, v2, v3 := h.start()
	a0, a1, a2, a3 := v0, v1, v2, v3
	m := le64(pkt[12:20])
	a3 ^= m
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	a0 ^= m
	return final3(a0, a1, a2, a3, v0, v1, v2, v3, v0, v1, v2, v3, tail|14<<56,
		uint64(le32(pkt[12:16]))|kindSrcHost<<32|5<<56,
		uint64(le32(pkt[16:20]))|kindDstHost<<32|5<<56)
}

// all6 is all4 for IPv6 (at least 40 bytes).
func (h Hasher) all6(pkt []byte, tail uint64) (flow, src, dst uint32) {
	_ = pkt[39]
	s0, s1, d0, d1 := le64(pkt[8:16]), le64(pkt[16:24]), le64(pkt[24:32]), le64(pkt[32:40])
	v0, v1, v2, v3 := h.start()
	a0, a1, a2, a3 := v0, v1, v2, v3 // flow
	b0, b1, b2, b3 := v0, v1, v2, v3 // source host
	c0, c1, c2, c3 := v0, v1, v2, v3 // destination host
	a3 ^= s0
	b3 ^= s0
	c3 ^= d0
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	b0, b1, b2, b3 = round(b0, b1, b2, b3)
	c0, c1, c2, c3 = round(c0, c1, c2, c3)
	a0 ^= s0
	b0 ^= s0
	c0 ^= d0
	a3 ^= s1
	b3 ^= s1
	c3 ^= d1
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	b0, b1, b2, b3 = round(b0, b1, b2, b3)
	c0, c1, c2, c3 = round(c0, c1, c2, c3)
	a0 ^= s1
	b0 ^= s1
	c0 ^= d1
	a3 ^= d0
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	a0 ^= d0
	a3 ^= d1
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	a0 ^= d1
	return final3(a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
		tail|38<<56, (kindSrcHost|kindIPv6)|17<<56, (kindDstHost|kindIPv6)|17<<56)
}

// Symmetric flow keys. The key is the flow key with kindSym set and, when
// the destination endpoint is lower than the source one, the addresses
// exchanged, and for protocols with a port pair the ports too. Endpoints
// compare by address, then (port protocols only) by port, both read as
// big-endian numbers, which is the order of their bytes.

// hasPortPair reports whether a flow key's transport word is a source and
// destination port pair, the two halves of which belong to the endpoints.
func hasPortPair(tail uint64) bool {
	if tail&(kindPorts<<40) == 0 {
		return false
	}
	switch uint8(tail >> 32) {
	case protoTCP, protoUDP, protoDCCP, protoSCTP, protoUDPLite:
		return true
	}
	return false
}

// symTail returns tail with kindSym set and, if swap, the port pair (if
// the key has one) exchanged; and whether the ports decide the order
// when the addresses are equal, the destination port being the lower.
func symTail(tail uint64) (sym uint64, portsLower bool) {
	sym = tail | kindSym<<40
	if !hasPortPair(tail) {
		return sym, false
	}
	p := uint32(tail)
	// The transport word holds the source port's two bytes, then the
	// destination port's, read little-endian: byte-swap each half to
	// compare them as the big-endian numbers they are.
	sp, dp := bits.ReverseBytes16(uint16(p)), bits.ReverseBytes16(uint16(p>>16))
	return sym, dp < sp
}

// swapPorts exchanges the port pair of a flow key's transport word, if it
// has one.
func swapPorts(tail uint64) uint64 {
	if !hasPortPair(tail) {
		return tail
	}
	p := uint32(tail)
	return tail&^0xffffffff | uint64(p>>16|p<<16)
}

// symKey4 returns the first word and the tail of an IPv4 packet's (at
// least 20 bytes) symmetric flow key, given its flow key's tail.
func symKey4(pkt []byte, tail uint64) (m, sym uint64) {
	s, d := binary.BigEndian.Uint32(pkt[12:16]), binary.BigEndian.Uint32(pkt[16:20])
	sym, portsLower := symTail(tail)
	m = le64(pkt[12:20])
	if d < s || d == s && portsLower {
		m = m>>32 | m<<32
		sym = swapPorts(sym)
	}
	return m, sym
}

// symKey6 returns the four address words (in key order) and the tail of
// an IPv6 packet's (at least 40 bytes) symmetric flow key.
func symKey6(pkt []byte, tail uint64) (w0, w1, w2, w3, sym uint64) {
	_ = pkt[39]
	s0, s1 := binary.BigEndian.Uint64(pkt[8:16]), binary.BigEndian.Uint64(pkt[16:24])
	d0, d1 := binary.BigEndian.Uint64(pkt[24:32]), binary.BigEndian.Uint64(pkt[32:40])
	sym, portsLower := symTail(tail)
	w0, w1, w2, w3 = le64(pkt[8:16]), le64(pkt[16:24]), le64(pkt[24:32]), le64(pkt[32:40])
	if d0 < s0 || d0 == s0 && (d1 < s1 || d1 == s1 && portsLower) {
		w0, w1, w2, w3 = w2, w3, w0, w1
		sym = swapPorts(sym)
	}
	return w0, w1, w2, w3, sym
}

// flowSym4 is the symmetric flow hash of an IPv4 packet (at least 20
// bytes) whose flow key ends in tail.
func (h Hasher) flowSym4(pkt []byte, tail uint64) uint32 {
	m, tail := symKey4(pkt, tail)
	v0, v1, v2, v3 := h.start()
	v3 ^= m
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= m
	return final(v0, v1, v2, v3, tail|14<<56)
}

// flowSym6 is flowSym4 for IPv6 (at least 40 bytes).
func (h Hasher) flowSym6(pkt []byte, tail uint64) uint32 {
	w0, w1, w2, w3, tail := symKey6(pkt, tail)
	v0, v1, v2, v3 := h.start()
	for _, m := range [4]uint64{w0, w1, w2, w3} {
		v3 ^= m
		v0, v1, v2, v3 = round(v0, v1, v2, v3)
		v0 ^= m
	}
	return final(v0, v1, v2, v3, tail|38<<56)
}

// allSym4 is all4 with the symmetric flow key.
func (h Hasher) allSym4(pkt []byte, tail uint64) (flow, src, dst uint32) {
	m, tail := symKey4(pkt, tail)
	v0, v1, v2, v3 := h.start()
	a0, a1, a2, a3 := v0, v1, v2, v3
	a3 ^= m
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	a0 ^= m
	return final3(a0, a1, a2, a3, v0, v1, v2, v3, v0, v1, v2, v3, tail|14<<56,
		uint64(le32(pkt[12:16]))|kindSrcHost<<32|5<<56,
		uint64(le32(pkt[16:20]))|kindDstHost<<32|5<<56)
}

// allSym6 is all6 with the symmetric flow key.
func (h Hasher) allSym6(pkt []byte, tail uint64) (flow, src, dst uint32) {
	w0, w1, w2, w3, tail := symKey6(pkt, tail)
	s0, s1, d0, d1 := le64(pkt[8:16]), le64(pkt[16:24]), le64(pkt[24:32]), le64(pkt[32:40])
	v0, v1, v2, v3 := h.start()
	a0, a1, a2, a3 := v0, v1, v2, v3 // flow
	b0, b1, b2, b3 := v0, v1, v2, v3 // source host
	c0, c1, c2, c3 := v0, v1, v2, v3 // destination host
	a3 ^= w0
	b3 ^= s0
	c3 ^= d0
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	b0, b1, b2, b3 = round(b0, b1, b2, b3)
	c0, c1, c2, c3 = round(c0, c1, c2, c3)
	a0 ^= w0
	b0 ^= s0
	c0 ^= d0
	a3 ^= w1
	b3 ^= s1
	c3 ^= d1
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	b0, b1, b2, b3 = round(b0, b1, b2, b3)
	c0, c1, c2, c3 = round(c0, c1, c2, c3)
	a0 ^= w1
	b0 ^= s1
	c0 ^= d1
	a3 ^= w2
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	a0 ^= w2
	a3 ^= w3
	a0, a1, a2, a3 = round(a0, a1, a2, a3)
	a0 ^= w3
	return final3(a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
		tail|38<<56, (kindSrcHost|kindIPv6)|17<<56, (kindDstHost|kindIPv6)|17<<56)
}
