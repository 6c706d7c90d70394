package front

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/iphdr"
)

// TestGSOPolicySplit protects the split rule: auto keeps a super-packet
// whose wire bytes take at most keepTime (2 ms) at the rate and
// splits a longer one, keeps everything unshaped, and split and keep
// ignore rate and size.
func TestGSOPolicySplit(t *testing.T) {
	const full = 65535 + 44*40 // a 64 KiB TCP super-packet of 45 segments on the wire
	cases := []struct {
		p    GSOPolicy
		rate aqm.Rate
		wire int
		want bool
	}{
		{GSOAuto, 0, full, false},
		{GSOAuto, 10 * aqm.Gbit, full, false},
		{GSOAuto, aqm.Gbit, full, false},             // 0.54 ms
		{GSOAuto, 500 * aqm.Mbit, full, false},       // 1.08 ms
		{GSOAuto, 300 * aqm.Mbit, full, false},       // 1.79 ms
		{GSOAuto, 200 * aqm.Mbit, full, true},        // 2.69 ms
		{GSOAuto, 200 * aqm.Mbit, 50_000, false},     // exactly 2 ms
		{GSOAuto, 200 * aqm.Mbit, 50_001, true},      // just over
		{GSOAuto, 50 * aqm.Mbit, full, true},         // 10.8 ms
		{GSOAuto, 50 * aqm.Mbit, 3 * 1500, false},    // 0.72 ms
		{GSOAuto, 50 * aqm.Mbit, 12_500, false},      // 2 ms
		{GSOAuto, 50 * aqm.Mbit, 12_501, true},       //
		{GSOAuto, aqm.Mbit, 2 * 1500, true},          // 24 ms
		{GSOAuto, aqm.Kbit, 100, true},               // 800 ms
		{GSOAuto, aqm.Rate(^uint64(0)), full, false}, // no overflow
		{GSOAuto, 50 * aqm.Mbit, 0, false},
		{GSOSplit, 0, full, true},
		{GSOSplit, 10 * aqm.Gbit, 3000, true},
		{GSOKeep, 0, full, false},
		{GSOKeep, aqm.Mbit, full, false},
	}
	for _, c := range cases {
		if got := c.p.Split(c.rate, c.wire); got != c.want {
			t.Errorf("%v.Split(%v, %d) = %v, want %v", c.p, c.rate, c.wire, got, c.want)
		}
	}
	if GSOAuto.String() != "auto" || GSOSplit.String() != "split" || GSOKeep.String() != "keep" {
		t.Errorf("names %q %q %q", GSOAuto, GSOSplit, GSOKeep)
	}
}

// TestGSOKeepBytes protects the size bound behind GSOAuto: the bytes
// keepTime carries at the rate, exact at the rates a link has and
// without overflow at the largest.
func TestGSOKeepBytes(t *testing.T) {
	for _, c := range []struct {
		rate aqm.Rate
		want uint64
	}{
		{0, 0},
		{8 * aqm.Kbit, 2},
		{50 * aqm.Mbit, 12_500},
		{500 * aqm.Mbit, 125_000},
		{aqm.Gbit, 250_000},
		{aqm.Rate(^uint64(0)), ^uint64(0) / 4000},
	} {
		if got := keepBytes(c.rate); got != c.want {
			t.Errorf("keepBytes(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
}

// markSome is a FIFO that marks CE the packets whose arrival index is in
// mark, and records the segment count of each arrival.
type markSome struct {
	*fifo.Queue[*Buf]
	mark map[int]bool
	segs []int
}

func (q *markSome) Enqueue(p aqm.Packet[*Buf], now aqm.Time) aqm.Verdict {
	i := len(q.segs)
	q.segs = append(q.segs, p.SegmentCount())
	if q.mark[i] {
		p.ECN = aqm.CE
	}
	return q.Queue.Enqueue(p, now)
}

// superUDP4 is a virtio-net header and an IPv4 UDP GSO super-packet of
// segs datagrams of 1000 bytes, ECT(0).
func superUDP4(segs int) []byte { return superUDP4Of(segs, 1000) }

// superUDP4Of is superUDP4 with datagrams of mss bytes.
func superUDP4Of(segs, mss int) []byte {
	ip := make([]byte, 28+mss*segs)
	ip[0], ip[1], ip[8], ip[9] = 0x45, 2, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	copy(ip[12:], []byte{10, 0, 0, 1, 192, 0, 2, 9})
	binary.BigEndian.PutUint16(ip[10:], ^ipSum(ip[:20]))
	binary.BigEndian.PutUint16(ip[20:], 4000)
	binary.BigEndian.PutUint16(ip[22:], 443)
	binary.BigEndian.PutUint16(ip[24:], uint16(len(ip)-20))
	h := iphdr.VnetHdr{Flags: iphdr.VnetNeedsCsum, GSOType: iphdr.GSOUDPL4, GSOSize: uint16(mss), CsumStart: 20, CsumOffset: 6}
	b := make([]byte, iphdr.VnetHdrLen)
	_ = h.Put(b)
	return append(b, ip...)
}

func ipSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestIPVnetKeep protects an IP front over buffers with a virtio-net
// header: the queue sees each super-packet's segment count in
// Meta.Segments and the IP size without the header, and a mark the queue
// gives a kept super-packet is written into its IP header (checksum right)
// so that every one of its segments carries CE, while the segments of the
// unmarked super-packets beside it carry none: the front coalesces
// nothing, so a mark covers exactly its packet's segments.
func TestIPVnetKeep(t *testing.T) {
	pool, err := NewPool(PoolConfig{BufferBytes: iphdr.VnetHdrLen + 65535})
	require.NoError(t, err)
	fq, err := fifo.New[*Buf](fifo.Config{LimitPackets: 16}, pool.Drop)
	require.NoError(t, err)
	q := &markSome{Queue: fq, mark: map[int]bool{1: true}}
	f, err := NewIP(HashIP(q, iphdr.NewHasherWithKey(1, 2)), clock.NewManual(clock.Epoch), IPConfig{Pool: pool, VnetHdr: true})
	require.NoError(t, err)
	counts := []int{3, 5, 1, 7}
	for _, n := range counts {
		b := pool.Get()
		b.B = b.B[:copy(b.B, superUDP4(n))]
		v, err := f.Enqueue(b)
		require.NoError(t, err)
		require.True(t, v.Accepted())
	}
	require.Equal(t, counts, q.segs)
	bs := make([]*Buf, 8)
	n, _ := f.TryDequeueBatch(bs)
	require.Equal(t, len(counts), n)
	segBufs := make([][]byte, 8)
	for i := range segBufs {
		segBufs[i] = make([]byte, 1100)
	}
	sizes := make([]int, 8)
	for i, b := range bs[:n] {
		h, err := iphdr.ParseVnetHdr(b.B)
		require.NoError(t, err)
		ip := b.B[iphdr.VnetHdrLen:]
		require.Equal(t, uint16(0xffff), ipSum(ip[:20]), "packet %d: IPv4 checksum", i)
		k, err := iphdr.SplitGSO(ip, h, segBufs, sizes)
		require.NoError(t, err)
		require.Equal(t, counts[i], k)
		for j := range k {
			ce := segBufs[j][1]&3 == 3
			require.Equal(t, i == 1, ce, "packet %d segment %d: CE %v", i, j, ce)
		}
		pool.Put(b)
	}
	d := f.Detail()
	require.Equal(t, uint64(1), d.RewrittenCE.Packets)
	require.Equal(t, uint64(5*(1000+28)), d.RewrittenCE.Bytes, "a kept super-packet counts its segments' wire bytes")
	require.Zero(t, d.NotIP.Packets)
	st := f.Stats()
	require.Equal(t, uint64(16*28+16*1000), st.Dequeued.Bytes, "wire bytes of 16 segments")
}

// TestIPVnetKeepRate protects the rate of an IP front that keeps GSO
// super-packets whole: it charges each one the bytes its segments put on
// the wire, one set of IP and UDP headers per segment, so that at no
// moment has it released more wire bytes than rate × time + burst + one
// packet. Charged only its own length, a super-packet of 40 datagrams of
// 100 bytes would cost 4028 bytes for 5120 on the wire, 27 % over the rate.
func TestIPVnetKeepRate(t *testing.T) {
	const (
		segs, mss = 40, 100
		wire      = segs * (mss + 28)
		rate      = 8 * aqm.Mbit // one byte per microsecond
		burst     = 3000
		steps     = 200 // of 1 ms
	)
	pool, err := NewPool(PoolConfig{BufferBytes: iphdr.VnetHdrLen + 65535, MaxFree: 128})
	require.NoError(t, err)
	q, err := fifo.New[*Buf](fifo.Config{LimitPackets: 100000}, pool.Drop)
	require.NoError(t, err)
	clk := clock.NewManual(clock.Epoch)
	f, err := NewIP(HashIP(q, iphdr.NewHasherWithKey(1, 2)), clk, IPConfig{Config: Config{Rate: rate, BurstBytes: burst}, Pool: pool, VnetHdr: true})
	require.NoError(t, err)
	pkt := superUDP4Of(segs, mss)
	for range 80 {
		b := pool.Get()
		b.B = b.B[:copy(b.B, pkt)]
		v, err := f.Enqueue(b)
		require.NoError(t, err)
		require.True(t, v.Accepted())
	}
	bs := make([]*Buf, 16)
	released := 0
	for step := 1; step <= steps; step++ {
		clk.Advance(time.Millisecond)
		for {
			n, _ := f.TryDequeueBatch(bs)
			if n == 0 {
				break
			}
			for _, b := range bs[:n] {
				h, err := iphdr.ParseVnetHdr(b.B)
				require.NoError(t, err)
				w, err := iphdr.GSOWireSize(b.B[iphdr.VnetHdrLen:], h)
				require.NoError(t, err)
				require.Equal(t, wire, w)
				released += w
				pool.Put(b)
			}
		}
		limit := step*1000 + burst + wire
		require.LessOrEqual(t, released, limit, "after %d ms: %d wire bytes released, rate allows %d", step, released, limit)
	}
	require.GreaterOrEqual(t, released, steps*1000-wire, "the front must still deliver its rate")
	require.Equal(t, uint64(released), f.Stats().Dequeued.Bytes)
}
