package front_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

func newFIFO(t testing.TB, cfg fifo.Config, onDrop aqm.DropFunc[uint64]) *fifo.Queue[uint64] {
	t.Helper()
	q, err := fifo.New(cfg, onDrop)
	require.NoError(t, err)
	return q
}

func newFront(t testing.TB, q aqm.Queue[uint64], c clock.Clock, cfg front.Config) *front.Front[uint64] {
	t.Helper()
	f, err := front.New(q, c, cfg)
	require.NoError(t, err)
	return f
}

// bubbleClock is a clock for synctest bubbles, whose fake time is not the
// process's (see clock.Mono).
func bubbleClock() clock.Clock { return clock.Since(time.Now()) }

func pkt(payload uint64, size uint32) aqm.Packet[uint64] {
	return aqm.Packet[uint64]{Payload: payload, Meta: aqm.Meta{Size: size}}
}

func enq(t testing.TB, f *front.Front[uint64], p aqm.Packet[uint64]) aqm.Verdict {
	t.Helper()
	v, err := f.Enqueue(p)
	require.NoError(t, err)
	return v
}

// countingClock counts its readings; it is safe for concurrent use.
type countingClock struct {
	reads atomic.Int64
	mono  *clock.Mono
}

func (c *countingClock) Now() aqm.Time {
	c.reads.Add(1)
	return c.mono.Now()
}

// TestClockReadOncePerCall protects the front's clock discipline: one
// reading per Enqueue, per EnqueueBatch, and per DequeueBatch however many
// packets they move.
func TestClockReadOncePerCall(t *testing.T) {
	c := &countingClock{mono: clock.NewMono()}
	f := newFront(t, newFIFO(t, fifo.Config{}, nil), c, front.Config{})
	for i := range 10 {
		enq(t, f, pkt(uint64(i), 1))
	}
	require.EqualValues(t, 10, c.reads.Load())
	ps := []aqm.Packet[uint64]{pkt(10, 1), pkt(11, 1), pkt(12, 1)}
	vs := make([]aqm.Verdict, 3)
	n, err := f.EnqueueBatch(ps, vs)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.EqualValues(t, 11, c.reads.Load())
	buf := make([]aqm.Packet[uint64], 16)
	n, err = f.DequeueBatch(t.Context(), buf)
	require.NoError(t, err)
	require.Equal(t, 13, n)
	require.EqualValues(t, 12, c.reads.Load())
	for i := range n {
		require.Equal(t, uint64(i), buf[i].Payload, "FIFO order kept")
	}
}

// TestCoarseClockRefresh protects the default clock's freshness rules: the
// consumer refreshes it on every look, and a producer refreshes it when it
// finds the queue empty, but not otherwise.
func TestCoarseClockRefresh(t *testing.T) {
	src := clock.NewManual(0)
	c := clock.NewCoarse(src)
	f := newFront(t, newFIFO(t, fifo.Config{}, nil), c, front.Config{})
	src.Advance(time.Second)
	enq(t, f, pkt(1, 1)) // into an empty queue: refreshed
	src.Advance(time.Second)
	enq(t, f, pkt(2, 1)) // not empty: the cached reading
	buf := make([]aqm.Packet[uint64], 4)
	n, _ := f.TryDequeueBatch(buf)
	require.Equal(t, 2, n)
	require.Equal(t, clock.Epoch.Add(time.Second), buf[0].Enqueued)
	require.Equal(t, clock.Epoch.Add(time.Second), buf[1].Enqueued)
	require.Equal(t, clock.Epoch.Add(2*time.Second), c.Now(), "the consumer refreshed")
}

// TestNew protects construction: a nil queue (plain or a typed nil
// pointer) is an error, not a later panic; a bad Config is refused, naming
// the field; the nil clock is a working default.
func TestNew(t *testing.T) {
	_, err := front.New[uint64](nil, nil, front.Config{})
	require.ErrorIs(t, err, front.ErrNilQueue)
	var nilFIFO *fifo.Queue[uint64]
	_, err = front.New[uint64](nilFIFO, nil, front.Config{})
	require.ErrorIs(t, err, front.ErrNilQueue)
	_, err = front.New[uint64](newFIFO(t, fifo.Config{}, nil), nil, front.Config{BurstBytes: -1})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.ErrorContains(t, err, "front: BurstBytes (-1) must be in [0, 1073741824]")
	f := newFront(t, newFIFO(t, fifo.Config{}, nil), nil, front.Config{})
	enq(t, f, pkt(1, 1))
	p, err := f.Dequeue(t.Context())
	require.NoError(t, err)
	require.Positive(t, p.Enqueued)

	_, err = front.NewSharded[uint64](nil, nil, front.ShardedConfig{})
	require.ErrorIs(t, err, front.ErrNilQueue)
	_, err = front.NewSharded(func(int) (aqm.Queue[uint64], error) { return nilFIFO, nil }, nil, front.ShardedConfig{Shards: 2})
	require.ErrorIs(t, err, front.ErrNilQueue)
	boom := errors.New("boom")
	_, err = front.NewSharded(func(int) (aqm.Queue[uint64], error) { return nil, boom }, nil, front.ShardedConfig{Shards: 2})
	require.ErrorIs(t, err, boom)
}

// TestConfig protects the Config shape: Validate names every bad field and
// does not modify its receiver; Config() reports the effective burst;
// Reconfigure refuses a bad Config without changing anything; a zero
// BurstBytes follows the rate.
func TestConfig(t *testing.T) {
	bad := front.ShardedConfig{Shards: -1, Config: front.Config{Rate: aqm.Mbit, BurstBytes: front.MaxBurstBytes + 1}}
	cp := bad
	err := bad.Validate()
	require.Equal(t, cp, bad, "Validate does not mutate")
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, field := range []string{"Shards", "BurstBytes"} {
		require.ErrorContains(t, err, "front: "+field+" (")
	}
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))
	require.NoError(t, front.Config{Rate: 1, BurstBytes: front.MaxBurstBytes}.Validate())

	f := newFront(t, newFIFO(t, fifo.Config{}, nil), nil, front.Config{Rate: 8 * aqm.Mbit})
	require.Equal(t, front.Config{Rate: 8 * aqm.Mbit, BurstBytes: 5000}, f.Config())
	require.ErrorIs(t, f.Reconfigure(front.Config{BurstBytes: -5}), aqm.ErrInvalidConfig)
	require.Equal(t, 8*aqm.Mbit, f.Detail().Rate, "a refused Reconfigure changes nothing")
	require.NoError(t, f.Reconfigure(front.Config{Rate: 100 * aqm.Mbit}))
	require.Equal(t, 62500, f.Detail().BurstBytes, "the default burst follows the rate: 100 Mbit/s × 5 ms")
	f.SetRate(10 * aqm.Gbit)
	require.Equal(t, front.Config{Rate: 10 * aqm.Gbit, BurstBytes: 6_250_000}, f.Config())
	require.NoError(t, f.Reconfigure(front.Config{Rate: aqm.Gbit, BurstBytes: 9000}))
	f.SetRate(2 * aqm.Gbit)
	require.Equal(t, 9000, f.Config().BurstBytes, "an explicit burst stays")
}

// TestBlockingDequeue protects the blocking path in virtual time: a consumer
// blocked on an empty queue gets a packet at the instant it is enqueued,
// returns the context's error when cancelled, and ErrClosed after Close once
// the queue is drained; Enqueue after Close is refused with ErrClosed.
// synctest fails the test if any goroutine is left.
func TestBlockingDequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := bubbleClock()
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), clk, front.Config{})
		t0 := clk.Now()
		go func() {
			time.Sleep(time.Second)
			enq(t, f, pkt(7, 1))
		}()
		p, err := f.Dequeue(t.Context())
		require.NoError(t, err)
		require.Equal(t, uint64(7), p.Payload)
		require.Equal(t, t0.Add(time.Second), clk.Now(), "woken at the arrival, not later")
		require.Equal(t, t0.Add(time.Second), p.Enqueued)

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err = f.Dequeue(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, t0.Add(time.Second+time.Minute), clk.Now())

		enq(t, f, pkt(8, 1))
		enq(t, f, pkt(9, 1))
		f.Close()
		f.Close() // idempotent
		require.True(t, f.Closed())
		v, err := f.Enqueue(pkt(10, 5))
		require.ErrorIs(t, err, front.ErrClosed)
		require.Equal(t, aqm.DroppedOverlimit, v, "refused, so a caller checking Accepted keeps the packet")
		vs := make([]aqm.Verdict, 2)
		n, err := f.EnqueueBatch([]aqm.Packet[uint64]{pkt(11, 5), pkt(12, 5)}, vs)
		require.ErrorIs(t, err, front.ErrClosed)
		require.Zero(t, n)
		require.Equal(t, []aqm.Verdict{aqm.DroppedOverlimit, aqm.DroppedOverlimit}, vs)
		require.EqualValues(t, 3, f.Stats().Enqueued.Packets, "packets 7, 8, 9; the refused ones never reached the queue")
		require.Equal(t, aqm.Count{Packets: 3, Bytes: 15}, f.Detail().RefusedClosed)
		p, err = f.Dequeue(t.Context())
		require.NoError(t, err)
		require.Equal(t, uint64(8), p.Payload)
		n, err = f.DequeueBatch(t.Context(), make([]aqm.Packet[uint64], 4))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = f.Dequeue(t.Context())
		require.ErrorIs(t, err, front.ErrClosed)
		_, err = f.DequeueBatch(t.Context(), make([]aqm.Packet[uint64], 4))
		require.ErrorIs(t, err, front.ErrClosed)
	})
}

// TestCloseWakesBlockedConsumers protects Close: consumers blocked with no
// deadline on an empty queue are released with ErrClosed, and a consumer
// throttled by the rate drains what was queued, at the rate, and then gets
// ErrClosed.
func TestCloseWakesBlockedConsumers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), bubbleClock(), front.Config{})
		errs := make(chan error, 3)
		for i := range 3 {
			go func() {
				var err error
				if i == 0 {
					_, err = f.Dequeue(context.Background())
				} else {
					_, err = f.DequeueBatch(context.Background(), make([]aqm.Packet[uint64], 8))
				}
				errs <- err
			}()
		}
		synctest.Wait() // all three are blocked
		f.Close()
		for range 3 {
			require.ErrorIs(t, <-errs, front.ErrClosed)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		clk := bubbleClock()
		// 8 kbit/s: a 1000-byte packet per second; the burst is one packet.
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), clk, front.Config{Rate: 8 * aqm.Kbit, BurstBytes: 1})
		t0 := clk.Now()
		for i := range 4 {
			enq(t, f, pkt(uint64(i), 1000))
		}
		var got []aqm.Time
		done := make(chan error)
		go func() {
			buf := make([]aqm.Packet[uint64], 8)
			for {
				n, err := f.DequeueBatch(context.Background(), buf)
				if err != nil {
					done <- err
					return
				}
				for range n {
					got = append(got, clk.Now())
				}
			}
		}()
		synctest.Wait() // sent the first, sleeping for the second
		f.Close()
		require.ErrorIs(t, <-done, front.ErrClosed)
		require.Equal(t, []aqm.Time{t0, t0.Add(999 * time.Millisecond), t0.Add(1999 * time.Millisecond), t0.Add(2999 * time.Millisecond)}, got,
			"drained at the rate after Close: 999 bytes of debt at 1 B/ms")
	})
}

// TestCloseFlush protects the discard shutdown: Flush after Close hands
// every queued packet to the given DropFunc exactly once, counts them, and
// a blocked consumer then gets ErrClosed.
func TestCloseFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), bubbleClock(), front.Config{Rate: 8 * aqm.Kbit, BurstBytes: 1})
		for i := range 5 {
			enq(t, f, pkt(uint64(i), 100))
		}
		p, err := f.Dequeue(t.Context())
		require.NoError(t, err)
		require.Equal(t, uint64(0), p.Payload)
		done := make(chan error)
		go func() {
			_, err := f.Dequeue(context.Background())
			done <- err
		}()
		synctest.Wait() // throttled
		f.Close()
		var flushed []uint64
		n := f.Flush(func(p aqm.Packet[uint64], v aqm.Verdict) {
			require.Equal(t, aqm.DroppedOverlimit, v)
			flushed = append(flushed, p.Payload)
		})
		require.Equal(t, 4, n)
		require.Equal(t, []uint64{1, 2, 3, 4}, flushed)
		require.ErrorIs(t, <-done, front.ErrClosed)
		require.Equal(t, aqm.Count{Packets: 4, Bytes: 400}, f.Detail().Flushed)
		require.Zero(t, f.Len())
		require.Zero(t, f.Flush(nil))
	})
}

// TestManyProducers protects the concurrent contract under -race: many
// producers (half single-packet, half batched) and one blocking consumer;
// every accepted packet is received exactly once, in each producer's order,
// the head-dropped ones reach the DropFunc exactly once, and no goroutine
// is left behind.
func TestManyProducers(t *testing.T) {
	before := runtime.NumGoroutine()
	const producers, each = 8, 4000
	var dropped atomic.Int64
	seen := make([]atomic.Int32, producers*each)
	onDrop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
		dropped.Add(1)
		seen[p.Payload].Add(1)
	}
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 64, HeadDrop: true}, onDrop), nil, front.Config{})
	var received atomic.Int64
	consumerDone := make(chan error)
	go func() {
		check := inOrder(t, producers, each)
		consumerDone <- f.Run(context.Background(), func(ps []aqm.Packet[uint64]) {
			for _, p := range ps {
				check(p)
				seen[p.Payload].Add(1)
				received.Add(1)
			}
		})
	}()
	var wg sync.WaitGroup
	for g := range producers {
		wg.Go(func() {
			if g%2 == 0 {
				for i := range each {
					if v, err := f.Enqueue(pkt(uint64(g*each+i), 10)); err != nil || !v.Accepted() {
						t.Errorf("refused: %v %v", v, err)
					}
				}
				return
			}
			ps := make([]aqm.Packet[uint64], 32)
			vs := make([]aqm.Verdict, 32)
			for i := 0; i < each; i += len(ps) {
				for j := range ps {
					ps[j] = pkt(uint64(g*each+i+j), 10)
				}
				if n, err := f.EnqueueBatch(ps, vs); err != nil || n != len(ps) {
					t.Errorf("batch refused: %d %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	f.Close()
	require.NoError(t, <-consumerDone, "Run returns nil once closed and drained")
	require.EqualValues(t, producers*each, received.Load()+dropped.Load())
	for i := range seen {
		require.EqualValues(t, 1, seen[i].Load(), "packet %d", i)
	}
	st := f.Stats()
	require.Equal(t, uint64(received.Load()), st.Dequeued.Packets)
	require.Equal(t, uint64(dropped.Load()), st.DroppedQueued.Packets)
	requireNoLeak(t, before)
}

// inOrder returns a check, for one consumer, that the packets of each of
// producers producers (payload g*each + i for producer g's packet i) come
// in increasing i.
func inOrder(t *testing.T, producers, each int) func(aqm.Packet[uint64]) {
	last := make([]int, producers)
	for g := range last {
		last[g] = -1
	}
	return func(p aqm.Packet[uint64]) {
		g, i := int(p.Payload)/each, int(p.Payload)%each
		if i <= last[g] {
			t.Errorf("producer %d: packet %d after %d", g, i, last[g])
		}
		last[g] = i
	}
}

// requireNoLeak waits up to 5 s for the goroutine count to fall back to
// before. It polls on the test's own goroutine: require.Eventually would
// count its own condition goroutine.
func requireNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// TestManyConsumers protects the wake-up hand-off: with several blocked
// consumers, a burst of arrivals is spread among them and none is left
// asleep while packets wait.
func TestManyConsumers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), bubbleClock(), front.Config{})
		const consumers, packets = 4, 400
		var got atomic.Int64
		var wg sync.WaitGroup
		for range consumers {
			wg.Go(func() {
				for {
					if _, err := f.Dequeue(context.Background()); err != nil {
						return
					}
					got.Add(1)
					time.Sleep(time.Millisecond) // each consumer is slow
				}
			})
		}
		synctest.Wait()
		for i := range packets {
			enq(t, f, pkt(uint64(i), 0))
		}
		// One consumer alone would need 400 ms; four need 100 ms.
		time.Sleep(101 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, packets, got.Load())
		f.Close()
		wg.Wait()
	})
}

// TestWithQueue protects WithQueue: it runs under the lock and a packet it
// adds to an empty queue wakes a blocked consumer.
func TestWithQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := bubbleClock()
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), clk, front.Config{})
		done := make(chan uint64)
		go func() {
			p, err := f.Dequeue(t.Context())
			require.NoError(t, err)
			done <- p.Payload
		}()
		synctest.Wait()
		f.WithQueue(func(q aqm.Queue[uint64]) { q.Enqueue(pkt(5, 0), clk.Now()) })
		require.Equal(t, uint64(5), <-done)
	})
}

// loopOnly hides a queue's burst path, so the front must fall back to the
// loop.
type loopOnly struct{ aqm.Queue[uint64] }

// TestEnqueueBatchIsLoop protects the front's burst path: on random bursts
// (0..300 packets, random sizes and ECN, random time steps) EnqueueBatch
// gives exactly the verdicts, drops, Stats and dequeued packets of the same
// packets offered one by one with Enqueue at the same instants, with and
// without the queue's own burst path.
func TestEnqueueBatchIsLoop(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, wrap := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(seed, 2))
		type drop struct {
			p uint64
			v aqm.Verdict
		}
		var dropsA, dropsB []drop
		cfg := fifo.Config{LimitPackets: 200, HeadDrop: true}
		qa := newFIFO(t, cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { dropsA = append(dropsA, drop{p.Payload, v}) })
		qb := newFIFO(t, cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { dropsB = append(dropsB, drop{p.Payload, v}) })
		clk := clock.NewManual(0)
		var a, b *front.Front[uint64]
		if wrap {
			a = newFront(t, loopOnly{qa}, clk, front.Config{})
			b = newFront(t, loopOnly{qb}, clk, front.Config{})
		} else {
			a = newFront(t, qa, clk, front.Config{})
			b = newFront(t, qb, clk, front.Config{})
		}
		var id uint64
		bufA, bufB := make([]aqm.Packet[uint64], 300), make([]aqm.Packet[uint64], 300)
		for range 200 {
			clk.Advance(time.Duration(rng.IntN(2000)) * time.Microsecond)
			n := rng.IntN(301)
			ps := make([]aqm.Packet[uint64], n)
			for i := range ps {
				id++
				ps[i] = aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: uint32(rng.IntN(1500)), ECN: aqm.ECN(rng.IntN(4))}}
			}
			vs := make([]aqm.Verdict, n)
			acc, err := a.EnqueueBatch(ps, vs)
			require.NoError(t, err)
			wantAcc := 0
			for i, p := range ps {
				v := enq(t, b, p)
				require.Equal(t, v, vs[i], "packet %d of %d", i, n)
				if v.Accepted() {
					wantAcc++
				}
			}
			require.Equal(t, wantAcc, acc)
			k := rng.IntN(300)
			na, _ := a.TryDequeueBatch(bufA[:k])
			nb, _ := b.TryDequeueBatch(bufB[:k])
			require.Equal(t, bufB[:nb], bufA[:na])
			require.Equal(t, b.Stats(), a.Stats())
			require.Equal(t, dropsB, dropsA)
		}
	}
}

// TestMetrics protects the front's metrics: unique lower_snake names, the
// queue's Stats and Detail first, then the front's own, values equal to
// Stats and both Details.
func TestMetrics(t *testing.T) {
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 2}, nil), nil, front.Config{Rate: 8 * aqm.Mbit})
	for i := range 3 {
		_, _ = f.Enqueue(pkt(uint64(i), 100))
	}
	f.Close()
	_, _ = f.Enqueue(pkt(9, 7))
	got := map[string]aqm.Metric{}
	for m := range f.Metrics() {
		require.NotContains(t, got, m.Name, "duplicate")
		require.Equal(t, strings.ToLower(m.Name), m.Name)
		require.NotContains(t, m.Name, " ")
		got[m.Name] = m
	}
	require.Equal(t, 2.0, got["enqueued_packets"].Value)
	require.Equal(t, 1.0, got["dropped_overlimit_packets"].Value)
	require.Equal(t, 200.0, got["backlog_bytes"].Value)
	require.Equal(t, 8e6, got["front_rate_bits_per_second"].Value)
	require.Equal(t, aqm.Gauge, got["front_rate_bits_per_second"].Kind)
	require.Equal(t, 1.0, got["front_closed"].Value)
	require.Equal(t, 1.0, got["front_refused_closed_packets"].Value)
	require.Equal(t, 7.0, got["front_refused_closed_bytes"].Value)
	require.Equal(t, aqm.Counter, got["front_refused_closed_bytes"].Kind)
	require.Equal(t, 5000.0, got["front_burst_bytes"].Value, "8 Mbit/s × 5 ms")
	require.Equal(t, 64.0, got["memory_bytes"].Value, "the FIFO's Detail, 2 slots of 32 bytes")
	n := 0
	for range front.DetailMetrics(f.Detail()) {
		n++
	}
	m := 0
	f.WithQueue(func(q aqm.Queue[uint64]) {
		for range q.(aqm.MetricSource).Metrics() {
			m++
		}
	})
	require.Len(t, got, n+m, "the queue's metrics (Stats and Detail), then the front's")
}
