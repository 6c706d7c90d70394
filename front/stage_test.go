package front_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// TestStagedArrivalInstant protects the staged hand-over's timing: a packet
// enters the queue at the instant its producer handed it over, not when
// the consumer moved it in, so the AQM measures its whole sojourn; and the
// hand-over counts in Len, Backlog and Detail but not yet in Stats.
func TestStagedArrivalInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := bubbleClock()
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), clk, front.Config{Staged: true})
		t0 := clk.Now()
		require.Equal(t, aqm.Enqueued, enq(t, f, pkt(1, 100)))
		vs := make([]aqm.Verdict, 2)
		n, err := f.EnqueueBatch([]aqm.Packet[uint64]{pkt(2, 10), pkt(3, 10)}, vs)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []aqm.Verdict{aqm.Enqueued, aqm.Enqueued}, vs)
		require.Equal(t, 3, f.Len())
		require.Equal(t, 120, f.Backlog())
		require.Equal(t, 3, f.Detail().Staged)
		require.Zero(t, f.Stats().Enqueued.Packets, "not in the queue yet")

		time.Sleep(time.Second)
		buf := make([]aqm.Packet[uint64], 4)
		n, err = f.DequeueBatch(t.Context(), buf)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		for i, p := range buf[:n] {
			require.Equal(t, uint64(i+1), p.Payload, "hand-over order")
			require.Equal(t, t0, p.Enqueued, "stamped at the hand-over")
		}
		require.Zero(t, f.Detail().Staged)
		st := f.Stats()
		require.EqualValues(t, 3, st.Enqueued.Packets)
		require.EqualValues(t, 3, st.Dequeued.Packets)
	})
}

// TestStagedRefusals protects the staged front's accounting: with no
// consumer, a producer that finds the hand-over full moves it into the
// queue itself; packets the queue refuses then reach the OnRefused
// function exactly once, and every packet is queued, staged or refused.
func TestStagedRefusals(t *testing.T) {
	refused := map[uint64]aqm.Verdict{}
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 300}, nil), nil, front.Config{Staged: true})
	f.OnRefused(func(p aqm.Packet[uint64], v aqm.Verdict) {
		_, dup := refused[p.Payload]
		require.False(t, dup, "packet %d refused twice", p.Payload)
		refused[p.Payload] = v
	})
	const total = 1000
	verdictRefused := 0
	for i := range total {
		v := enq(t, f, pkt(uint64(i), 10))
		if !v.Accepted() {
			verdictRefused++ // refused on the producer's direct path
		}
	}
	d := f.Detail()
	require.LessOrEqual(t, d.Staged, front.StageLimit)
	require.Positive(t, len(refused), "the hand-over was moved in by a producer")
	require.Equal(t, total, f.Len()+len(refused)+verdictRefused, "every packet accounted for")
	for _, v := range refused {
		require.Equal(t, aqm.DroppedOverlimit, v)
	}
	st := f.Stats()
	require.EqualValues(t, len(refused)+verdictRefused, st.DroppedOverlimit.Packets, "the queue counts every refusal")
	require.Equal(t, 300, int(st.Len))
}

// TestStagedClose protects shutdown of a staged front: packets handed over
// before Close still leave, in order; after Close producers are refused with
// ErrClosed; Flush takes staged packets too.
func TestStagedClose(t *testing.T) {
	f := newFront(t, newFIFO(t, fifo.Config{}, nil), nil, front.Config{Staged: true})
	for i := range 5 {
		enq(t, f, pkt(uint64(i), 10))
	}
	f.Close()
	v, err := f.Enqueue(pkt(9, 10))
	require.ErrorIs(t, err, front.ErrClosed)
	require.Equal(t, aqm.DroppedOverlimit, v)
	buf := make([]aqm.Packet[uint64], 2)
	n, err := f.DequeueBatch(context.Background(), buf)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, uint64(0), buf[0].Payload)
	var flushed []uint64
	require.Equal(t, 3, f.Flush(func(p aqm.Packet[uint64], _ aqm.Verdict) { flushed = append(flushed, p.Payload) }))
	require.Equal(t, []uint64{2, 3, 4}, flushed)
	_, err = f.DequeueBatch(context.Background(), buf)
	require.ErrorIs(t, err, front.ErrClosed)

	// Close with packets only in the hand-over: the consumer still gets
	// them before ErrClosed.
	g := newFront(t, newFIFO(t, fifo.Config{}, nil), nil, front.Config{Staged: true})
	enq(t, g, pkt(7, 10))
	g.Close()
	n, err = g.DequeueBatch(context.Background(), buf)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = g.DequeueBatch(context.Background(), buf)
	require.ErrorIs(t, err, front.ErrClosed)
}

// TestStagedWakesConsumer protects the staged wake-up: a consumer parked on
// an empty front is woken by a hand-over, single or batched, on a front and
// on a sharded front.
func TestStagedWakesConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), bubbleClock(), front.Config{Staged: true})
		got := make(chan uint64)
		go func() {
			for {
				p, err := f.Dequeue(context.Background())
				if err != nil {
					close(got)
					return
				}
				got <- p.Payload
			}
		}()
		synctest.Wait() // the consumer is parked
		enq(t, f, pkt(1, 10))
		require.Equal(t, uint64(1), <-got)
		synctest.Wait()
		_, err := f.EnqueueBatch([]aqm.Packet[uint64]{pkt(2, 10)}, make([]aqm.Verdict, 1))
		require.NoError(t, err)
		require.Equal(t, uint64(2), <-got)
		f.Close()
		_, open := <-got
		require.False(t, open)

		s, err := front.NewSharded(func(int) (aqm.Queue[uint64], error) {
			return fifo.New[uint64](fifo.Config{}, nil)
		}, bubbleClock(), front.ShardedConfig{Shards: 3, Config: front.Config{Staged: true}})
		require.NoError(t, err)
		n := make(chan int)
		go func() {
			buf := make([]aqm.Packet[uint64], 8)
			for {
				k, err := s.DequeueBatch(context.Background(), buf)
				if err != nil {
					close(n)
					return
				}
				n <- k
			}
		}()
		synctest.Wait()
		ps := []aqm.Packet[uint64]{pkt(1, 10), pkt(2, 10), pkt(3, 10)}
		for i := range ps {
			ps[i].Hash = uint32(i) * 0x9e3779b1
		}
		_, err = s.EnqueueBatch(ps, make([]aqm.Verdict, 3))
		require.NoError(t, err)
		sum := 0
		for sum < 3 {
			sum += <-n
		}
		require.Equal(t, 3, sum)
		s.Close()
		_, open = <-n
		require.False(t, open)
	})
}

// TestStagedManyProducers protects conservation and per-producer order
// through a staged sharded front under concurrency: producers, per-shard
// consumers and a queue that drops (head drop into the DropFunc, refusals
// into OnRefused) lose, duplicate and reorder nothing. Run it with -race.
func TestStagedManyProducers(t *testing.T) {
	before := runtime.NumGoroutine()
	const producers, each = 6, 3000
	seen := make([]atomic.Int32, producers*each)
	var dropped atomic.Int64
	drop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
		dropped.Add(1)
		seen[p.Payload].Add(1)
	}
	s, err := front.NewSharded(func(i int) (aqm.Queue[uint64], error) {
		// Shard 0 drops at its head, shard 1 refuses arrivals.
		return fifo.New(fifo.Config{LimitPackets: 48, HeadDrop: i == 0}, drop)
	}, nil, front.ShardedConfig{Shards: 2, Config: front.Config{Staged: true}})
	require.NoError(t, err)
	s.OnRefused(drop)
	var received atomic.Int64
	var consumers sync.WaitGroup
	for i := range s.Shards() {
		consumers.Go(func() {
			check := inOrder(t, producers, each)
			err := s.ShardAt(i).Run(context.Background(), func(ps []aqm.Packet[uint64]) {
				for _, p := range ps {
					check(p)
					seen[p.Payload].Add(1)
					received.Add(1)
				}
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	var wg sync.WaitGroup
	for g := range producers {
		wg.Go(func() {
			ps := make([]aqm.Packet[uint64], 17)
			vs := make([]aqm.Verdict, 17)
			for i := 0; i < each; {
				m := min(len(ps), each-i)
				for j := range m {
					ps[j] = pkt(uint64(g*each+i+j), 10)
					ps[j].Hash = uint32(g) // one flow per producer: order is kept
				}
				var err error
				if g%2 == 0 {
					_, err = s.EnqueueBatch(ps[:m], vs[:m])
				} else {
					for j := range m {
						vs[j], err = s.Enqueue(ps[j])
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				for j := range m {
					if !vs[j].Accepted() {
						dropped.Add(1) // refused on a producer's direct path
						seen[ps[j].Payload].Add(1)
					}
				}
				i += m
			}
		})
	}
	wg.Wait()
	s.Close()
	consumers.Wait()
	require.EqualValues(t, producers*each, received.Load()+dropped.Load())
	for i := range seen {
		require.EqualValues(t, 1, seen[i].Load(), "packet %d", i)
	}
	st := s.Stats()
	require.EqualValues(t, received.Load(), st.Dequeued.Packets)
	require.Zero(t, s.Detail().Staged)
	requireNoLeak(t, before)
}

// TestStagedReconfigure protects the staged mode from a runtime change it
// cannot make: Reconfigure names the field and changes nothing.
func TestStagedReconfigure(t *testing.T) {
	f := newFront(t, newFIFO(t, fifo.Config{}, nil), nil, front.Config{Staged: true})
	err := f.Reconfigure(front.Config{Rate: aqm.Mbit})
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "Staged", ce.Field)
	require.Zero(t, f.Config().Rate, "nothing changed")
	require.NoError(t, f.Reconfigure(front.Config{Rate: aqm.Mbit, Staged: true}))
	require.Equal(t, aqm.Mbit, f.Config().Rate)
	require.True(t, f.Config().Staged)
}
