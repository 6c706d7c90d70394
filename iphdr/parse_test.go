package iphdr

import (
	"encoding/binary"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

var testHasher = NewHasherWithKey(0x0123456789abcdef, 0xfedcba9876543210)

// requireMatchesRef checks every result of the fast path on pkt against
// the slow reference: Flow, Meta in each mode, ECN and DSCP, the error
// included. It returns the Flow.
func requireMatchesRef(t testing.TB, h Hasher, pkt []byte) Flow {
	t.Helper()
	r := refParse(pkt)
	f, err := h.Flow(pkt)
	require.ErrorIs(t, err, r.err)
	if r.err != nil {
		require.Equal(t, Flow{}, f)
		for _, mode := range []Mode{HashFlow, HashSrcHost, HashDstHost, HashFlowSymmetric} {
			m, err := h.WithMode(mode).Meta(pkt)
			require.ErrorIs(t, err, r.err)
			require.Equal(t, aqm.Meta{Size: uint32(len(pkt)), Hash: refHash32(h.k0, h.k1, r.invalKey), ECN: aqm.NotECT}, m)
		}
		e, err := ECN(pkt)
		require.ErrorIs(t, err, r.err)
		require.Equal(t, aqm.NotECT, e)
		d, err := DSCP(pkt)
		require.ErrorIs(t, err, r.err)
		require.Zero(t, d)
		return f
	}
	want := Flow{
		Hash:        refHash32(h.k0, h.k1, r.flowKey),
		SrcHostHash: refHash32(h.k0, h.k1, r.srcKey),
		DstHostHash: refHash32(h.k0, h.k1, r.dstKey),
		L4Offset:    uint16(r.l4off),
		Version:     uint8(r.version),
		Protocol:    r.proto,
		DSCP:        r.tc >> 2,
		ECN:         aqm.ECN(r.tc & 3),
		Fragment:    r.frag,
		Ports:       r.ports,
	}
	require.Equal(t, want, f, "flow key %x", r.flowKey)
	sym := refHash32(h.k0, h.k1, r.symKey)
	fs, err := h.WithMode(HashFlowSymmetric).Flow(pkt)
	require.NoError(t, err)
	wantSym := want
	wantSym.Hash = sym
	require.Equal(t, wantSym, fs, "symmetric flow key %x", r.symKey)
	for mode, hash := range map[Mode]uint32{HashFlow: want.Hash, HashSrcHost: want.SrcHostHash, HashDstHost: want.DstHostHash, HashFlowSymmetric: sym} {
		m, err := h.WithMode(mode).Meta(pkt)
		require.NoError(t, err)
		require.Equal(t, aqm.Meta{Size: uint32(len(pkt)), Hash: hash, ECN: want.ECN}, m, "mode %v", mode)
	}
	e, err := ECN(pkt)
	require.NoError(t, err)
	require.Equal(t, want.ECN, e)
	d, err := DSCP(pkt)
	require.NoError(t, err)
	require.Equal(t, want.DSCP, d)
	return f
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// Every protocol and fallback gets the key the documentation promises,
// and the fast path agrees with the reference on each.
func TestFlowKeys(t *testing.T) {
	pay := data(100)
	tcpSeg := tcp(40000, 443, pay)
	type want struct {
		proto   uint8
		ports   bool
		frag    bool
		l4off   uint16
		version uint8
	}
	cases := []struct {
		name string
		pkt  []byte
		want want
	}{
		{"v4 tcp", v4(0x02, 6, srcA4, dstB4, 0x4000, nil, tcpSeg), want{6, true, false, 20, 4}},
		{"v4 udp", v4(0, 17, srcA4, dstB4, 0, nil, udp(5353, 53, pay)), want{17, true, false, 20, 4}},
		{"v4 udplite", v4(0, 136, srcA4, dstB4, 0, nil, udp(1, 2, pay)), want{136, true, false, 20, 4}},
		{"v4 sctp", v4(0, 132, srcA4, dstB4, 0, nil, udp(3868, 3868, pay)), want{132, true, false, 20, 4}},
		{"v4 dccp", v4(0, 33, srcA4, dstB4, 0, nil, udp(5004, 5005, pay)), want{33, true, false, 20, 4}},
		{"v4 tcp options", v4(0xb8, 6, srcA4, dstB4, 0, []byte{1, 1, 1, 0, 0x94, 4, 0, 0}, tcpSeg), want{6, true, false, 28, 4}},
		{"v4 icmp echo", v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(8, 77, 1, pay)), want{1, true, false, 20, 4}},
		{"v4 icmp echo reply", v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(0, 77, 1, pay)), want{1, true, false, 20, 4}},
		{"v4 icmp unreachable", v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(3, 77, 1, pay)), want{1, false, false, 20, 4}},
		{"v4 esp", v4(0, 50, srcA4, dstB4, 0, nil, append(be32(0xdeadbeef), pay...)), want{50, true, false, 20, 4}},
		{"v4 ah tcp", v4(0, 51, srcA4, dstB4, 0, nil, ah(6, 0x1000, tcpSeg)), want{6, true, false, 44, 4}},
		{"v4 ah unknown", v4(0, 51, srcA4, dstB4, 0, nil, ah(99, 0x1000, pay)), want{99, true, false, 44, 4}},
		{"v4 gre key", v4(0, 47, srcA4, dstB4, 0, nil, gre(0x2000, 42, pay)), want{47, true, false, 20, 4}},
		{"v4 gre csum key", v4(0, 47, srcA4, dstB4, 0, nil, gre(0xa000, 42, pay)), want{47, true, false, 20, 4}},
		{"v4 gre pptp", v4(0, 47, srcA4, dstB4, 0, nil, gre(0x3001, 100<<16|9, pay)), want{47, true, false, 20, 4}},
		{"v4 gre nokey", v4(0, 47, srcA4, dstB4, 0, nil, gre(0, 0, pay)), want{47, false, false, 20, 4}},
		{"v4 unknown", v4(0, 99, srcA4, dstB4, 0, nil, pay), want{99, false, false, 20, 4}},
		{"v4 first fragment", v4(0, 17, srcA4, dstB4, 0x2000, nil, udp(1, 2, pay)), want{17, false, true, 0, 4}},
		{"v4 later fragment", v4(0, 17, srcA4, dstB4, 0x0010, nil, pay), want{17, false, true, 0, 4}},
		{"v4 truncated tcp", v4(0, 6, srcA4, dstB4, 0, nil, []byte{1, 2, 3}), want{6, false, false, 20, 4}},
		{"v4 empty payload", v4(0, 6, srcA4, dstB4, 0, nil, nil), want{6, false, false, 20, 4}},
		{"v6 tcp", v6(0x01, 0, 6, srcA6, dstB6, tcpSeg), want{6, true, false, 40, 6}},
		{"v6 tcp labelled", v6(0x01, 0xbeef, 6, srcA6, dstB6, tcpSeg), want{6, true, false, 40, 6}},
		{"v6 udp", v6(0xb8, 0, 17, srcA6, dstB6, udp(5353, 53, pay)), want{17, true, false, 40, 6}},
		{"v6 icmp echo", v6(0, 0, 58, srcA6, dstB6, icmpEcho(128, 77, 1, pay)), want{58, true, false, 40, 6}},
		{"v6 icmp ra", v6(0, 0, 58, srcA6, dstB6, icmpEcho(134, 77, 1, pay)), want{58, false, false, 40, 6}},
		{"v6 hbh dst tcp", v6(0x02, 0, 0, srcA6, dstB6, ext(60, 1, ext(6, 2, tcpSeg))), want{6, true, false, 64, 6}},
		{"v6 routing tcp", v6(0x02, 0, 43, srcA6, dstB6, ext(6, 3, tcpSeg)), want{6, true, false, 64, 6}},
		{"v6 ah tcp", v6(0, 0, 51, srcA6, dstB6, ah(6, 0x1000, tcpSeg)), want{6, true, false, 64, 6}},
		{"v6 ah esp", v6(0, 0, 51, srcA6, dstB6, ah(50, 0x1000, append(be32(7), pay...))), want{50, true, false, 64, 6}},
		{"v6 esp", v6(0, 0, 50, srcA6, dstB6, append(be32(0xdeadbeef), pay...)), want{50, true, false, 40, 6}},
		{"v6 first fragment", v6(0, 0, 44, srcA6, dstB6, frag6(17, 0, true, 9, udp(1, 2, pay))), want{17, false, true, 0, 6}},
		{"v6 later fragment", v6(0, 0, 44, srcA6, dstB6, frag6(17, 100, false, 9, pay)), want{17, false, true, 0, 6}},
		{"v6 hbh fragment", v6(0, 0, 0, srcA6, dstB6, ext(44, 1, frag6(17, 100, false, 9, pay))), want{17, false, true, 0, 6}},
		{"v6 no next header", v6(0, 0, 59, srcA6, dstB6, nil), want{59, false, false, 40, 6}},
		{"v6 truncated ext", v6(0, 0, 60, srcA6, dstB6, []byte{6, 5, 0, 0, 0, 0, 0, 0}), want{60, false, false, 0, 6}},
		{"v6 jumbo", func() []byte { p := v6(0, 0, 6, srcA6, dstB6, tcpSeg); p[4], p[5] = 0, 0; return p }(), want{6, true, false, 40, 6}},
		{"v6 8 ext tcp", v6(0, 0, 60, srcA6, dstB6, chain(8, tcpSeg)), want{6, true, false, 40 + 8*8, 6}},
		{"v6 9 ext tcp", v6(0, 0, 60, srcA6, dstB6, chain(9, tcpSeg)), want{60, false, false, 0, 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := requireMatchesRef(t, testHasher, c.pkt)
			got := want{f.Protocol, f.Ports, f.Fragment, f.L4Offset, f.Version}
			require.Equal(t, c.want, got)
			padded := append(c.pkt[:len(c.pkt):len(c.pkt)], 0xff, 0xff, 0xff, 0xff) // link padding
			g := requireMatchesRef(t, testHasher, padded)
			require.Equal(t, f.Hash, g.Hash, "link padding changed the hash")
		})
	}
}

// chain builds n Destination Options headers (8 bytes each), the last one
// followed by TCP.
func chain(n int, rest []byte) []byte {
	out := rest
	for i := range n {
		nh := byte(60)
		if i == 0 {
			nh = 6
		}
		out = ext(nh, 1, out)
	}
	return out
}

// Packets of one flow hash alike whatever their payload, IPv4 options,
// IPv6 extension headers or DSCP/ECN bits; all fragments of a datagram
// share a key; different flows differ.
func TestFlowEquivalence(t *testing.T) {
	h := testHasher
	fh := func(p []byte) uint32 {
		f, err := h.Flow(p)
		require.NoError(t, err)
		return f.Hash
	}
	base := fh(v4(0, 6, srcA4, dstB4, 0, nil, tcp(40000, 443, nil)))
	require.Equal(t, base, fh(v4(0xbb, 6, srcA4, dstB4, 0x4000, []byte{1, 1, 1, 0}, tcp(40000, 443, data(900)))))
	require.Equal(t, base, fh(v4(0, 51, srcA4, dstB4, 0, nil, ah(6, 5, tcp(40000, 443, data(3))))), "AH-wrapped TCP keys like TCP")
	require.NotEqual(t, base, fh(v4(0, 6, srcA4, dstB4, 0, nil, tcp(40001, 443, nil))))
	require.NotEqual(t, base, fh(v4(0, 6, dstB4, srcA4, 0, nil, tcp(443, 40000, nil))), "directions differ")
	require.NotEqual(t, base, fh(v4(0, 17, srcA4, dstB4, 0, nil, tcp(40000, 443, nil))), "protocol is in the key")

	frags := [][]byte{
		v4(0, 17, srcA4, dstB4, 0x2000, nil, udp(1, 2, data(64))),
		v4(0, 17, srcA4, dstB4, 0x2000|9, nil, data(64)),
		v4(0, 17, srcA4, dstB4, 18, nil, data(10)),
	}
	for _, p := range frags {
		require.Equal(t, fh(frags[0]), fh(p))
	}
	frags6 := [][]byte{
		v6(0, 0, 44, srcA6, dstB6, frag6(17, 0, true, 9, udp(1, 2, data(64)))),
		v6(0, 0, 44, srcA6, dstB6, frag6(17, 9, true, 9, data(64))),
		v6(0, 0, 0, srcA6, dstB6, ext(44, 1, frag6(17, 18, false, 9, data(8)))),
	}
	for _, p := range frags6 {
		require.Equal(t, fh(frags6[0]), fh(p))
	}

	b6 := fh(v6(0, 0, 6, srcA6, dstB6, tcp(40000, 443, nil)))
	require.Equal(t, b6, fh(v6(0xff, 0x12345, 0, srcA6, dstB6, ext(43, 2, ext(60, 1, ext(6, 1, tcp(40000, 443, data(50))))))))
	require.Equal(t, b6, fh(v6(0, 0, 51, srcA6, dstB6, ah(6, 77, tcp(40000, 443, nil)))), "AH-wrapped TCP keys like TCP")
	// An IPv4-mapped address is still a different family: kind and length keep them apart.
	require.NotEqual(t, base, b6)

	// ICMP echo: two pings between the same hosts get different queues.
	require.NotEqual(t,
		fh(v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(8, 1, 1, nil))),
		fh(v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(8, 2, 1, nil))))
	require.Equal(t,
		fh(v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(8, 1, 1, nil))),
		fh(v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(8, 1, 2, data(20)))), "the sequence number is not in the key")
	// PPTP: the payload-length half of the key field is ignored.
	require.Equal(t,
		fh(v4(0, 47, srcA4, dstB4, 0, nil, gre(0x3001, 100<<16|9, nil))),
		fh(v4(0, 47, srcA4, dstB4, 0, nil, gre(0x3001, 1400<<16|9, nil))))
}

// Host hashes depend on one address only, and the source and destination
// roles are kept apart.
func TestHostHashes(t *testing.T) {
	h := testHasher
	a, err := h.Flow(v4(0, 6, srcA4, dstB4, 0, nil, tcp(1, 2, nil)))
	require.NoError(t, err)
	b, err := h.Flow(v4(0, 17, srcA4, srcA4, 0x2000, nil, udp(3, 4, nil)))
	require.NoError(t, err)
	require.Equal(t, a.SrcHostHash, b.SrcHostHash)
	require.NotEqual(t, a.DstHostHash, b.DstHostHash)
	require.NotEqual(t, b.SrcHostHash, b.DstHostHash, "same address, different role")
	m, err := h.WithMode(HashSrcHost).Meta(v4(0, 99, srcA4, dstB4, 0, nil, nil))
	require.NoError(t, err)
	require.Equal(t, a.SrcHostHash, m.Hash)
	m, err = h.WithMode(HashDstHost).Meta(v4(0, 99, dstB4, dstB4, 0, nil, nil))
	require.NoError(t, err)
	require.Equal(t, a.DstHostHash, m.Hash)

	c, err := h.Flow(v6(0, 0, 6, srcA6, dstB6, tcp(1, 2, nil)))
	require.NoError(t, err)
	d, err := h.Flow(v6(0, 0, 58, srcA6, srcA6, icmpEcho(128, 1, 1, nil)))
	require.NoError(t, err)
	require.Equal(t, c.SrcHostHash, d.SrcHostHash)
	require.NotEqual(t, c.DstHostHash, d.DstHostHash)
}

// Two keys map the same flows to unrelated hashes, so collisions found
// under one key say nothing about another.
func TestKeyedness(t *testing.T) {
	a := NewHasherWithKey(1, 2)
	b := NewHasherWithKey(3, 4)
	const n = 256
	sameHash, sameBucket := 0, 0
	for i := range n {
		p := v4(0, 17, srcA4, dstB4, 0, nil, udp(uint16(1000+i), 53, nil))
		fa, err := a.Flow(p)
		require.NoError(t, err)
		fb, err := b.Flow(p)
		require.NoError(t, err)
		if fa.Hash == fb.Hash {
			sameHash++
		}
		if fa.Hash%16 == fb.Hash%16 {
			sameBucket++
		}
	}
	require.Zero(t, sameHash)
	// Independent keys put a flow in the same one of 16 buckets about
	// n/16 = 16 times; a hash that ignored the key would do it n times.
	require.Less(t, sameBucket, 40)
}

// Invalid input gets the documented error, a usable Meta, and the
// reference's verdict.
func TestInvalid(t *testing.T) {
	good := v4(0, 6, srcA4, dstB4, 0, nil, tcp(1, 2, nil))
	good6 := v6(0, 0, 6, srcA6, dstB6, tcp(1, 2, nil))
	mut := func(p []byte, f func([]byte)) []byte { q := append([]byte(nil), p...); f(q); return q }
	cases := []struct {
		name string
		pkt  []byte
		err  error
	}{
		{"nil", nil, ErrTruncated},
		{"version 5", mut(good, func(p []byte) { p[0] = 0x55 }), ErrNotIP},
		{"version 0 short", []byte{0x05}, ErrNotIP},
		{"v4 short", good[:19], ErrTruncated},
		{"v4 ihl 4", mut(good, func(p []byte) { p[0] = 0x44 }), ErrNotIP},
		{"v4 ihl beyond total", mut(good, func(p []byte) { p[0] = 0x4f }), ErrNotIP},
		{"v4 total below 20", mut(good, func(p []byte) { p[2], p[3] = 0, 19 }), ErrNotIP},
		{"v4 total beyond slice", good[:len(good)-1], ErrTruncated},
		{"v6 short", good6[:39], ErrTruncated},
		{"v6 payload beyond slice", good6[:len(good6)-1], ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := append([]byte(nil), c.pkt...)
			requireMatchesRef(t, testHasher, c.pkt)
			m, err := testHasher.Meta(c.pkt)
			require.ErrorIs(t, err, c.err)
			require.Equal(t, uint32(len(c.pkt)), m.Size)
			require.ErrorIs(t, SetCE(c.pkt), c.err)
			require.Equal(t, before, c.pkt, "nothing modified")
		})
	}
}

// DSCP and ECN are read from the right bits of both header families.
func TestDSCPAndECN(t *testing.T) {
	for _, tos := range []byte{0, 1, 2, 3, 0xb8, 0xb9, 0xba, 0xbb, 0xff, 0x04} {
		for _, p := range [][]byte{v4(tos, 6, srcA4, dstB4, 0, nil, nil), v6(tos, 0xfffff, 6, srcA6, dstB6, nil)} {
			d, err := DSCP(p)
			require.NoError(t, err)
			require.Equal(t, tos>>2, d)
			e, err := ECN(p)
			require.NoError(t, err)
			require.Equal(t, aqm.ECN(tos&3), e)
		}
	}
}
