package front_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
)

// countingCake is a CAKE queue whose Dequeue calls are counted, with and
// without its burst path, so a test can tell sleeping from spinning.
type countingCake struct {
	*cake.Queue[uint64]
	dequeues int
}

func (c *countingCake) Dequeue(now aqm.Time) (aqm.Packet[uint64], bool) {
	c.dequeues++
	return c.Queue.Dequeue(now)
}

func (c *countingCake) DequeueBatch(buf []aqm.Packet[uint64], now aqm.Time) int {
	for i := range buf {
		p, ok := c.Dequeue(now)
		if !ok {
			return i
		}
		buf[i] = p
	}
	return len(buf)
}

var (
	_ aqm.Paced              = (*countingCake)(nil)
	_ aqm.BatchQueue[uint64] = (*countingCake)(nil)
)

func newCountingCake(t *testing.T, rate aqm.Rate) *countingCake {
	t.Helper()
	q, err := cake.New(cake.Config{Rate: rate, TinMode: cake.BestEffort, FlowMode: cake.Flows, Seed: 1}, func(aqm.Packet[uint64], aqm.Verdict) {})
	require.NoError(t, err)
	return &countingCake{Queue: q}
}

// TestPacedQueue protects the consumer's handling of a queue that paces its
// own output (CAKE at 8 Mbit/s): behind a front with no rate, or with a
// faster one, Run delivers at CAKE's rate; with a slower front rate, at the
// front's; and in every case it sleeps until the next departure instead of
// spinning (a bounded number of Dequeue calls per packet) or stalling (the
// queue is not taken for empty while it holds packets back).
func TestPacedQueue(t *testing.T) {
	const size, d = 1000, 5 * time.Second
	for _, tc := range []struct {
		name      string
		frontRate aqm.Rate
		want      aqm.Rate
	}{
		{"no front rate", 0, 8 * aqm.Mbit},
		{"faster front rate", 100 * aqm.Mbit, 8 * aqm.Mbit},
		{"slower front rate", 4 * aqm.Mbit, 4 * aqm.Mbit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := bubbleClock()
				q := newCountingCake(t, 8*aqm.Mbit)
				f, err := front.New[uint64](q, clk, front.Config{Rate: tc.frontRate})
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(t.Context(), d)
				defer cancel()
				var producer sync.WaitGroup
				defer producer.Wait()
				producer.Go(func() { // tops the queue up every 10 ms, four flows
					for i := uint32(0); ctx.Err() == nil; {
						for f.Len() < 100 {
							i++
							enq(t, f, aqm.Packet[uint64]{Meta: aqm.Meta{Size: size, Hash: i % 4}})
						}
						time.Sleep(10 * time.Millisecond)
					}
				})
				var bytes, packets uint64
				err = f.Run(ctx, func(ps []aqm.Packet[uint64]) {
					for _, p := range ps {
						bytes += uint64(p.Size)
						packets++
					}
				})
				require.ErrorIs(t, err, context.DeadlineExceeded)
				want := float64(tc.want) / 8 * d.Seconds()
				require.InEpsilon(t, want, float64(bytes), 0.01, "bytes delivered in %v", d)
				var calls int
				f.WithQueue(func(aqm.Queue[uint64]) { calls = q.dequeues })
				// One call that takes a packet and, in the burst path, one
				// that refuses the next, per packet at most: the waits come
				// from NextDeparture. A spinning consumer makes millions.
				require.LessOrEqual(t, calls, int(2*packets)+10, "Dequeue calls for %d packets", packets)
			})
		})
	}
}

// TestPacedDequeueAndFlush protects the single-packet consumer and
// TryDequeueBatch on a paced queue (the wait is CAKE's next departure, not
// zero), and Flush, which empties a paced queue that holds packets back.
func TestPacedDequeueAndFlush(t *testing.T) {
	clk := clock.NewManual(clock.Epoch)
	q := newCountingCake(t, 8*aqm.Mbit)
	f, err := front.New[uint64](q, clk, front.Config{})
	require.NoError(t, err)
	for i := range 5 {
		enq(t, f, aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1000, Hash: 1}})
	}
	buf := make([]aqm.Packet[uint64], 5)
	n, wait := f.TryDequeueBatch(buf)
	require.Equal(t, 1, n, "CAKE sends one packet, then holds the next for its 1 ms")
	require.Equal(t, time.Millisecond, wait)
	clk.Advance(time.Millisecond)
	p, err := f.Dequeue(t.Context())
	require.NoError(t, err)
	require.Equal(t, uint64(1), p.Payload)
	n, wait = f.TryDequeueBatch(buf)
	require.Zero(t, n)
	require.Equal(t, time.Millisecond, wait)
	dropped := 0
	require.Equal(t, 3, f.Flush(func(aqm.Packet[uint64], aqm.Verdict) { dropped++ }))
	require.Equal(t, 3, dropped)
	require.Zero(t, f.Len())
	n, wait = f.TryDequeueBatch(buf)
	require.Zero(t, n)
	require.Zero(t, wait, "an empty paced queue has nothing to wait for")
}

// TestPacedShards protects the round-robin consumer over paced shards
// whose waits differ (CAKE at 2 and at 6 Mbit/s, in either order): each
// shard keeps its own rate, the total is their sum, and the consumer
// sleeps between departures instead of spinning, staged or not.
func TestPacedShards(t *testing.T) {
	for _, rates := range [][]aqm.Rate{{2 * aqm.Mbit, 6 * aqm.Mbit}, {6 * aqm.Mbit, 2 * aqm.Mbit}} {
		for _, staged := range []bool{false, true} {
			t.Run(fmt.Sprint(rates[0], "/staged=", staged), func(t *testing.T) { testPacedShards(t, rates, staged) })
		}
	}
}

func testPacedShards(t *testing.T, rates []aqm.Rate, staged bool) {
	synctest.Test(t, func(t *testing.T) {
		const size, d = 1000, 5 * time.Second
		qs := make([]*countingCake, len(rates))
		s, err := front.NewSharded(func(i int) (aqm.Queue[uint64], error) {
			qs[i] = newCountingCake(t, rates[i])
			return qs[i], nil
		}, bubbleClock(), front.ShardedConfig{Shards: len(rates), Seed: 1, Config: front.Config{Staged: staged}})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		var producer sync.WaitGroup
		defer producer.Wait()
		producer.Go(func() { // 64 flows, so both shards get packets
			for i := uint32(0); ctx.Err() == nil; {
				for s.Len() < 400 {
					i++
					_, err := s.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: size, Hash: i % 64}})
					require.NoError(t, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
		var bytes, packets uint64
		err = s.Run(ctx, func(ps []aqm.Packet[uint64]) {
			for _, p := range ps {
				bytes += uint64(p.Size)
				packets++
			}
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		want := float64(8*aqm.Mbit) / 8 * d.Seconds()
		require.InEpsilon(t, want, float64(bytes), 0.01)
		calls := 0
		for i := range qs {
			s.ShardAt(i).WithQueue(func(aqm.Queue[uint64]) { calls += qs[i].dequeues })
		}
		require.LessOrEqual(t, calls, int(2*packets)+20)
	})
}

// TestPacedAllocs protects the paced path's zero allocations: an arrival,
// a look that takes what may leave, and a look that learns the wait from
// NextDeparture.
func TestPacedAllocs(t *testing.T) {
	clk := clock.NewManual(clock.Epoch)
	q := newCountingCake(t, 8*aqm.Mbit)
	f, err := front.New[uint64](q, clk, front.Config{})
	require.NoError(t, err)
	buf := make([]aqm.Packet[uint64], 4)
	allocs := testing.AllocsPerRun(1000, func() {
		clk.Advance(time.Millisecond)
		_, _ = f.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: 3}})
		_, _ = f.TryDequeueBatch(buf)
		_, _ = f.TryDequeueBatch(buf)
	})
	require.Zero(t, allocs)
	require.Greater(t, q.Stats().Dequeued.Packets, uint64(900), "the loop moved packets")
}
