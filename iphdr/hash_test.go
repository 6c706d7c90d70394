package iphdr

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// paperKey is the key of the SipHash paper's test vectors: bytes 00..0f.
const paperK0, paperK1 = 0x0706050403020100, 0x0f0e0d0c0b0a0908

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// The reference SipHash matches the published SipHash-2-4 vectors, so it can
// stand as the reference for the 1-3 fast path.
func TestRefSipHash24Vectors(t *testing.T) {
	// Appendix A of the paper: key 00..0f, message 00..0e.
	require.Equal(t, uint64(0xa129ca6149be45e5), refSipHash(2, 4, paperK0, paperK1, seq(15)))
	// The reference implementation's vectors for the empty and one-byte
	// messages under the same key.
	require.Equal(t, uint64(0x726fdb47dd0e0e31), refSipHash(2, 4, paperK0, paperK1, nil))
	require.Equal(t, uint64(0x74f839c593dc67fd), refSipHash(2, 4, paperK0, paperK1, seq(1)))
}

// The hand-specialised SipHash-1-3 on fixed-length word messages equals the
// generic one for every key length the package uses, under several keys.
func TestFastSipHashMatchesReference(t *testing.T) {
	keys := [][2]uint64{{0, 0}, {paperK0, paperK1}, {0xdeadbeefcafef00d, 0x0123456789abcdef}, {^uint64(0), 1}}
	for _, k := range keys {
		h := NewHasherWithKey(k[0], k[1])
		msg := data(40)
		tail := binary.LittleEndian.Uint64(msg[32:40])

		p4 := make([]byte, 20)
		copy(p4[12:], msg[:8])
		require.Equal(t, refHash32(k[0], k[1], append(msg[:8:8], msg[32:38]...)), h.flow4(p4, tail&(1<<48-1)), "flow4 key %x", k)

		p6 := make([]byte, 40)
		copy(p6[8:], msg[:32])
		require.Equal(t, refHash32(k[0], k[1], msg[:38]), h.flow6(p6, tail&(1<<48-1)), "flow6 key %x", k)

		a := binary.LittleEndian.Uint32(msg[:4])
		require.Equal(t, refHash32(k[0], k[1], append(msg[:4:4], 5)), h.host4(a, 5), "host4 key %x", k)

		require.Equal(t, refHash32(k[0], k[1], append(msg[:16:16], 6)),
			h.host6(binary.LittleEndian.Uint64(msg[:8]), binary.LittleEndian.Uint64(msg[8:16]), 6), "host6 key %x", k)

		require.Equal(t, refHash32(k[0], k[1], nil), h.invalid(), "invalid key %x", k)
	}
}

// Hashes under a fixed key are golden: a change of key layout or
// algorithm shows up here (the values come from the reference above and
// were recorded once).
func TestGoldenHashes(t *testing.T) {
	h := NewHasherWithKey(paperK0, paperK1)
	p := v4(0x02, 6, srcA4, dstB4, 0x4000, nil, tcp(40000, 443, data(10)))
	f, err := h.Flow(p)
	require.NoError(t, err)
	ref := refParse(p)
	require.Equal(t, refHash32(paperK0, paperK1, ref.flowKey), f.Hash)
	require.Equal(t, []byte{192, 0, 2, 1, 198, 51, 100, 7, 0x9c, 0x40, 0x01, 0xbb, 6, 9}, ref.flowKey)
	require.Equal(t, uint32(0xdf613e57), f.Hash)
}

// NewHasher draws a fresh key each time, and the key changes the hashes.
func TestNewHasherIsKeyed(t *testing.T) {
	a, b := NewHasher(), NewHasher()
	require.NotEqual(t, [2]uint64{a.k0, a.k1}, [2]uint64{b.k0, b.k1})
	require.Equal(t, HashFlow, a.mode)
}

// WithMode selects what Meta hashes without changing the key, and an
// unknown mode falls back to the flow key.
func TestModes(t *testing.T) {
	h := NewHasherWithKey(7, 8)
	p := v6(0, 0, 17, srcA6, dstB6, udp(1, 2, nil))
	f, err := h.Flow(p)
	require.NoError(t, err)
	for mode, want := range map[Mode]uint32{HashFlow: f.Hash, HashSrcHost: f.SrcHostHash, HashDstHost: f.DstHostHash, Mode(9): f.Hash} {
		hm := h.WithMode(mode)
		require.Equal(t, mode, hm.mode)
		m, err := hm.Meta(p)
		require.NoError(t, err)
		require.Equal(t, want, m.Hash, "mode %v", mode)
		g, err := hm.Flow(p)
		require.NoError(t, err)
		require.Equal(t, f, g, "Flow ignores the mode")
	}
	require.Equal(t, "flow src-host dst-host flow-symmetric mode(9)",
		HashFlow.String()+" "+HashSrcHost.String()+" "+HashDstHost.String()+" "+HashFlowSymmetric.String()+" "+Mode(9).String())
}

// HashFlowSymmetric gives a packet and its reply one hash (ports, ICMP
// echo identifiers, IPv4 and IPv6, equal addresses ordered by port), a
// hash no directional key has, and one that still tells flows apart.
func TestSymmetric(t *testing.T) {
	h := NewHasherWithKey(7, 8).WithMode(HashFlowSymmetric)
	pairs := [][2][]byte{
		{v4(0, 6, srcA4, dstB4, 0, nil, tcp(40000, 443, nil)), v4(0, 6, dstB4, srcA4, 0, nil, tcp(443, 40000, nil))},
		{v4(0, 17, dstB4, dstB4, 0, nil, udp(9, 7, nil)), v4(0, 17, dstB4, dstB4, 0, nil, udp(7, 9, nil))},
		{v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(8, 77, 1, nil)), v4(0, 1, dstB4, srcA4, 0, nil, icmpEcho(0, 77, 1, nil))},
		{v4(0, 17, srcA4, dstB4, 0x2000, nil, udp(1, 2, nil)), v4(0, 17, dstB4, srcA4, 0x2000, nil, udp(2, 1, nil))},
		{v6(0, 0, 6, srcA6, dstB6, tcp(40000, 443, nil)), v6(0, 0, 6, dstB6, srcA6, tcp(443, 40000, nil))},
		{v6(0, 0, 17, dstB6, dstB6, udp(9, 7, nil)), v6(0, 0, 17, dstB6, dstB6, udp(7, 9, nil))},
		{v6(0, 0, 0, srcA6, dstB6, ext(6, 1, tcp(1, 2, nil))), v6(0, 0, 6, dstB6, srcA6, tcp(2, 1, nil))},
	}
	for i, pr := range pairs {
		a, err := h.Meta(pr[0])
		require.NoError(t, err)
		b, err := h.Meta(pr[1])
		require.NoError(t, err)
		require.Equal(t, a.Hash, b.Hash, "pair %d", i)
		fa, err := h.Flow(pr[0])
		require.NoError(t, err)
		fb, err := h.Flow(pr[1])
		require.NoError(t, err)
		require.Equal(t, a.Hash, fa.Hash)
		require.Equal(t, fa.Hash, fb.Hash)
		d0, _ := h.WithMode(HashFlow).Meta(pr[0])
		d1, _ := h.WithMode(HashFlow).Meta(pr[1])
		require.NotEqual(t, d0.Hash, a.Hash, "pair %d: the symmetric key is its own", i)
		require.NotEqual(t, d1.Hash, a.Hash, "pair %d", i)
	}
	x, _ := h.Meta(v4(0, 6, srcA4, dstB4, 0, nil, tcp(40001, 443, nil)))
	y, _ := h.Meta(v4(0, 6, srcA4, dstB4, 0, nil, tcp(40000, 443, nil)))
	require.NotEqual(t, x.Hash, y.Hash)
}
