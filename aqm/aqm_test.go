package aqm_test

import (
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/internal/tally"
	"github.com/stretchr/testify/require"
)

// TestTime protects the instant arithmetic, including clamping of backward
// time in Since, a packet's sojourn among them.
func TestTime(t *testing.T) {
	t0 := aqm.Time(1000)
	require.Equal(t, aqm.Time(1000+int64(time.Millisecond)), t0.Add(time.Millisecond))
	require.Equal(t, -time.Duration(5), aqm.Time(995).Sub(t0))
	require.True(t, aqm.Time(1).Before(t0) && t0.After(1))
	require.True(t, aqm.Time(0).IsZero() && !t0.IsZero())
	require.Equal(t, time.Duration(0), t0.Since(999), "backward time is zero elapsed")
	require.Equal(t, time.Duration(7), t0.Since(1007))
	require.Equal(t, time.Duration(math.MaxInt64), aqm.Time(math.MinInt64+5).Since(math.MaxInt64-5), "saturates, never wraps negative")
	p := aqm.Packet[int]{Enqueued: t0}
	require.Equal(t, time.Duration(0), p.Enqueued.Since(10))
}

// TestECN protects the codepoints' header values and ECN-capability.
func TestECN(t *testing.T) {
	require.Equal(t, aqm.ECN(3), aqm.CE)
	require.Equal(t, aqm.ECN(2), aqm.ECT0)
	require.Equal(t, aqm.ECN(1), aqm.ECT1)
	require.False(t, aqm.NotECT.Capable())
	require.False(t, aqm.ECN(0xfc).Capable(), "stray high bits alone are Not-ECT")
	require.True(t, aqm.ECN(0xfd).Capable())
	require.Equal(t, "ECT(1)", aqm.ECT1.String())
	require.Equal(t, "ECN(7)", aqm.ECN(7).String())
}

// TestVerdict protects the accepted/dropped split that ownership rests on.
func TestVerdict(t *testing.T) {
	for _, v := range []aqm.Verdict{aqm.Enqueued, aqm.Marked} {
		require.True(t, v.Accepted(), v.String())
	}
	for _, v := range []aqm.Verdict{aqm.DroppedOverlimit, aqm.DroppedEarly, aqm.DroppedOverload} {
		require.False(t, v.Accepted(), v.String())
	}
	require.Equal(t, "dropped-early", aqm.DroppedEarly.String())
	require.Equal(t, "verdict(9)", aqm.Verdict(9).String())
}

// TestStatsArithmetic protects the accounting identities that the kit and
// users rely on, and the tally helpers every queue counts with.
func TestStatsArithmetic(t *testing.T) {
	var s aqm.Stats
	s.Enqueued.Add(100)
	s.Enqueued.Add(200)
	tally.Drop(&s, aqm.DroppedEarly, 50, false)
	tally.Drop(&s, aqm.DroppedOverlimit, 100, true) // an accepted packet evicted
	tally.Drop(&s, aqm.Enqueued, 999, true)         // not a drop: ignored
	tally.NoteSize(&s, 50)
	tally.NoteSize(&s, 20)
	require.Equal(t, aqm.Count{Packets: 2, Bytes: 150}, s.Dropped())
	require.Equal(t, aqm.Count{Packets: 1, Bytes: 100}, s.DroppedQueued)
	require.Equal(t, aqm.Count{Packets: 3, Bytes: 350}, s.Offered())
	require.Equal(t, uint32(50), s.MaxSize)
}

// TestFIFONoAllocs protects the baseline's hot path, per method.
func TestFIFONoAllocs(t *testing.T) {
	q, err := fifo.New[uint64](fifo.Config{LimitPackets: 16, HeadDrop: true}, func(aqm.Packet[uint64], aqm.Verdict) {})
	require.NoError(t, err)
	p := aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100}}
	t.Run("Enqueue+Dequeue", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() { q.Enqueue(p, 5); q.Dequeue(6) }))
	})
	t.Run("HeadDrop", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() { q.Enqueue(p, 5) }))
	})
	t.Run("Stats", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() { statsSink = q.Stats() }))
	})
}

var statsSink aqm.Stats
