package pie

import (
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// moderate forwards one 1500-byte packet per millisecond for d from from
// over a standing queue of depth packets (a backlog above PIE's two-packet
// safeguard, a delay well below target) and returns the early drops and
// marks from skip on (skip leaves the queue time to recover).
func moderate(q *Queue[int], from aqm.Time, d, skip time.Duration, depth int) (signals int) {
	for at := from; at < from.Add(d); at = at.Add(time.Millisecond) {
		for q.Len() < depth {
			v := q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, at)
			if v != aqm.Enqueued && at >= from.Add(skip) {
				signals++
			}
			if v != aqm.Enqueued {
				break
			}
		}
		q.Dequeue(at)
	}
	return signals
}

// light sends one packet every 10 ms for d, each dequeued (with whatever
// is queued before it) 1 ms later, and returns how many it sent from skip
// on and how many of those were delivered.
func light(q *Queue[int], from aqm.Time, d, skip time.Duration) (sent, got int) {
	id := 0
	for at := from; at < from.Add(d); at = at.Add(10 * time.Millisecond) {
		id++
		q.Enqueue(aqm.Packet[int]{Payload: id, Meta: aqm.Meta{Size: 1500}}, at)
		counted := at >= from.Add(skip)
		if counted {
			sent++
		}
		for {
			p, ok := q.Dequeue(at.Add(time.Millisecond))
			if !ok {
				break
			}
			if counted && p.Payload == id {
				got++
			}
		}
	}
	return sent, got
}

// TestTimeGlitchRecovery protects the time policy for PIE's update
// schedule: after one reading far in the future (which saturates the
// probability) or alternating extreme readings, the schedule is pulled back
// at the first normal reading, so within two TUpdate periods a moderate
// standing queue below target sees no early drop, as on a fresh queue, and
// light traffic is delivered in full once the queue left by the glitch has
// drained. Without re-anchoring the updates
// stopped and the probability stayed at 1.
func TestTimeGlitchRecovery(t *testing.T) {
	const far = aqm.Time(1) << 62
	t0 := aqm.Time(time.Second)
	for _, rate := range []bool{false, true} {
		cfg := Config{Seed: 1, Control: Control{DisableECN: true, RateEstimator: rate}}
		fresh, err := New[int](cfg, nil)
		require.NoError(t, err)
		require.Zero(t, moderate(fresh, t0, time.Second, 0, 4), "rate %v: fresh queue", rate)

		for name, glitch := range map[string]func(q *Queue[int]){
			"far-future": func(q *Queue[int]) {
				for range 40 {
					q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, t0)
				}
				q.Dequeue(t0 + far)
				q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, t0+far)
			},
			"alternating": func(q *Queue[int]) {
				for i := range 40 {
					q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, t0)
					at := aqm.Time(math.MaxInt64)
					if i%2 == 1 {
						at = math.MinInt64
					}
					q.Dequeue(at)
				}
			},
		} {
			q, err := New[int](cfg, nil)
			require.NoError(t, err)
			glitch(q)
			resume := t0.Add(time.Millisecond)
			for q.Len() > 0 {
				q.Dequeue(resume)
			}
			signals := moderate(q, resume, time.Second, 2*defaultTUpdate, 4)
			require.Zero(t, signals, "rate %v %s: early drops after recovery (p %v)", rate, name, q.Detail().Prob)
			require.Less(t, q.Detail().NextUpdate, resume.Add(time.Second+defaultTUpdate+1))

			q, err = New[int](cfg, nil)
			require.NoError(t, err)
			glitch(q)
			sent, got := light(q, resume, time.Second, 2*defaultTUpdate)
			require.Equal(t, sent, got, "rate %v %s: light traffic", rate, name)
		}
	}
}

// TestTimeGlitchRateCycle protects the time policy for the departure-rate
// measurement: a cycle started at a reading far in the future starts again
// at the first normal reading, so the first estimate afterwards is the true
// cycle time, as on a fresh queue, not zero.
func TestTimeGlitchRateCycle(t *testing.T) {
	t0 := aqm.Time(time.Second)
	run := func(glitch bool) time.Duration {
		q, err := New[int](Config{Seed: 1, Control: Control{RateEstimator: true}, LimitPackets: 100}, nil)
		require.NoError(t, err)
		for range 40 {
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, t0)
		}
		if glitch {
			q.Dequeue(t0 + aqm.Time(1)<<62)
			require.True(t, q.Detail().Measuring)
		} else {
			q.Dequeue(t0)
		}
		for k := 1; k <= 12; k++ {
			q.Dequeue(t0.Add(time.Duration(k) * time.Millisecond))
		}
		return q.Detail().AvgDequeueTime
	}
	want := run(false)
	require.Equal(t, 10*time.Millisecond, want)
	require.Equal(t, want, run(true))
}

// TestTimeGlitchRateSamples protects the departure-rate average from
// cycles timed against wrong readings: a drain at a reading far in the
// future (a saturated cycle, then cycles of zero length at the same
// reading) and a cycle that starts at a reading far in the past and ends
// at normal time leave the average as it was, so the delay estimate stays
// that of the link. Without these rules the average became seconds per 16
// KiB and the queue stood about twice as long under overload afterwards.
func TestTimeGlitchRateSamples(t *testing.T) {
	t0 := aqm.Time(time.Second)
	for name, glitch := range map[string]func(q *Queue[int], at aqm.Time){
		"far-future drain": func(q *Queue[int], at aqm.Time) {
			for q.Len() > 0 {
				q.Dequeue(at + aqm.Time(1)<<62)
			}
		},
		"far-past start": func(q *Queue[int], at aqm.Time) {
			for range 3 {
				q.Dequeue(math.MinInt64 + 1)
			}
			for range 12 {
				q.Dequeue(at)
			}
		},
	} {
		q, err := New[int](Config{Seed: 1, Control: Control{RateEstimator: true}, LimitPackets: 200}, nil)
		require.NoError(t, err)
		at := t0
		// One 1500-byte packet per millisecond over a standing queue of
		// 60: cycles of 16 KiB take 11 ms.
		for range 60 {
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, at)
		}
		for range 300 {
			at = at.Add(time.Millisecond)
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, at)
			q.Dequeue(at)
		}
		before := q.Detail().AvgDequeueTime
		require.InDelta(t, float64(11*time.Millisecond), float64(before), float64(time.Millisecond))
		glitch(q, at)
		// The first correct reading after the glitch.
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, at.Add(time.Millisecond))
		after := q.Detail().AvgDequeueTime
		require.LessOrEqual(t, after, before, name)
		require.Greater(t, after, before/2, name)
	}
}
