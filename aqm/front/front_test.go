package front_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/front"
	"github.com/aqmkit/aqmkit/clock"
)

func newFIFO(t testing.TB, cfg aqm.FIFOConfig, onDrop aqm.DropFunc[uint64]) *aqm.FIFO[uint64] {
	t.Helper()
	q, err := aqm.NewFIFO(cfg, onDrop)
	require.NoError(t, err)
	return q
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
// reading per Enqueue, per TryDequeue, and per DequeueBatch however many
// packets it takes.
func TestClockReadOncePerCall(t *testing.T) {
	c := &countingClock{mono: clock.NewMono()}
	f := front.New[uint64](newFIFO(t, aqm.FIFOConfig{}, nil), c)
	for i := range 10 {
		f.Enqueue(aqm.Packet[uint64]{Payload: uint64(i)})
	}
	require.EqualValues(t, 10, c.reads.Load())
	_, ok := f.TryDequeue()
	require.True(t, ok)
	require.EqualValues(t, 11, c.reads.Load())
	buf := make([]aqm.Packet[uint64], 16)
	n, err := f.DequeueBatch(t.Context(), buf)
	require.NoError(t, err)
	require.Equal(t, 9, n)
	require.EqualValues(t, 12, c.reads.Load())
	for i := range n {
		require.Equal(t, uint64(i+1), buf[i].Payload, "FIFO order kept")
	}
}

// TestBlockingDequeue protects the blocking path in virtual time: a consumer
// blocked on an empty queue gets a packet at the instant it is enqueued,
// returns the context's error when cancelled, and ErrClosed after Close once
// the queue is drained. synctest fails the test if any goroutine is left.
func TestBlockingDequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMono()
		f := front.New[uint64](newFIFO(t, aqm.FIFOConfig{}, nil), clk)
		t0 := clk.Now()
		go func() {
			time.Sleep(time.Second)
			f.Enqueue(aqm.Packet[uint64]{Payload: 7})
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

		f.Enqueue(aqm.Packet[uint64]{Payload: 8})
		f.Enqueue(aqm.Packet[uint64]{Payload: 9})
		f.Close()
		f.Close() // idempotent
		require.Equal(t, aqm.DroppedOverlimit, f.Enqueue(aqm.Packet[uint64]{Payload: 10}), "refused after Close")
		require.EqualValues(t, 3, f.Stats().Enqueued.Packets, "packets 7, 8, 9; the refused one never reached the queue")
		p, err = f.Dequeue(t.Context())
		require.NoError(t, err)
		require.Equal(t, uint64(8), p.Payload)
		n, err := f.DequeueBatch(t.Context(), make([]aqm.Packet[uint64], 4))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = f.Dequeue(t.Context())
		require.ErrorIs(t, err, front.ErrClosed)
		_, err = f.DequeueBatch(t.Context(), make([]aqm.Packet[uint64], 4))
		require.ErrorIs(t, err, front.ErrClosed)
	})
}

// TestCloseWakesBlockedConsumers protects Close: consumers blocked with no
// deadline are released with ErrClosed.
func TestCloseWakesBlockedConsumers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := front.New[uint64](newFIFO(t, aqm.FIFOConfig{}, nil), clock.NewMono())
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := f.Dequeue(context.Background())
				errs <- err
			}()
		}
		synctest.Wait() // all three are blocked
		f.Close()
		for range 3 {
			require.ErrorIs(t, <-errs, front.ErrClosed)
		}
	})
}

// TestManyProducers protects the concurrent contract under -race: many
// producers and one blocking consumer; every accepted packet is received
// exactly once, in each producer's order, the head-dropped ones reach the
// DropFunc exactly once, and no goroutine is left behind.
func TestManyProducers(t *testing.T) {
	before := runtime.NumGoroutine()
	const producers, each = 8, 5000
	var dropped atomic.Int64
	seen := make([]atomic.Int32, producers*each)
	onDrop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
		dropped.Add(1)
		seen[p.Payload].Add(1)
	}
	f := front.New[uint64](newFIFO(t, aqm.FIFOConfig{LimitPackets: 64, HeadDrop: true}, onDrop), clock.NewMono())
	ctx, cancel := context.WithCancel(t.Context())
	var received atomic.Int64
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		last := make([]int, producers)
		for i := range last {
			last[i] = -1
		}
		buf := make([]aqm.Packet[uint64], 8)
		for {
			n, err := f.DequeueBatch(ctx, buf)
			if err != nil {
				return
			}
			for _, p := range buf[:n] {
				g, i := int(p.Payload)/each, int(p.Payload)%each
				if i <= last[g] {
					t.Errorf("producer %d: packet %d after %d", g, i, last[g])
				}
				last[g] = i
				seen[p.Payload].Add(1)
				received.Add(1)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range producers {
		wg.Go(func() {
			for i := range each {
				require.True(t, f.Enqueue(aqm.Packet[uint64]{Payload: uint64(g*each + i), Meta: aqm.Meta{Size: 10}}).Accepted())
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return f.Len() == 0 }, 10*time.Second, time.Millisecond)
	cancel()
	<-consumerDone
	require.EqualValues(t, producers*each, received.Load()+dropped.Load())
	for i := range seen {
		require.EqualValues(t, 1, seen[i].Load(), "packet %d", i)
	}
	st := f.Stats()
	require.Equal(t, uint64(received.Load()), st.Dequeued.Packets)
	require.Equal(t, uint64(dropped.Load()), st.DroppedQueued.Packets)
	requireNoLeak(t, before)
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
		f := front.New[uint64](newFIFO(t, aqm.FIFOConfig{}, nil), clock.NewMono())
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
			f.Enqueue(aqm.Packet[uint64]{Payload: uint64(i)})
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
		clk := clock.NewMono()
		f := front.New[uint64](newFIFO(t, aqm.FIFOConfig{}, nil), clk)
		done := make(chan uint64)
		go func() {
			p, err := f.Dequeue(t.Context())
			require.NoError(t, err)
			done <- p.Payload
		}()
		synctest.Wait()
		f.WithQueue(func(q aqm.Queue[uint64]) { q.Enqueue(aqm.Packet[uint64]{Payload: 5}, clk.Now()) })
		require.Equal(t, uint64(5), <-done)
	})
}
