package codel

import (
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// glitchHarness drives a CoDel queue with 1000-byte packets and records the
// instants of its drops.
type glitchHarness struct {
	q     *Queue[uint64]
	now   aqm.Time
	drops []aqm.Time
	id    uint64
}

func newGlitchHarness(t *testing.T) *glitchHarness {
	h := &glitchHarness{}
	q, err := New(Config{Control: Control{DisableECN: true}}, func(aqm.Packet[uint64], aqm.Verdict) { h.drops = append(h.drops, h.now) })
	require.NoError(t, err)
	h.q = q
	return h
}

func (h *glitchHarness) enqueue(at aqm.Time) {
	h.now = at
	h.id++
	h.q.Enqueue(pkt(h.id, 1000, aqm.NotECT), at)
}

func (h *glitchHarness) dequeue(at aqm.Time) (aqm.Packet[uint64], bool) {
	h.now = at
	return h.q.Dequeue(at)
}

// standing fills the queue to depth packets stamped depth milliseconds
// before from, then for d from from forwards one packet per millisecond
// (one arrival, one departure): a standing queue whose sojourn time stays
// far above target. It returns how long after
// from the first drop came, or -1 if none did.
func (h *glitchHarness) standing(from aqm.Time, depth int, d time.Duration) time.Duration {
	for h.q.Len() < depth {
		h.enqueue(from.Add(-time.Duration(depth) * time.Millisecond))
	}
	n := len(h.drops)
	for at := from; at < from.Add(d); at = at.Add(time.Millisecond) {
		h.enqueue(at)
		h.dequeue(at)
	}
	if len(h.drops) == n {
		return -1
	}
	return h.drops[n].Sub(from)
}

// light sends one packet every 10 ms for d from from, dequeuing it 1 ms
// later, and returns how many were delivered.
func (h *glitchHarness) light(from aqm.Time, d time.Duration) (sent, got int) {
	for at := from; at < from.Add(d); at = at.Add(10 * time.Millisecond) {
		h.enqueue(at)
		sent++
		for {
			p, ok := h.dequeue(at.Add(time.Millisecond))
			if !ok {
				break
			}
			if p.Payload == h.id {
				got++
			}
		}
	}
	return sent, got
}

// TestTimeGlitchRecovery protects the time policy for CoDel's stored
// instants (the above-target deadline and the drop schedule): after one
// reading far in the future, or alternating extreme readings, a standing
// queue at normal time is dropped from as on a fresh queue within one
// Interval, and light traffic is delivered in full. Without re-anchoring,
// a deadline or drop schedule set at the far reading silenced CoDel for
// good.
func TestTimeGlitchRecovery(t *testing.T) {
	const far = aqm.Time(1) << 62
	interval := defaultInterval
	fresh := newGlitchHarness(t).standing(t0, 30, time.Second)
	require.Positive(t, fresh)

	for name, glitch := range map[string]func(h *glitchHarness) aqm.Time{
		// A far-future dequeue while the delay is above target for the
		// first time: the deadline lands one Interval after the far
		// reading.
		"deadline": func(h *glitchHarness) aqm.Time {
			for range 3 {
				h.enqueue(t0)
			}
			h.dequeue(t0 + far)
			return t0.Add(40 * time.Millisecond)
		},
		// A far-future dequeue while dropping that reaches the drop cap:
		// the next drop is scheduled from the far reading.
		"schedule": func(h *glitchHarness) aqm.Time {
			for range 600 {
				h.enqueue(t0)
			}
			at := t0
			for range 200 {
				at = at.Add(time.Millisecond)
				h.dequeue(at)
			}
			require.True(t, h.q.Detail().Dropping)
			h.dequeue(at + far)
			require.True(t, h.q.Detail().Dropping)
			return at.Add(time.Millisecond)
		},
		// Readings alternating between the ends of the time range.
		"alternating": func(h *glitchHarness) aqm.Time {
			for i := range 40 {
				at := aqm.Time(math.MaxInt64)
				if i%2 == 1 {
					at = math.MinInt64
				}
				h.enqueue(t0)
				h.enqueue(t0)
				h.dequeue(at)
			}
			return t0.Add(time.Millisecond)
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newGlitchHarness(t)
			resume := glitch(h)
			first := h.standing(resume, 30, time.Second)
			require.GreaterOrEqual(t, first, time.Duration(0), "no drop within 1 s of normal time after the glitch")
			require.LessOrEqual(t, first, fresh+interval, "drops resume within one Interval of a fresh queue's")

			h2 := newGlitchHarness(t)
			resume = glitch(h2)
			for h2.q.Len() > 0 {
				h2.dequeue(resume)
			}
			sent, got := h2.light(resume, time.Second)
			require.Equal(t, sent, got, "light traffic after the glitch")
		})
	}
}

// TestBackwardTime protects "backward time counts as zero elapsed": a
// reading before the packets' arrival gives them zero sojourn, so nothing
// is dropped, and the queue then behaves as before.
func TestBackwardTime(t *testing.T) {
	h := newGlitchHarness(t)
	for range 50 {
		h.enqueue(t0 + aqm.Time(time.Second))
	}
	for k := range 50 {
		_, ok := h.dequeue(t0 + aqm.Time(k)*aqm.Time(time.Millisecond))
		require.True(t, ok)
	}
	require.Empty(t, h.drops)
	require.Zero(t, h.q.Detail().FirstAbove)
}
