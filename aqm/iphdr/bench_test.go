package iphdr

import (
	"encoding/binary"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
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
// it, so that its next 16-bit load is forwarded from the store), so every SetCE does the full update.
func BenchmarkParseHashSetCE(b *testing.B) {
	h := NewHasherWithKey(1, 2)
	for _, bp := range benchPackets() {
		b.Run(bp.name, func(b *testing.B) {
			p := bp.pkt
			b1, c := p[1], binary.BigEndian.Uint16(p[10:12])
			b.ReportAllocs()
			for b.Loop() {
				m, _ := h.Meta(p)
				sinkMeta = m
				sinkErr = SetCE(p)
				p[1] = b1
				binary.BigEndian.PutUint16(p[10:12], c)
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

// Meta alone (parse and one hash), and Flow (parse and three hashes).
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
	}
}

// SetCE alone, with the header restored each time.
func BenchmarkSetCE(b *testing.B) {
	for _, bp := range benchPackets()[:2] {
		b.Run(bp.name, func(b *testing.B) {
			p := bp.pkt
			b1, c := p[1], binary.BigEndian.Uint16(p[10:12])
			b.ReportAllocs()
			for b.Loop() {
				sinkErr = SetCE(p)
				p[1] = b1
				binary.BigEndian.PutUint16(p[10:12], c)
			}
		})
	}
}
