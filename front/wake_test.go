package front

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
)

// stampQueue is a FIFO that records the instant of each Enqueue.
type stampQueue struct {
	*fifo.Queue[uint64]
	stamps []aqm.Time
}

func (q *stampQueue) Enqueue(p aqm.Packet[uint64], now aqm.Time) aqm.Verdict {
	q.stamps = append(q.stamps, now)
	return q.Queue.Enqueue(p, now)
}

func (q *stampQueue) EnqueueBatch(ps []aqm.Packet[uint64], vs []aqm.Verdict, now aqm.Time) int {
	return aqm.EnqueueLoop[uint64](q, ps, vs, now)
}

// readFunc adapts a function to clock.Clock.
type readFunc func() aqm.Time

func (f readFunc) Now() aqm.Time { return f() }

func newStampFront(t *testing.T, src clock.Clock) (*Front[uint64], *stampQueue) {
	t.Helper()
	fifo, err := fifo.New[uint64](fifo.Config{LimitPackets: 100}, nil)
	require.NoError(t, err)
	q := &stampQueue{Queue: fifo}
	f, err := New[uint64](q, clock.NewCoarse(src), Config{})
	require.NoError(t, err)
	return f, q
}

// TestArrivalWakesOnlyParkedConsumer protects the cheap arrival path: an
// arrival into an empty queue leaves no wake-up when no consumer sleeps,
// and wakes a consumer that does.
func TestArrivalWakesOnlyParkedConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _ := newStampFront(t, clock.NewMono())
		_, err := f.Enqueue(aqm.Packet[uint64]{Payload: 1, Meta: aqm.Meta{Size: 10}})
		require.NoError(t, err)
		require.Empty(t, f.ready, "no consumer sleeps: no wake-up is left")
		buf := make([]aqm.Packet[uint64], 4)
		n, err := f.DequeueBatch(t.Context(), buf)
		require.NoError(t, err)
		require.Equal(t, 1, n)

		var wg sync.WaitGroup
		wg.Go(func() {
			n, err := f.DequeueBatch(t.Context(), buf)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, uint64(2), buf[0].Payload)
		})
		synctest.Wait() // the consumer is parked on the empty queue
		require.Equal(t, int32(1), f.cs.waiting.Load())
		require.Equal(t, int32(0), f.cs.looking.Load())
		_, err = f.Enqueue(aqm.Packet[uint64]{Payload: 2, Meta: aqm.Meta{Size: 10}})
		require.NoError(t, err)
		wg.Wait()
		require.Equal(t, int32(0), f.cs.waiting.Load())
		require.Equal(t, int32(0), f.cs.looking.Load())
	})
}

// TestProducerRefreshesClockOnlyWithoutAwakeConsumer protects the arrival
// stamps under a Coarse clock: a producer that finds the queue empty
// refreshes the clock unless a consumer is awake in a blocking dequeue
// (which refreshes it on every look), and the refresh happens once per
// call, whether it enqueues one packet or a batch.
func TestProducerRefreshesClockOnlyWithoutAwakeConsumer(t *testing.T) {
	now := aqm.Time(1000)
	f, q := newStampFront(t, readFunc(func() aqm.Time { return now }))
	p := aqm.Packet[uint64]{Meta: aqm.Meta{Size: 10}}
	now = 2000
	_, _ = f.Enqueue(p) // empty, no consumer: refreshed
	now = 3000
	_, _ = f.Enqueue(p) // not empty: the cached reading
	f.Flush(nil)
	f.cs.looking.Add(1) // a consumer between looks
	now = 4000
	_, _ = f.Enqueue(p) // empty, but the consumer keeps the clock fresh
	f.Flush(nil)
	f.cs.looking.Add(-1)
	f.cs.waiting.Add(1) // the consumer sleeps: refresh again
	now = 5000
	_, _ = f.EnqueueBatch([]aqm.Packet[uint64]{p, p}, make([]aqm.Verdict, 2))
	f.cs.waiting.Add(-1)
	// Flush refreshes the clock: the third stamp is the first Flush's 3000.
	require.Equal(t, []aqm.Time{2000, 2000, 3000, 5000, 5000}, q.stamps)
}

// TestBusyConsumerDrainsWithoutWakeups protects the producers' side of a
// busy consumer: many batches into a queue that one consumer keeps
// draining, every packet delivered, and no wake-up left behind once the
// consumer has returned.
func TestBusyConsumerDrainsWithoutWakeups(t *testing.T) {
	f, _ := newStampFront(t, clock.NewMono())
	const total = 20000
	var wg sync.WaitGroup
	got := 0
	wg.Go(func() {
		buf := make([]aqm.Packet[uint64], 7)
		for {
			n, err := f.DequeueBatch(context.Background(), buf)
			if err != nil {
				return
			}
			got += n
		}
	})
	ps := make([]aqm.Packet[uint64], 5)
	vs := make([]aqm.Verdict, 5)
	for i := range ps {
		ps[i].Size = 1
	}
	for sent := 0; sent < total; {
		m := min(len(ps), total-sent)
		acc, err := f.EnqueueBatch(ps[:m], vs[:m])
		require.NoError(t, err)
		sent += acc
	}
	f.Close()
	wg.Wait()
	require.Equal(t, total, got)
	require.Equal(t, int32(0), f.cs.waiting.Load())
	require.Equal(t, int32(0), f.cs.looking.Load())
}
