package clock_test

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/stretchr/testify/require"
)

// TestMonoNeverZeroAndMonotonic protects the real clock's two promises.
func TestMonoNeverZeroAndMonotonic(t *testing.T) {
	m := clock.NewMono()
	prev := m.Now()
	require.GreaterOrEqual(t, prev, clock.Epoch)
	for range 1000 {
		now := m.Now()
		require.GreaterOrEqual(t, now, prev)
		prev = now
	}
}

// TestManual protects Set/Advance and the zero value reading Epoch.
func TestManual(t *testing.T) {
	var m clock.Manual
	require.Equal(t, clock.Epoch, m.Now())
	require.Equal(t, clock.Epoch.Add(time.Second), m.Advance(time.Second))
	m.Set(42)
	require.Equal(t, aqm.Time(42), m.Now())
	require.Equal(t, aqm.Time(40), m.Advance(-2))
	m.Set(0)
	require.Equal(t, clock.Epoch, m.Now(), "zero means unset, so it reads Epoch")
	require.Equal(t, aqm.Time(7), clock.NewManual(7).Now())
}

// TestCached protects the batch clock: one source read per Refresh.
func TestCached(t *testing.T) {
	reads := 0
	src := clock.Func(func() aqm.Time { reads++; return aqm.Time(reads * 100) })
	c := clock.NewCached(src)
	require.Equal(t, aqm.Time(100), c.Now())
	require.Equal(t, aqm.Time(100), c.Now())
	require.Equal(t, 1, reads)
	require.Equal(t, aqm.Time(200), c.Refresh())
	require.Equal(t, aqm.Time(200), c.Now())
}

// TestWrap protects the adapter: it stamps packets with the clock's time and
// dequeues at it.
func TestWrap(t *testing.T) {
	q, err := aqm.NewFIFO[string](aqm.FIFOConfig{LimitPackets: 4}, nil)
	require.NoError(t, err)
	m := clock.NewManual(clock.Epoch)
	b := clock.Wrap[string](q, m)
	require.Equal(t, aqm.Enqueued, b.Enqueue(aqm.Packet[string]{Payload: "a", Meta: aqm.Meta{Size: 10}}))
	m.Advance(time.Millisecond)
	require.Equal(t, aqm.Enqueued, b.EnqueueAt(aqm.Packet[string]{Payload: "b", Meta: aqm.Meta{Size: 5}}, 99))
	require.Equal(t, 2, b.Len())
	require.Equal(t, 15, b.Backlog())
	p, ok := b.Dequeue()
	require.True(t, ok)
	require.Equal(t, "a", p.Payload)
	require.Equal(t, clock.Epoch, p.Enqueued)
	p, ok = b.DequeueAt(100)
	require.True(t, ok)
	require.Equal(t, aqm.Time(99), p.Enqueued)
	require.Equal(t, uint64(2), b.Stats().Dequeued.Packets)
	require.Same(t, q, b.Queue().(*aqm.FIFO[string]))
}
