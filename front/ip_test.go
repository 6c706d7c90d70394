package front_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// Packet builders: headers laid out field by field as RFC 791, 8200, 768
// and 9293 draw them.

// v4pkt builds an IPv4 packet with a correct header checksum.
func v4pkt(src, dst [4]byte, proto, tos uint8, l4 []byte) []byte {
	b := make([]byte, 20+len(l4))
	b[0], b[1] = 0x45, tos
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8], b[9] = 64, proto
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	var s uint32
	for i := 0; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	binary.BigEndian.PutUint16(b[10:], ^uint16(s))
	copy(b[20:], l4)
	return b
}

// v6pkt builds an IPv6 packet with traffic class tc.
func v6pkt(src, dst [16]byte, next, tc uint8, l4 []byte) []byte {
	b := make([]byte, 40+len(l4))
	b[0], b[1] = 0x60|tc>>4, tc<<4
	binary.BigEndian.PutUint16(b[4:], uint16(len(l4)))
	b[6], b[7] = next, 64
	copy(b[8:], src[:])
	copy(b[24:], dst[:])
	copy(b[40:], l4)
	return b
}

func udpSeg(sport, dport uint16, n int) []byte {
	b := make([]byte, 8+n)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)))
	return b
}

// pureACK is a 20-byte TCP header with only ACK set.
func pureACK(sport, dport uint16, ack uint32) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[8:], ack)
	b[12], b[13] = 5<<4, 0x10
	return b
}

// checksumOK verifies an IPv4 header checksum in full (RFC 1071).
func checksumOK(h []byte) bool {
	var s uint32
	for i := 0; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return s == 0xffff
}

var (
	hostA = [4]byte{10, 0, 0, 1}
	hostB = [4]byte{10, 0, 0, 2}
	peer  = [4]byte{192, 0, 2, 9}
)

func newPool(t testing.TB) *front.Pool {
	t.Helper()
	p, err := front.NewPool(front.PoolConfig{BufferBytes: 1600, MaxFree: 4096})
	require.NoError(t, err)
	return p
}

// buf copies pkt into a buffer from pool.
func buf(pool *front.Pool, pkt []byte) *front.Buf {
	b := pool.Get()
	b.B = b.B[:copy(b.B, pkt)]
	return b
}

// offer hands pkts to f one by one or as one batch, and returns the
// verdicts.
func offer[C any](t testing.TB, f *front.IP[C], pool *front.Pool, pkts [][]byte, batch bool) []aqm.Verdict {
	t.Helper()
	bs := make([]*front.Buf, len(pkts))
	for i, p := range pkts {
		bs[i] = buf(pool, p)
	}
	vs := make([]aqm.Verdict, len(bs))
	if batch {
		_, err := f.EnqueueBatch(bs, vs)
		require.NoError(t, err)
		return vs
	}
	for i, b := range bs {
		v, err := f.Enqueue(b)
		require.NoError(t, err)
		vs[i] = v
	}
	return vs
}

func newCakeIP(t testing.TB, cfg cake.Config, pool *front.Pool, c clock.Clock) (*front.IP[cake.Info], *cake.Queue[*front.Buf]) {
	t.Helper()
	q, err := cake.New(cfg, pool.Drop)
	require.NoError(t, err)
	f, err := front.NewIP(q, c, front.IPConfig{Pool: pool})
	require.NoError(t, err)
	return f, q
}

// cakeDetail reads the CAKE queue's Detail through the front's lock.
func cakeDetail[C any](f *front.IP[C]) cake.Detail {
	var d cake.Detail
	f.WithQueue(func(q aqm.Queue[*front.Buf]) { d = q.(interface{ Detail() cake.Detail }).Detail() })
	return d
}

// TestIPCakeACKFilter protects the ACK filter behind the IP front: a run of
// pure ACKs of one connection makes the filter drop the redundant ones, on
// the single and the batch path alike, their buffers come back through
// the pool's Drop, and nothing is lost; the plain front, which offers the
// same packets with a Meta alone, gives the filter nothing to compare.
func TestIPCakeACKFilter(t *testing.T) {
	var pkts [][]byte
	for i := range 20 {
		pkts = append(pkts, v4pkt(hostA, peer, 6, 0, pureACK(40000, 443, uint32(1000*(i+1)))))
	}
	for _, batch := range []bool{false, true} {
		pool := newPool(t)
		f, _ := newCakeIP(t, cake.Config{ACKFilter: cake.ACKFilterConservative, Seed: 1}, pool, clock.NewManual(clock.Epoch))
		offer(t, f, pool, pkts, batch)
		d := cakeDetail(f)
		require.GreaterOrEqual(t, d.FilteredACKs, uint64(len(pkts)-3), "batch=%v: all but the last few ACKs are redundant", batch)
		require.Equal(t, d.FilteredACKs, pool.Stats().Dropped.Packets, "every dropped ACK's buffer is back")
		require.Equal(t, len(pkts)-int(d.FilteredACKs), f.Len())
		st := f.Stats()
		require.Equal(t, st.Offered().Packets, uint64(len(pkts)))
	}
	// The trap the IP front removes: the plain front offers a Meta only.
	q, err := cake.New[uint64](cake.Config{ACKFilter: cake.ACKFilterConservative, Seed: 1}, nil)
	require.NoError(t, err)
	pf := newFront(t, q, clock.NewManual(clock.Epoch), front.Config{})
	h := iphdr.NewHasherWithKey(1, 2)
	for _, p := range pkts {
		m, err := h.Meta(p)
		require.NoError(t, err)
		enq(t, pf, aqm.Packet[uint64]{Meta: m})
	}
	require.Zero(t, q.Detail().FilteredACKs)
}

// TestIPCakeHostFairness protects host isolation behind the IP front:
// with dual-srchost, a host with one flow and a host with eight share the
// link half and half, on the single and the batch path alike (without the
// host hashes each flow would get a ninth). The departing packets' sources
// are read back with iphdr.ParseEndpoints.
func TestIPCakeHostFairness(t *testing.T) {
	var pkts [][]byte
	for i := range 400 {
		if i%2 == 0 {
			pkts = append(pkts, v4pkt(hostA, peer, 17, 0, udpSeg(5000, 9, 1000)))
		} else {
			pkts = append(pkts, v4pkt(hostB, peer, 17, 0, udpSeg(uint16(6000+i%16/2), 9, 1000)))
		}
	}
	for _, batch := range []bool{false, true} {
		pool := newPool(t)
		f, _ := newCakeIP(t, cake.Config{FlowMode: cake.DualSrcHost, TinMode: cake.BestEffort, Seed: 1}, pool, clock.NewManual(clock.Epoch))
		offer(t, f, pool, pkts, batch)
		require.Equal(t, 400, f.Len())
		fromA := 0
		for range 200 {
			b, err := f.Dequeue(t.Context())
			require.NoError(t, err)
			e, err := iphdr.ParseEndpoints(b.B)
			require.NoError(t, err)
			if e.Src.Addr() == netip.AddrFrom4(hostA) {
				fromA++
			}
			pool.Put(b)
		}
		require.InDelta(t, 100, fromA, 10, "batch=%v: host A's share of 200 departures", batch)
	}
}

// TestIPCakeDSCP protects the DiffServ tins behind the IP front: EF
// packets (IPv4 and IPv6) land in the Voice tin and CS1 in Bulk, on the
// single and the batch path alike.
func TestIPCakeDSCP(t *testing.T) {
	var pkts [][]byte
	a6, p6 := netip.MustParseAddr("2001:db8::1").As16(), netip.MustParseAddr("2001:db8::9").As16()
	for i := range 30 {
		switch i % 3 {
		case 0:
			pkts = append(pkts, v4pkt(hostA, peer, 17, 46<<2, udpSeg(1, 2, 100))) // EF
		case 1:
			pkts = append(pkts, v6pkt(a6, p6, 17, 46<<2, udpSeg(3, 4, 100))) // EF
		default:
			pkts = append(pkts, v4pkt(hostA, peer, 17, 8<<2, udpSeg(5, 6, 100))) // CS1
		}
	}
	for _, batch := range []bool{false, true} {
		pool := newPool(t)
		f, _ := newCakeIP(t, cake.Config{Seed: 1}, pool, clock.NewManual(clock.Epoch))
		offer(t, f, pool, pkts, batch)
		got := map[string]uint64{}
		d := cakeDetail(f)
		for _, tin := range d.Tins[:d.NumTins] {
			got[tin.Name] = tin.Packets
		}
		require.Equal(t, map[string]uint64{"Voice": 20, "Bulk": 10, "Best Effort": 0}, got, "batch=%v", batch)
	}
}

// wrappedCake embeds a CAKE queue and overrides Enqueue and EnqueueBatch
// (say, to count): an IP front must still classify every packet, on its
// batch path too, so the ACK filter keeps working.
type wrappedCake struct {
	*cake.Queue[*front.Buf]
	plain int
}

func (w *wrappedCake) Enqueue(p aqm.Packet[*front.Buf], now aqm.Time) aqm.Verdict {
	w.plain++
	return w.Queue.Enqueue(p, now)
}

func (w *wrappedCake) EnqueueBatch(ps []aqm.Packet[*front.Buf], vs []aqm.Verdict, now aqm.Time) int {
	w.plain += len(ps)
	return w.Queue.EnqueueBatch(ps, vs, now)
}

// plainWrapper embeds a FIFO and overrides Enqueue only, inheriting its
// EnqueueBatch.
type plainWrapper struct {
	*fifo.Queue[*front.Buf]
}

func (w plainWrapper) Enqueue(p aqm.Packet[*front.Buf], now aqm.Time) aqm.Verdict {
	return w.Queue.Enqueue(p, now)
}

// TestIPClassifiesBeforeTheQueue protects the rule that the front
// classifies, not an enqueue method the queue may inherit: a wrapper
// around CAKE whose Enqueue and EnqueueBatch would offer a Meta alone
// still gets ACK-filtered packets on the batch path, and a wrapper around
// a FIFO that inherits its EnqueueBatch receives every packet with the
// Meta iphdr computes.
func TestIPClassifiesBeforeTheQueue(t *testing.T) {
	var acks [][]byte
	for i := range 10 {
		acks = append(acks, v4pkt(hostA, peer, 6, 0, pureACK(1, 2, uint32(i+1))))
	}
	pool := newPool(t)
	cq, err := cake.New(cake.Config{ACKFilter: cake.ACKFilterConservative, Seed: 1}, pool.Drop)
	require.NoError(t, err)
	w := &wrappedCake{Queue: cq}
	f, err := front.NewIP(w, nil, front.IPConfig{Pool: pool})
	require.NoError(t, err)
	offer(t, f, pool, acks, true)
	require.Positive(t, cq.Detail().FilteredACKs)
	require.Zero(t, w.plain, "the Meta-only paths are never taken")

	fq, err := fifo.New[*front.Buf](fifo.Config{}, nil)
	require.NoError(t, err)
	h := iphdr.NewHasherWithKey(3, 4)
	pf, err := front.NewIP(front.HashIP(plainWrapper{fq}, h), clock.NewManual(clock.Epoch), front.IPConfig{Pool: pool})
	require.NoError(t, err)
	pkts := [][]byte{
		v4pkt(hostA, peer, 17, 0x02, udpSeg(1, 2, 10)),
		v4pkt(hostB, peer, 6, 0x01, pureACK(3, 4, 5)),
		{0x99, 1, 2},
	}
	offer(t, pf, pool, pkts, true)
	for _, p := range pkts {
		want, _ := h.Meta(p)
		pf.WithQueue(func(q aqm.Queue[*front.Buf]) {
			got, ok := q.Dequeue(1)
			require.True(t, ok)
			require.Equal(t, want, got.Meta)
		})
	}
	require.Equal(t, uint64(1), pf.Detail().NotIP.Packets)
}

// TestNewIPRefusals protects the compositions NewIP refuses, each with a
// clear error: a nil queue, a queue with its own classifier behind HashIP
// (CAKE would lose hosts, tins and ACKs), a staged front, and a front rate
// in front of a queue that paces itself (CAKE), also later through
// SetRate and Reconfigure; a FIFO takes a rate.
func TestNewIPRefusals(t *testing.T) {
	pool := newPool(t)
	cq, err := cake.New(cake.Config{Rate: 10 * aqm.Mbit}, pool.Drop)
	require.NoError(t, err)
	_, err = front.NewIP[cake.Info](nil, nil, front.IPConfig{})
	require.ErrorIs(t, err, front.ErrNilQueue)
	_, err = front.NewIP(front.HashIP(nil, iphdr.NewHasher()), nil, front.IPConfig{})
	require.ErrorIs(t, err, front.ErrNilQueue)
	_, err = front.NewIP(front.HashIP(cq, iphdr.NewHasher()), nil, front.IPConfig{})
	require.ErrorIs(t, err, front.ErrClassifiesIP)
	_, err = front.NewIP(front.HashIP(&wrappedCake{Queue: cq}, iphdr.NewHasher()), nil, front.IPConfig{})
	require.ErrorIs(t, err, front.ErrClassifiesIP, "an embedded classifier is found too")

	field := func(err error) []string {
		var fields []string
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var ce *aqm.ConfigError
			if errors.As(e, &ce) {
				fields = append(fields, ce.Field)
			}
		}
		return fields
	}
	_, err = front.NewIP(cq, nil, front.IPConfig{Config: front.Config{Rate: 10 * aqm.Mbit, Staged: true, WakeSlack: -1}})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.ElementsMatch(t, []string{"WakeSlack", "Staged", "Rate"}, field(err))
	require.Contains(t, err.Error(), "set the rate on the queue")

	f, err := front.NewIP(cq, nil, front.IPConfig{Pool: pool})
	require.NoError(t, err)
	err = f.SetRate(aqm.Mbit)
	require.Equal(t, []string{"Rate"}, field(err))
	require.NoError(t, f.SetRate(0))
	err = f.Reconfigure(front.IPConfig{Config: front.Config{Rate: aqm.Mbit}})
	require.Equal(t, []string{"Rate"}, field(err))
	require.Zero(t, f.Config().Rate)

	fq, err := fifo.New[*front.Buf](fifo.Config{}, nil)
	require.NoError(t, err)
	ff, err := front.NewIP(front.HashIP(fq, iphdr.NewHasher()), nil, front.IPConfig{Config: front.Config{Rate: aqm.Mbit}})
	require.NoError(t, err)
	require.NoError(t, ff.SetRate(2*aqm.Mbit))
	require.Equal(t, 2*aqm.Mbit, ff.Config().Rate)
	require.NotNil(t, ff.Config().Pool, "a default pool")
}

// markingFIFO marks every packet it hands out CE, as an AQM under
// congestion would.
type markingFIFO struct{ *fifo.Queue[*front.Buf] }

func (q markingFIFO) Dequeue(now aqm.Time) (aqm.Packet[*front.Buf], bool) {
	p, ok := q.Queue.Dequeue(now)
	p.ECN = aqm.CE
	return p, ok
}

func (q markingFIFO) DequeueBatch(buf []aqm.Packet[*front.Buf], now aqm.Time) int {
	return aqm.DequeueLoop[*front.Buf](q, buf, now)
}

// TestIPWritesCE protects marking on the way out, through every consumer:
// an ECT(0) IPv4 packet leaves with CE and a valid checksum, an ECT(1)
// IPv6 packet with CE, a packet that arrived with CE unchanged and
// uncounted, and a Not-ECT or unreadable packet the queue marked is
// dropped (its buffer back in the pool), never sent unmarked.
func TestIPWritesCE(t *testing.T) {
	a6, p6 := netip.MustParseAddr("2001:db8::1").As16(), netip.MustParseAddr("2001:db8::9").As16()
	pkts := [][]byte{
		v4pkt(hostA, peer, 17, 0x02, udpSeg(1, 2, 40)), // ECT(0)
		v6pkt(a6, p6, 17, 0x01, udpSeg(1, 2, 40)),      // ECT(1)
		v4pkt(hostA, peer, 17, 0x03, udpSeg(1, 2, 40)), // CE already
		v4pkt(hostA, peer, 17, 0x00, udpSeg(1, 2, 40)), // Not-ECT
		{0x00, 0x01, 0x02},                             // not IP
	}
	consumers := map[string]func(*front.IP[front.NoInfo]) []*front.Buf{
		"DequeueBatch": func(f *front.IP[front.NoInfo]) []*front.Buf {
			bs := make([]*front.Buf, 8)
			n, err := f.DequeueBatch(t.Context(), bs)
			require.NoError(t, err)
			return bs[:n]
		},
		"TryDequeueBatch": func(f *front.IP[front.NoInfo]) []*front.Buf {
			bs := make([]*front.Buf, 8)
			n, wait := f.TryDequeueBatch(bs)
			require.Zero(t, wait)
			return bs[:n]
		},
		"Dequeue": func(f *front.IP[front.NoInfo]) []*front.Buf {
			var out []*front.Buf
			f.Close()
			for range 3 {
				b, err := f.Dequeue(t.Context())
				require.NoError(t, err)
				out = append(out, b)
			}
			_, err := f.Dequeue(t.Context()) // drops the two it cannot mark
			require.ErrorIs(t, err, front.ErrClosed)
			return out
		},
		"Run": func(f *front.IP[front.NoInfo]) []*front.Buf {
			var out []*front.Buf
			f.Close()
			require.NoError(t, f.Run(t.Context(), func(bs []*front.Buf) {
				for _, b := range bs {
					out = append(out, &front.Buf{B: append([]byte(nil), b.B...)})
				}
			}))
			return out
		},
	}
	for name, take := range consumers {
		t.Run(name, func(t *testing.T) {
			pool := newPool(t)
			fq, err := fifo.New[*front.Buf](fifo.Config{}, nil)
			require.NoError(t, err)
			f, err := front.NewIP(front.HashIP(markingFIFO{fq}, iphdr.NewHasher()), clock.NewManual(clock.Epoch), front.IPConfig{Pool: pool})
			require.NoError(t, err)
			offer(t, f, pool, pkts, false)
			free := pool.Stats().Free
			got := take(f)
			require.Len(t, got, 3)
			for i, b := range got {
				e, err := iphdr.ECN(b.B)
				require.NoError(t, err)
				require.Equal(t, aqm.CE, e, "packet %d", i)
				want := append([]byte(nil), pkts[i]...)
				if i == 0 {
					require.True(t, checksumOK(b.B))
					want[1] |= 3
					binary.BigEndian.PutUint16(want[10:], binary.BigEndian.Uint16(b.B[10:]))
				} else if i == 1 {
					want[1] |= 0x30
				}
				require.Equal(t, want, b.B, "only the ECN bits and the checksum change")
			}
			d := f.Detail()
			require.Equal(t, uint64(2), d.RewrittenCE.Packets)
			require.Equal(t, uint64(2), d.DroppedUnmarkable.Packets)
			require.Equal(t, uint64(1), d.NotIP.Packets)
			extra := 2 // the two dropped buffers
			if name == "Run" {
				extra += 3 // Run puts what it sent back too
			}
			require.Equal(t, free+extra, pool.Stats().Free)
		})
	}
}

// TestIPRefusedBuffersReturn protects buffer ownership: the front takes
// every buffer it is given, and each refused one (a full queue, or after
// Close) is back in the pool at once and counted; with what is queued and
// what the caller holds, every buffer the pool allocated is accounted for.
func TestIPRefusedBuffersReturn(t *testing.T) {
	for _, batch := range []bool{false, true} {
		pool := newPool(t)
		q, err := fifo.New[*front.Buf](fifo.Config{LimitPackets: 4}, pool.Drop)
		require.NoError(t, err)
		f, err := front.NewIP(front.HashIP(q, iphdr.NewHasher()), nil, front.IPConfig{Pool: pool})
		require.NoError(t, err)
		var pkts [][]byte
		for range 10 {
			pkts = append(pkts, v4pkt(hostA, peer, 17, 0, udpSeg(1, 2, 100)))
		}
		vs := offer(t, f, pool, pkts, batch)
		acc := 0
		for _, v := range vs {
			if v.Accepted() {
				acc++
			}
		}
		require.Equal(t, 4, acc)
		d := f.Detail()
		require.Equal(t, uint64(6), d.Refused.Packets)
		require.Equal(t, uint64(6*128), d.Refused.Bytes)
		require.Equal(t, 6, d.Pool.Free)
		require.Equal(t, d.Pool.Allocated, uint64(d.Pool.Free+f.Len()))

		f.Close()
		b := buf(pool, pkts[0])
		v, err := f.Enqueue(b)
		require.ErrorIs(t, err, front.ErrClosed)
		require.False(t, v.Accepted())
		n, err := f.EnqueueBatch([]*front.Buf{buf(pool, pkts[0]), buf(pool, pkts[1])}, make([]aqm.Verdict, 2))
		require.ErrorIs(t, err, front.ErrClosed)
		require.Zero(t, n)
		d = f.Detail()
		require.Equal(t, uint64(3), d.RefusedClosed.Packets)
		require.Equal(t, 6, d.Pool.Free, "the closed refusals reused and returned the same buffers")
		require.Equal(t, 4, f.Flush(nil))
		d = f.Detail()
		require.Equal(t, 10, d.Pool.Free)
		require.Equal(t, uint64(10), d.Pool.Allocated)
		require.Equal(t, uint64(4), d.Pool.Dropped.Packets)
	}
}

// TestIPConcurrentConservation protects buffer ownership under load (run
// it with -race): producers on the single and the batch path and Run on
// CAKE with the ACK filter and a rate; after Close and the drain, every
// buffer the pool allocated is on its free list exactly once.
func TestIPConcurrentConservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pool := newPool(t)
		f, _ := newCakeIP(t, cake.Config{Rate: 20 * aqm.Mbit, ACKFilter: cake.ACKFilterAggressive, LimitPackets: 64, Seed: 1}, pool, bubbleClock())
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 200 {
					var p []byte
					if i%3 == 0 {
						p = v4pkt(hostA, peer, 6, 0, pureACK(uint16(g), 80, uint32(i)))
					} else {
						p = v4pkt(hostB, peer, 17, uint8(i%64)<<2, udpSeg(uint16(g), 9, 1200))
					}
					if g%2 == 0 {
						_, _ = f.Enqueue(buf(pool, p))
					} else {
						_, _ = f.EnqueueBatch([]*front.Buf{buf(pool, p), buf(pool, p)}, make([]aqm.Verdict, 2))
					}
					if i%10 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		sent := 0
		done := make(chan error)
		go func() {
			done <- f.Run(context.Background(), func(bs []*front.Buf) { sent += len(bs) })
		}()
		wg.Wait()
		f.Close()
		require.NoError(t, <-done)
		st, d := f.Stats(), f.Detail()
		require.Equal(t, uint64(sent), st.Dequeued.Packets)
		require.Positive(t, d.Pool.Dropped.Packets+d.Refused.Packets, "the load made the queue drop")
		require.Equal(t, d.Pool.Allocated, uint64(d.Pool.Free))
		seen := map[*front.Buf]bool{}
		for range d.Pool.Free {
			b := pool.Get()
			require.False(t, seen[b], "a buffer on the free list twice")
			seen[b] = true
		}
		require.Equal(t, d.Pool.Allocated, pool.Stats().Allocated, "the free list held them all")
	})
}

// TestIPAllocs protects the IP front's steady state from allocating:
// Enqueue, EnqueueBatch, TryDequeueBatch and DequeueBatch with the pool's
// Get and Put, behind CAKE (its own classifier) and FQ-CoDel (HashIP).
func TestIPAllocs(t *testing.T) {
	pkt := v4pkt(hostA, peer, 6, 0x02, pureACK(1, 2, 3))
	pool := newPool(t)
	cf, _ := newCakeIP(t, cake.Config{Seed: 1}, pool, clock.NewManual(clock.Epoch))
	fqq, err := fq.NewCoDel[*front.Buf](fq.CoDelConfig{Seed: 1}, pool.Drop)
	require.NoError(t, err)
	ff, err := front.NewIP(front.HashIP(fqq, iphdr.NewHasherWithKey(1, 2)), clock.NewManual(clock.Epoch), front.IPConfig{Pool: pool})
	require.NoError(t, err)
	type ipFront interface {
		Enqueue(*front.Buf) (aqm.Verdict, error)
		EnqueueBatch([]*front.Buf, []aqm.Verdict) (int, error)
		TryDequeueBatch([]*front.Buf) (int, time.Duration)
		DequeueBatch(context.Context, []*front.Buf) (int, error)
	}
	in := make([]*front.Buf, 8)
	out := make([]*front.Buf, 8)
	vs := make([]aqm.Verdict, 8)
	ctx := context.Background()
	for name, f := range map[string]ipFront{"cake": cf, "fq-codel": ff} {
		t.Run(name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(500, func() {
				_, _ = f.Enqueue(buf(pool, pkt))
				for i := range in {
					in[i] = buf(pool, pkt)
				}
				_, _ = f.EnqueueBatch(in, vs)
				n, _ := f.TryDequeueBatch(out[:4])
				for _, b := range out[:n] {
					pool.Put(b)
				}
				n, _ = f.DequeueBatch(ctx, out)
				for _, b := range out[:n] {
					pool.Put(b)
				}
			})
			require.Zero(t, allocs)
		})
	}
}

// TestPool protects the pool: Get allocates only when nothing is free,
// Put keeps at most MaxFree buffers and only full-size ones, Drop takes a
// queue's packet back and counts it, Get and Put allocate nothing in the
// steady state, and bad sizes are refused naming the field.
func TestPool(t *testing.T) {
	p, err := front.NewPool(front.PoolConfig{BufferBytes: 100, MaxFree: 2})
	require.NoError(t, err)
	a, b, c := p.Get(), p.Get(), p.Get()
	require.Len(t, a.B, 100)
	a.B = a.B[:10]
	p.Put(a)
	p.Put(b)
	p.Put(c) // beyond MaxFree
	p.Put(nil)
	p.Put(&front.Buf{B: make([]byte, 50)}) // not one of ours
	st := p.Stats()
	require.Equal(t, front.PoolStats{BufferBytes: 100, Free: 2, Allocated: 3, Discarded: 2}, st)
	got := p.Get()
	require.Len(t, got.B, 100, "Put restored the full length")
	p.Drop(aqm.Packet[*front.Buf]{Payload: got, Meta: aqm.Meta{Size: 60}}, aqm.DroppedEarly)
	require.Equal(t, aqm.Count{Packets: 1, Bytes: 60}, p.Stats().Dropped)
	require.Zero(t, testing.AllocsPerRun(1000, func() { p.Put(p.Get()) }))
	require.Equal(t, uint64(3), p.Stats().Allocated)

	d, err := front.NewPool(front.PoolConfig{})
	require.NoError(t, err)
	require.Len(t, d.Get().B, front.DefaultBufferBytes)
	_, err = front.NewPool(front.PoolConfig{BufferBytes: -1, MaxFree: front.MaxPoolFree + 1})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.ErrorContains(t, err, "BufferBytes")
	require.ErrorContains(t, err, "MaxFree")
}

// TestIPMetrics protects the IP front's metric names: the queue's Stats,
// the front's Detail, then its own counters and the pool's, each once.
func TestIPMetrics(t *testing.T) {
	pool := newPool(t)
	f, _ := newCakeIP(t, cake.Config{Seed: 1}, pool, nil)
	offer(t, f, pool, [][]byte{{1, 2, 3}}, false)
	got := map[string]float64{}
	for m := range f.Metrics() {
		_, dup := got[m.Name]
		require.False(t, dup, m.Name)
		got[m.Name] = m.Value
	}
	for _, name := range []string{"enqueued_packets", "front_wakeups", "front_wake_slack_seconds", "front_unparsed_packets",
		"front_refused_packets", "front_rewritten_ce_packets", "front_dropped_unmarkable_packets",
		"front_pool_free_buffers", "front_pool_allocated_buffers", "front_pool_dropped_packets"} {
		require.Contains(t, got, name)
	}
	require.Equal(t, 1.0, got["front_unparsed_packets"])
	require.Equal(t, 1.0, got["enqueued_packets"])
}
