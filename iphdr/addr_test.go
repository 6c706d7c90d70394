package iphdr

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// refEndpoints is ParseEndpoints written from the reference parser
// (reference_test.go) and the RFCs' header layouts: addresses at bytes
// 12–19 (IPv4) or 8–39 (IPv6), ports as the first two big-endian words of
// a reached TCP, UDP, DCCP, SCTP or UDP-Lite header.
func refEndpoints(pkt []byte) (Endpoints, error) {
	r := refParse(pkt)
	if r.err != nil {
		return Endpoints{}, r.err
	}
	var src, dst netip.Addr
	if r.version == 4 {
		src, _ = netip.AddrFromSlice(pkt[12:16])
		dst, _ = netip.AddrFromSlice(pkt[16:20])
	} else {
		src, _ = netip.AddrFromSlice(pkt[8:24])
		dst, _ = netip.AddrFromSlice(pkt[24:40])
	}
	e := Endpoints{Protocol: r.proto, Src: netip.AddrPortFrom(src, 0), Dst: netip.AddrPortFrom(dst, 0)}
	portProto := r.proto == 6 || r.proto == 17 || r.proto == 33 || r.proto == 132 || r.proto == 136
	if r.l4off != 0 && !r.frag && portProto && r.l4off+4 <= ipEnd(pkt) {
		e.Ports = true
		e.Src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(pkt[r.l4off:]))
		e.Dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(pkt[r.l4off+2:]))
	}
	return e, nil
}

// requireEndpointsMatchRef checks ParseEndpoints against the
// reference on one packet, and that neither changes it.
func requireEndpointsMatchRef(t testing.TB, pkt []byte) Endpoints {
	t.Helper()
	orig := append([]byte(nil), pkt...)
	want, wantErr := refEndpoints(pkt)
	got, err := ParseEndpoints(pkt)
	require.Equal(t, wantErr, err, "packet % x", pkt)
	require.Equal(t, want, got, "packet % x", pkt)
	require.True(t, bytes.Equal(orig, pkt), "the packet is read, never written")
	return got
}

// TestEndpoints protects the addresses and ports of each packet shape:
// IPv4 and IPv6 transport ports, ports behind IPv6 extension headers and
// AH, no ports for fragments, ICMP, ESP and truncated transport headers,
// and the zero value on invalid headers.
func TestEndpoints(t *testing.T) {
	pay := data(20)
	ap := netip.AddrPortFrom
	cases := []struct {
		name string
		pkt  []byte
		want Endpoints
		err  error
	}{
		{"v4 tcp", v4(0, 6, srcA4, dstB4, 0x4000, nil, tcp(40000, 443, pay)),
			Endpoints{ap(srcA4, 40000), ap(dstB4, 443), 6, true}, nil},
		{"v4 udp with options", v4(0, 17, srcA4, dstB4, 0, []byte{0x94, 4, 0, 0}, udp(5353, 53, pay)),
			Endpoints{ap(srcA4, 5353), ap(dstB4, 53), 17, true}, nil},
		{"v4 sctp", v4(0, 132, srcA4, dstB4, 0, nil, []byte{0x0b, 0xb8, 0x13, 0x88, 0, 0, 0, 0}),
			Endpoints{ap(srcA4, 3000), ap(dstB4, 5000), 132, true}, nil},
		{"v4 tcp behind AH", v4(0, 51, srcA4, dstB4, 0, nil, ah(6, 9, tcp(1, 2, nil))),
			Endpoints{ap(srcA4, 1), ap(dstB4, 2), 6, true}, nil},
		{"v4 first fragment", v4(0, 17, srcA4, dstB4, 0x2000, nil, udp(1, 2, pay)),
			Endpoints{ap(srcA4, 0), ap(dstB4, 0), 17, false}, nil},
		{"v4 icmp echo", v4(0, 1, srcA4, dstB4, 0, nil, icmpEcho(8, 7, 1, pay)),
			Endpoints{ap(srcA4, 0), ap(dstB4, 0), 1, false}, nil},
		{"v4 esp", v4(0, 50, srcA4, dstB4, 0, nil, pay),
			Endpoints{ap(srcA4, 0), ap(dstB4, 0), 50, false}, nil},
		{"v4 tcp cut to 3 bytes", v4(0, 6, srcA4, dstB4, 0, nil, []byte{1, 2, 3}),
			Endpoints{ap(srcA4, 0), ap(dstB4, 0), 6, false}, nil},
		{"v6 tcp", v6(0, 0, 6, srcA6, dstB6, tcp(40000, 443, pay)),
			Endpoints{ap(srcA6, 40000), ap(dstB6, 443), 6, true}, nil},
		{"v6 udp behind three headers", v6(0, 0, 60, srcA6, dstB6, ext(43, 1, ext(0, 2, ext(17, 1, udp(7, 8, pay))))),
			Endpoints{ap(srcA6, 7), ap(dstB6, 8), 17, true}, nil},
		{"v6 tcp behind AH", v6(0, 0, 51, srcA6, dstB6, ah(6, 9, tcp(1, 2, nil))),
			Endpoints{ap(srcA6, 1), ap(dstB6, 2), 6, true}, nil},
		{"v6 fragment", v6(0, 0, 44, srcA6, dstB6, frag6(17, 0, true, 1, udp(1, 2, pay))),
			Endpoints{ap(srcA6, 0), ap(dstB6, 0), 17, false}, nil},
		{"v6 past the bound", v6(0, 0, 60, srcA6, dstB6, chain(9, tcp(1, 2, nil))),
			Endpoints{ap(srcA6, 0), ap(dstB6, 0), 60, false}, nil},
		{"v4 truncated", v4(0, 6, srcA4, dstB4, 0, nil, tcp(1, 2, nil))[:19], Endpoints{}, ErrTruncated},
		{"v6 truncated", v6(0, 0, 6, srcA6, dstB6, nil)[:39], Endpoints{}, ErrTruncated},
		{"version 5", []byte{0x50, 0, 0, 0}, Endpoints{}, ErrNotIP},
		{"empty", nil, Endpoints{}, ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseEndpoints(c.pkt)
			require.ErrorIs(t, err, c.err)
			if c.err == nil {
				require.NoError(t, err)
			}
			require.Equal(t, c.want, got)
			requireEndpointsMatchRef(t, c.pkt)
		})
	}
	// The families are kept apart: an IPv4 packet gives 4-byte addresses.
	e, err := ParseEndpoints(cases[0].pkt)
	require.NoError(t, err)
	require.True(t, e.Src.Addr().Is4() && e.Dst.Addr().Is4())
	e, err = ParseEndpoints(cases[8].pkt)
	require.NoError(t, err)
	require.True(t, e.Src.Addr().Is6() && !e.Src.Addr().Is4In6())
}

// TestEndpointsAgreeWithFlow protects the claim that the endpoints come
// from the flow key's parse: Protocol is Flow's, and a packet has ports
// here only if its flow key holds transport words.
func TestEndpointsAgreeWithFlow(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	h := NewHasherWithKey(1, 2)
	for range 20_000 {
		p := randomPacket(r)
		e, err := ParseEndpoints(p)
		f, ferr := h.Flow(p)
		require.Equal(t, ferr, err)
		if err != nil {
			continue
		}
		require.Equal(t, f.Protocol, e.Protocol)
		if e.Ports {
			require.True(t, f.Ports)
			require.False(t, f.Fragment)
			require.NotZero(t, f.L4Offset)
		}
	}
}

// TestRandomEndpointsMatchReference protects ParseEndpoints on
// many random structured packets (long extension chains, lying lengths,
// cuts): they agree with the reference and never allocate.
func TestRandomEndpointsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(20260102, 1))
	n := 50_000
	if testing.Short() {
		n = 5_000
	}
	ports := 0
	for i := range n {
		p := randomPacket(r)
		if requireEndpointsMatchRef(t, p).Ports {
			ports++
		}
		if i%1000 == 0 {
			require.Zero(t, testing.AllocsPerRun(1, func() { sinkEndpoints, sinkErr = ParseEndpoints(p) }))
		}
	}
	require.Greater(t, ports, n/20, "the generator reaches port headers")
}

// TestEndpointsZeroAllocs protects the allocation-free contract of
// ParseEndpoints on every seed packet, valid or not.
func TestEndpointsZeroAllocs(t *testing.T) {
	for i, p := range append(seedPackets(), []byte{0x60}, []byte{0x4f, 0, 0, 0}) {
		require.Zero(t, testing.AllocsPerRun(100, func() { sinkEndpoints, sinkErr = ParseEndpoints(p) }), "packet %d", i)
	}
}

var sinkEndpoints Endpoints

// FuzzEndpoints checks, on arbitrary bytes, that ParseEndpoints
// never panic, never allocate, never write, and agree with the reference.
func FuzzEndpoints(f *testing.F) {
	for _, p := range seedPackets() {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		requireEndpointsMatchRef(t, pkt)
		require.Zero(t, testing.AllocsPerRun(1, func() { sinkEndpoints, sinkErr = ParseEndpoints(pkt) }))
	})
}

// BenchmarkEndpoints measures ParseEndpoints per packet shape.
func BenchmarkEndpoints(b *testing.B) {
	for _, c := range benchPackets() {
		b.Run(c.name+"/ParseEndpoints", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkEndpoints, sinkErr = ParseEndpoints(c.pkt)
			}
		})
	}
}
