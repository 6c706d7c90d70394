package iphdr

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// seedPackets are realistic packets for the fuzz corpora.
func seedPackets() [][]byte {
	pay := data(40)
	return [][]byte{
		v4(0x02, 6, srcA4, dstB4, 0x4000, nil, tcp(40000, 443, pay)),
		v4(0x01, 17, srcA4, dstB4, 0, nil, udp(5353, 53, pay)),
		v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(8, 7, 1, pay)),
		v4(0xba, 6, srcA4, dstB4, 0, []byte{0x94, 4, 0, 0}, tcp(1, 2, pay)),
		v4(0, 17, srcA4, dstB4, 0x2000, nil, udp(1, 2, pay)),
		v4(0, 17, srcA4, dstB4, 0x0005, nil, pay),
		v4(0, 51, srcA4, dstB4, 0, nil, ah(6, 9, tcp(1, 2, nil))),
		v4(0, 47, srcA4, dstB4, 0, nil, gre(0xa000, 42, pay)),
		v4(0, 50, srcA4, dstB4, 0, nil, pay),
		v6(0x02, 0, 6, srcA6, dstB6, tcp(40000, 443, pay)),
		v6(0x01, 0x12345, 17, srcA6, dstB6, udp(1, 2, pay)),
		v6(0, 0, 58, srcA6, dstB6, icmpEcho(128, 7, 1, pay)),
		v6(0x03, 0, 0, srcA6, dstB6, ext(60, 1, ext(43, 2, ext(6, 1, tcp(1, 2, pay))))),
		v6(0, 0, 44, srcA6, dstB6, frag6(17, 0, true, 1, udp(1, 2, pay))),
		v6(0, 0, 44, srcA6, dstB6, frag6(17, 3, false, 1, pay)),
		v6(0, 0, 51, srcA6, dstB6, ah(6, 9, tcp(1, 2, nil))),
		v6(0, 0, 60, srcA6, dstB6, chain(9, tcp(1, 2, nil))),
		{0x45},
		{},
	}
}

// ipEnd is where the IP packet ends per its own length field.
func ipEnd(p []byte) int {
	if p[0]>>4 == 4 {
		return int(binary.BigEndian.Uint16(p[2:4]))
	}
	if n := int(binary.BigEndian.Uint16(p[4:6])); n != 0 {
		return 40 + n
	}
	return len(p)
}

// On arbitrary bytes the fast path never panics, never allocates, agrees
// with the reference in every result, and ignores payload and link padding.
func FuzzMeta(f *testing.F) {
	for _, p := range seedPackets() {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		fl := requireMatchesRef(t, testHasher, pkt)
		allocs := testing.AllocsPerRun(1, func() {
			sinkFlow, sinkErr = testHasher.Flow(pkt)
			sinkMeta, sinkErr = testHasher.Meta(pkt)
		})
		require.Zero(t, allocs)
		if fl.Version == 0 {
			return
		}
		// Bytes past the transport words (12 bytes covers ICMP echo and a
		// GRE key after a checksum word), and link padding, are payload.
		from := ipEnd(pkt)
		if fl.L4Offset != 0 {
			from = min(from, int(fl.L4Offset)+12)
		} else if fl.Fragment && fl.Version == 4 {
			from = int(pkt[0]&0xf) * 4
		}
		q := append([]byte(nil), pkt...)
		for i := from; i < len(q); i++ {
			q[i] ^= 0xa5
		}
		g, err := testHasher.Flow(q)
		require.NoError(t, err)
		require.Equal(t, fl, g, "payload from byte %d changed the result", from)
	})
}

// On arbitrary bytes SetCE changes only the ECN bits and the IPv4
// checksum, exactly as RFC 1624 Eqn 3 says, keeps a valid checksum valid,
// and refuses Not-ECT and invalid headers without touching them.
func FuzzSetCE(f *testing.F) {
	for _, p := range seedPackets() {
		f.Add(p, false)
		f.Add(p, true)
	}
	f.Fuzz(func(t *testing.T, pkt []byte, fix bool) {
		if fix && len(pkt) >= 20 && pkt[0]>>4 == 4 {
			if hlen := int(pkt[0]&0xf) * 4; hlen >= 20 && hlen <= len(pkt) {
				fixChecksum(pkt[:hlen]) // exercise the valid-checksum path on every header
			}
		}
		requireSetCE(t, pkt)
		require.Zero(t, testing.AllocsPerRun(1, func() { sinkErr = SetCE(pkt) }))
	})
}
