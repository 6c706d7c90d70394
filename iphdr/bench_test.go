package iphdr

import (
	"encoding/binary"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// benchPackets are the packets of the benchmarks: a 1500-byte TCP segment
// over IPv4 and IPv6, and IPv6 UDP behind Hop-by-Hop and Destination
// Options headers. All carry ECT(0), so SetCE does the full update.
func benchPackets() []struct {
	name string
	pkt  []byte
} {
	return []struct {
		name string
		pkt  []byte
	}{
		{"ipv4-tcp", v4(0x02, 6, srcA4, dstB4, 0x4000, nil, tcp(40000, 443, data(1460)))},
		{"ipv6-tcp", v6(0x02, 0, 6, srcA6, dstB6, tcp(40000, 443, data(1440)))},
		{"ipv6-ext", v6(0x02, 0, 0, srcA6, dstB6, ext(60, 1, ext(17, 2, udp(5353, 53, data(1400)))))},
	}
}

var (
	sinkMeta aqm.Meta
	sinkFlow Flow
	sinkU32  uint32
	sinkErr  error
)

// The whole per-packet cost at a queue: parse and hash into Meta on
// enqueue, then SetCE at dequeue. The ECN byte and the IPv4 checksum word are
// restored each time (the checksum with one 16-bit store, as SetCE writes
// it, so that its next 16-bit load is forwarded from the store; and only
// in IPv4, since in IPv6 those bytes are part of the source address, whose
// 8-byte load a 2-byte store would stall), so every SetCE does the full update.
func BenchmarkParseHashSetCE(b *testing.B) {
	h := NewHasherWithKey(1, 2)
	for _, bp := range benchPackets() {
		b.Run(bp.name, func(b *testing.B) {
			p := bp.pkt
			b1, c, v4 := p[1], binary.BigEndian.Uint16(p[10:12]), p[0]>>4 == 4
			b.ReportAllocs()
			for b.Loop() {
				m, _ := h.Meta(p)
				sinkMeta = m
				sinkErr = SetCE(p)
				p[1] = b1
				if v4 {
					binary.BigEndian.PutUint16(p[10:12], c)
				}
			}
		})
	}
}

// Parse alone: the header walk of Flow without hashing.
func BenchmarkParse(b *testing.B) {
	for _, bp := range benchPackets() {
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t, _ := parse(bp.pkt)
				sinkU32 = uint32(t.tail)
			}
		})
	}
}

// Hash alone: one SipHash-1-3 of an IPv4 (16-byte) and IPv6 (40-byte) flow key.
func BenchmarkHash(b *testing.B) {
	h := NewHasherWithKey(1, 2)
	ps := benchPackets()
	b.Run("ipv4", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkU32 = h.flow4(ps[0].pkt, 0x0106_0000_0000)
		}
	})
	b.Run("ipv6", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkU32 = h.flow6(ps[1].pkt, 0x0506_0000_0000)
		}
	})
}

// Meta alone (parse and one hash), and Flow (parse and three hashes), in
// the default and the symmetric mode.
func BenchmarkMetaFlow(b *testing.B) {
	h := NewHasherWithKey(1, 2)
	for _, bp := range benchPackets() {
		b.Run("meta/"+bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkMeta, sinkErr = h.Meta(bp.pkt)
			}
		})
		b.Run("flow/"+bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkFlow, sinkErr = h.Flow(bp.pkt)
			}
		})
		b.Run("flow-symmetric/"+bp.name, func(b *testing.B) {
			hs := h.WithMode(HashFlowSymmetric)
			b.ReportAllocs()
			for b.Loop() {
				sinkFlow, sinkErr = hs.Flow(bp.pkt)
			}
		})
	}
}

// SetCE alone, with the header restored each time.
func BenchmarkSetCE(b *testing.B) {
	for _, bp := range benchPackets()[:2] {
		b.Run(bp.name, func(b *testing.B) {
			p := bp.pkt
			b1, c, v4 := p[1], binary.BigEndian.Uint16(p[10:12]), p[0]>>4 == 4
			b.ReportAllocs()
			for b.Loop() {
				sinkErr = SetCE(p)
				p[1] = b1
				if v4 {
					binary.BigEndian.PutUint16(p[10:12], c)
				}
			}
		})
	}
}

// flow4SipHash24 is flow4 with SipHash-2-4's round counts, for
// BenchmarkSipHashVariants only.
func (h Hasher) flow4SipHash24(pkt []byte, tail uint64) uint32 {
	v0, v1, v2, v3 := h.start()
	m := le64(pkt[12:20])
	v3 ^= m
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= m
	b := tail | 14<<56
	v3 ^= b
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= b
	v2 ^= 0xff
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	r := v0 ^ v1 ^ v2 ^ v3
	return uint32(r) ^ uint32(r>>32)
}

// flow6SipHash24 is flow6 with SipHash-2-4's round counts.
func (h Hasher) flow6SipHash24(pkt []byte, tail uint64) uint32 {
	v0, v1, v2, v3 := h.start()
	for i := 8; i < 40; i += 8 {
		m := le64(pkt[i : i+8])
		v3 ^= m
		v0, v1, v2, v3 = round(v0, v1, v2, v3)
		v0, v1, v2, v3 = round(v0, v1, v2, v3)
		v0 ^= m
	}
	b := tail | 38<<56
	v3 ^= b
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0 ^= b
	v2 ^= 0xff
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	v0, v1, v2, v3 = round(v0, v1, v2, v3)
	r := v0 ^ v1 ^ v2 ^ v3
	return uint32(r) ^ uint32(r>>32)
}

// The 2-4 variants are correct SipHash-2-4 (checked against the reference),
// so that BenchmarkSipHashVariants compares like with like.
func TestSipHash24Variants(t *testing.T) {
	h := NewHasherWithKey(paperK0, paperK1)
	p := data(40)
	tail := uint64(0x0000_0906_bb01_409c)
	key4 := append(append([]byte{}, p[12:20]...), 0x9c, 0x40, 0x01, 0xbb, 6, 9)
	r := refSipHash(2, 4, paperK0, paperK1, key4)
	require.Equal(t, uint32(r)^uint32(r>>32), h.flow4SipHash24(p, tail))
	key6 := append(append([]byte{}, p[8:40]...), 0x9c, 0x40, 0x01, 0xbb, 6, 9)
	r = refSipHash(2, 4, paperK0, paperK1, key6)
	require.Equal(t, uint32(r)^uint32(r>>32), h.flow6SipHash24(p, tail))
}

// SipHash-1-3 against SipHash-2-4 on the IPv4 and IPv6 flow keys.
func BenchmarkSipHashVariants(b *testing.B) {
	h := NewHasherWithKey(1, 2)
	p := benchPackets()[1].pkt
	for _, v := range []struct {
		name string
		fn   func([]byte, uint64) uint32
	}{
		{"1-3/ipv4", h.flow4}, {"2-4/ipv4", h.flow4SipHash24},
		{"1-3/ipv6", h.flow6}, {"2-4/ipv6", h.flow6SipHash24},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkU32 = v.fn(p, 0x0106_0000_0000)
			}
		})
	}
}
