package iphdr

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The reference for SplitGSO: each segment built from scratch, field by
// field, with the RFC 1071 sum over an explicit pseudo-header, the way a
// reader of RFC 791, 793, 768 and 8200 would lay the packet out.

const (
	tcpFIN = 0x01
	tcpPSH = 0x08
	tcpACK = 0x10
	tcpCWR = 0x80
)

// gsoCase is one super-packet's shape.
type gsoCase struct {
	v6, tcp bool
	ecn     byte // the IP ECN field
	ipOpts  []byte
	tcpOpts []byte
	flags   byte // TCP flags of the super-packet
	mss     int
	payload []byte
}

// refTransport builds the TCP or UDP header and payload of one packet with
// a zero checksum.
func refTransport(c gsoCase, seq uint32, flags byte, pay []byte) []byte {
	if !c.tcp {
		return udp(40000, 4433, pay)
	}
	h := make([]byte, 20+len(c.tcpOpts))
	binary.BigEndian.PutUint16(h[0:], 40000)
	binary.BigEndian.PutUint16(h[2:], 443)
	binary.BigEndian.PutUint32(h[4:], seq)
	binary.BigEndian.PutUint32(h[8:], 777777)
	h[12] = byte(len(h)/4) << 4
	h[13] = flags
	binary.BigEndian.PutUint16(h[14:], 502)
	copy(h[20:], c.tcpOpts)
	return append(h, pay...)
}

// refChecksum writes the transport checksum of the IP packet p, whose
// transport header starts at l4, computed over a pseudo-header laid out
// in a separate buffer.
func refChecksum(p []byte, l4 int, v6, isTCP bool) {
	t := p[l4:]
	var pseudo []byte
	proto := byte(protoUDP)
	if isTCP {
		proto = protoTCP
	}
	if v6 {
		pseudo = append(pseudo, p[8:40]...)
		pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(t)))
		pseudo = append(pseudo, 0, 0, 0, proto)
	} else {
		pseudo = append(pseudo, p[12:20]...)
		pseudo = append(pseudo, 0, proto)
		pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(len(t)))
	}
	all := append(pseudo, t...)
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	c := ^sum16(all)
	if c == 0 && !isTCP {
		c = 0xffff
	}
	at := 6
	if isTCP {
		at = 16
	}
	binary.BigEndian.PutUint16(t[at:], c)
}

// refPacket builds one whole packet of case c.
func refPacket(c gsoCase, id uint16, seq uint32, flags byte, pay []byte) []byte {
	proto := byte(protoUDP)
	if c.tcp {
		proto = protoTCP
	}
	tr := refTransport(c, seq, flags, pay)
	var p []byte
	l4 := 40
	if c.v6 {
		p = v6(0xa0|c.ecn, 0x12345, proto, srcA6, dstB6, tr)
	} else {
		p = v4(0xb8|c.ecn, proto, srcA4, dstB4, 0x4000, c.ipOpts, tr)
		binary.BigEndian.PutUint16(p[4:], id)
		l4 = 20 + len(c.ipOpts)
		fixChecksum(p[:l4])
	}
	refChecksum(p, l4, c.v6, c.tcp)
	return p
}

// super builds the super-packet of case c and its virtio-net header, its
// transport checksum field holding a partial sum as a sender leaves it
// (here: garbage, which SplitGSO must ignore).
func (c gsoCase) super() ([]byte, VnetHdr) {
	p := refPacket(c, 0x1234, 1000, c.flags, c.payload)
	l4 := 40
	if !c.v6 {
		l4 = 20 + len(c.ipOpts)
	}
	h := VnetHdr{Flags: VnetNeedsCsum, GSOSize: uint16(c.mss), CsumStart: uint16(l4)}
	switch {
	case c.tcp && c.v6:
		h.GSOType, h.CsumOffset = GSOTCPv6, 16
	case c.tcp:
		h.GSOType, h.CsumOffset = GSOTCPv4, 16
	default:
		h.GSOType, h.CsumOffset = GSOUDPL4, 6
	}
	if c.tcp && c.flags&tcpCWR != 0 {
		h.GSOType |= GSOECN
	}
	binary.BigEndian.PutUint16(p[l4+int(h.CsumOffset):], 0xbeef)
	return p, h
}

// want builds the segments the slow way.
func (c gsoCase) want() [][]byte {
	var out [][]byte
	n := (len(c.payload) + c.mss - 1) / c.mss
	n = max(n, 1)
	for i := range n {
		pay := c.payload[i*c.mss : min((i+1)*c.mss, len(c.payload))]
		f := c.flags
		if i < n-1 {
			f &^= tcpFIN | tcpPSH
		}
		if i > 0 {
			f &^= tcpCWR
		}
		out = append(out, refPacket(c, uint16(0x1234+i), 1000+uint32(i*c.mss), f, pay))
	}
	return out
}

func gsoCases() []gsoCase {
	var cs []gsoCase
	ipOpts := []byte{0x94, 4, 0, 0, 1, 1, 1, 0}            // router alert, NOP, NOP, NOP, EOL
	tcpOpts := []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2} // NOP NOP timestamps
	for _, v6 := range []bool{false, true} {
		for _, isTCP := range []bool{true, false} {
			for _, opts := range []bool{false, true} {
				for n := 1; n <= 64; n++ {
					for _, tail := range []string{"one", "odd", "full"} {
						c := gsoCase{v6: v6, tcp: isTCP, ecn: byte(n % 4), flags: tcpACK | tcpPSH | tcpFIN}
						if n%3 == 0 {
							c.flags |= tcpCWR
						}
						hdr := 28
						if opts && !v6 {
							c.ipOpts = ipOpts
						}
						if opts && isTCP {
							c.tcpOpts = tcpOpts
						}
						hdr += 40 + len(c.ipOpts) + len(c.tcpOpts) + 12
						c.mss = min(1448, (65535-hdr)/n)
						if n%5 == 0 {
							c.mss -= 7 // an odd segment size
						}
						last := map[string]int{"one": 1, "odd": c.mss/2 | 1, "full": c.mss}[tail]
						c.payload = data((n-1)*c.mss + last)
						cs = append(cs, c)
					}
				}
			}
		}
	}
	return cs
}

func (c gsoCase) String() string {
	return fmt.Sprintf("v6=%v tcp=%v opts=%d/%d mss=%d payload=%d ecn=%d", c.v6, c.tcp, len(c.ipOpts), len(c.tcpOpts), c.mss, len(c.payload), c.ecn)
}

// TestSplitGSOReference protects segmentation: for IPv4 and IPv6, TCP and
// UDP, with and without options, 1 to 64 segments and tails of one byte,
// an odd length and a full segment, every segment SplitGSO writes equals,
// byte for byte, the one built from scratch with its own lengths,
// identification, sequence number, flags and checksums; and GSOSegments
// agrees on the count.
func TestSplitGSOReference(t *testing.T) {
	bufs, sizes := splitBufs(2048)
	for _, c := range gsoCases() {
		p, h := c.super()
		want := c.want()
		cnt, err := GSOSegments(p, h)
		require.NoError(t, err, "%v", c)
		require.Equal(t, len(want), cnt, "%v", c)
		n, err := SplitGSO(p, h, bufs, sizes)
		require.NoError(t, err, "%v", c)
		require.Equal(t, len(want), n, "%v", c)
		for i := range n {
			require.Equal(t, want[i], bufs[i][:sizes[i]], "%v: segment %d", c, i)
		}
	}
}

// TestGSOWireSizeReference protects the wire charge of a super-packet: over
// every reference case (IPv4 and IPv6, TCP and UDP, options, tails),
// GSOWireSize equals the bytes of the segments built from scratch and the
// sum of the sizes SplitGSO writes; a plain packet is charged its length.
func TestGSOWireSizeReference(t *testing.T) {
	bufs, sizes := splitBufs(2048)
	for _, c := range gsoCases() {
		p, h := c.super()
		ref := 0
		for _, w := range c.want() {
			ref += len(w)
		}
		got, err := GSOWireSize(p, h)
		require.NoError(t, err, "%v", c)
		require.Equal(t, ref, got, "%v", c)
		n, err := SplitGSO(p, h, bufs, sizes)
		require.NoError(t, err, "%v", c)
		split := 0
		for _, s := range sizes[:n] {
			split += s
		}
		require.Equal(t, split, got, "%v", c)
		if n > 1 {
			require.Greater(t, got, len(p), "%v", c)
		}
	}
	p := v4(0, 6, srcA4, dstB4, 0, nil, tcp(1, 2, data(3000)))
	got, err := GSOWireSize(p, VnetHdr{})
	require.NoError(t, err)
	require.Equal(t, len(p), got)
}

// TestSplitGSOCE protects marking: a super-packet marked CE by SetCE (as
// the queue marks it) splits into segments that all carry CE, with IPv4
// header checksums that verify, and equal to segments built CE from
// scratch.
func TestSplitGSOCE(t *testing.T) {
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, 1600)
	}
	sizes := make([]int, 8)
	for _, v6 := range []bool{false, true} {
		c := gsoCase{v6: v6, tcp: true, ecn: 2, flags: tcpACK, mss: 1000, payload: data(5500)}
		p, h := c.super()
		require.NoError(t, SetCE(p))
		n, err := SplitGSO(p, h, bufs, sizes)
		require.NoError(t, err)
		require.Equal(t, 6, n)
		c.ecn = 3
		want := c.want()
		for i := range n {
			s := bufs[i][:sizes[i]]
			e, err := ECN(s)
			require.NoError(t, err)
			require.Equal(t, uint8(3), uint8(e), "segment %d", i)
			if !v6 {
				require.Equal(t, uint16(0xffff), sum16(s[:20]), "segment %d: IPv4 checksum", i)
			}
			require.Equal(t, want[i], s, "segment %d", i)
		}
	}
}

// TestSplitGSOErrors protects the refusals: mismatched kinds, fragments,
// bad data offsets, wrong checksum starts, UFO and too few or too short
// buffers all return their error and write nothing.
func TestSplitGSOErrors(t *testing.T) {
	c4 := gsoCase{tcp: true, flags: tcpACK, mss: 500, payload: data(1200)}
	p4, h4 := c4.super()
	c6 := gsoCase{v6: true, flags: tcpACK, mss: 500, payload: data(1200)}
	p6, h6 := c6.super()
	frag := append([]byte(nil), p4...)
	frag[6] |= 0x20
	doff := append([]byte(nil), p4...)
	doff[20+12] = 4 << 4
	big := make([][]byte, 3)
	for i := range big {
		big[i] = make([]byte, 600)
	}
	short := [][]byte{make([]byte, 600), make([]byte, 600), make([]byte, 100)}
	cases := []struct {
		name string
		p    []byte
		h    VnetHdr
		bufs [][]byte
		err  error
	}{
		{"TCPv4 on IPv6", p6, VnetHdr{GSOType: GSOTCPv4, GSOSize: 500}, big, ErrGSO},
		{"TCPv6 on IPv4", p4, VnetHdr{GSOType: GSOTCPv6, GSOSize: 500}, big, ErrGSO},
		{"UDP_L4 on TCP", p4, VnetHdr{GSOType: GSOUDPL4, GSOSize: 500}, big, ErrGSO},
		{"UFO", p6, VnetHdr{GSOType: GSOUDP, GSOSize: 500}, big, ErrGSO},
		{"fragment", frag, h4, big, ErrGSO},
		{"data offset", doff, h4, big, ErrGSO},
		{"csum start", p4, VnetHdr{Flags: VnetNeedsCsum, GSOType: GSOTCPv4, GSOSize: 500, CsumStart: 24, CsumOffset: 16}, big, ErrGSO},
		{"bad header", p4, VnetHdr{GSOType: GSOTCPv4}, big, ErrVnetHdr},
		{"truncated", p4[:30], h4, big, ErrTruncated},
		{"not IP", []byte{0x10, 0, 0, 0}, h4, big, ErrNotIP},
		{"too few", p6, h6, big[:2], ErrGSOBuffers},
		{"too short", p4, h4, short, ErrGSOBuffers},
	}
	sizes := make([]int, 3)
	for _, c := range cases {
		for _, b := range c.bufs {
			clear(b)
		}
		n, err := SplitGSO(c.p, c.h, c.bufs, sizes)
		require.ErrorIs(t, err, c.err, c.name)
		require.Zero(t, n, c.name)
		for _, b := range c.bufs {
			require.Equal(t, make([]byte, len(b)), b, "%s: wrote into a buffer", c.name)
		}
		cnt, err := GSOSegments(c.p, c.h)
		if c.err != ErrGSOBuffers {
			require.ErrorIs(t, err, c.err, c.name)
			require.Equal(t, 1, cnt, c.name)
		}
	}
}

// TestGSOSegmentsSingle protects the count of a plain packet: one, whatever
// its size, and a GSONone packet splits into a copy of itself.
func TestGSOSegmentsSingle(t *testing.T) {
	p := v4(0, 6, srcA4, dstB4, 0, nil, tcp(1, 2, data(3000)))
	n, err := GSOSegments(p, VnetHdr{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	b := [][]byte{make([]byte, 4000)}
	s := []int{0}
	n, err = SplitGSO(p, VnetHdr{Flags: VnetDataValid}, b, s)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, p, b[0][:s[0]])
}

// TestSplitGSOZeroAllocs protects the hot path: counting, charging and splitting
// allocate nothing beyond the caller's buffers.
func TestSplitGSOZeroAllocs(t *testing.T) {
	c := gsoCase{v6: true, tcp: true, flags: tcpACK | tcpPSH, mss: 1440, payload: data(60000)}
	p, h := c.super()
	bufs, sizes := splitBufs(1600)
	var raw [VnetHdrLen]byte
	require.NoError(t, h.Put(raw[:]))
	require.Zero(t, testing.AllocsPerRun(50, func() {
		sinkU32 = uint32(len(p))
		hh, _ := ParseVnetHdr(raw[:])
		n, _ := GSOSegments(p, hh)
		w, _ := GSOWireSize(p, hh)
		m, _ := SplitGSO(p, hh, bufs, sizes)
		sinkU32 += uint32(n + m + w)
	}))
}

// FuzzSplitGSO protects SplitGSO and GSOSegments against any packet and
// header: no panic, nothing written past the buffers, the two agree on the
// count, GSOWireSize equals the bytes SplitGSO writes, and every segment is
// a valid IP packet whose transport checksum verifies.
func FuzzSplitGSO(f *testing.F) {
	for i, c := range gsoCases() {
		if i%37 != 0 {
			continue
		}
		c.payload = c.payload[:min(len(c.payload), 3000)]
		p, h := c.super()
		var raw [VnetHdrLen]byte
		_ = h.Put(raw[:])
		f.Add(raw[:], p)
	}
	f.Add([]byte{1, 1, 0, 0, 1, 0, 20, 0, 16, 0}, []byte{0x45})
	bufs, sizes := splitBufs(1600)
	f.Fuzz(func(t *testing.T, raw, p []byte) {
		h, err := ParseVnetHdr(raw)
		if err != nil && err != ErrVnetHdr {
			return
		}
		cnt, cerr := GSOSegments(p, h)
		wire, werr := GSOWireSize(p, h)
		if werr != cerr {
			t.Fatalf("GSOWireSize %v, GSOSegments %v", werr, cerr)
		}
		n, err := SplitGSO(p, h, bufs, sizes)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with %d segments", err, n)
			}
			if cerr == nil && err != ErrGSOBuffers {
				t.Fatalf("GSOSegments nil, SplitGSO %v", err)
			}
			return
		}
		if cerr != nil || cnt != n {
			t.Fatalf("GSOSegments %d %v, SplitGSO %d", cnt, cerr, n)
		}
		total := 0
		for _, s := range sizes[:n] {
			total += s
		}
		if wire != total {
			t.Fatalf("GSOWireSize %d, SplitGSO wrote %d bytes", wire, total)
		}
		if !h.IsGSO() {
			return
		}
		for i := range n {
			s := bufs[i][:sizes[i]]
			if _, err := ECN(s); err != nil {
				t.Fatalf("segment %d: %v", i, err)
			}
			v6 := s[0]>>4 == 6
			l4, proto := 40, s[6]
			if !v6 {
				l4, proto = int(s[0]&15)*4, s[9]
			}
			at := l4 + 6
			if proto == protoTCP {
				at = l4 + 16
			}
			c := append([]byte(nil), s...)
			c[at], c[at+1] = 0, 0
			refChecksum(c, l4, v6, proto == protoTCP)
			if string(c) != string(s) {
				t.Fatalf("segment %d: transport checksum %x, want %x", i, s[at:at+2], c[at:at+2])
			}
		}
	})
}

// BenchmarkSplitGSO measures cutting a 64 KiB IPv4 TCP super-packet into
// 45 segments of 1448 bytes, checksums included; bytes/s is of the
// super-packet.
func BenchmarkSplitGSO(b *testing.B) {
	c := gsoCase{tcp: true, flags: tcpACK | tcpPSH, mss: 1448, payload: data(45 * 1448)}
	p, h := c.super()
	bufs, sizes := splitBufs(1600)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := SplitGSO(p, h, bufs, sizes); err != nil {
			b.Fatal(err)
		}
	}
}

// splitBufs returns 64 segment buffers of size bytes each, and 64 sizes,
// for SplitGSO.
func splitBufs(size int) ([][]byte, []int) {
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, size)
	}
	return bufs, make([]int, 64)
}
