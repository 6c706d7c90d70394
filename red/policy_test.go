package red

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// glitchConfig has a fast average (w_q = 0.01 per arrival, s = 1 ms) so that
// a standing queue pushes the average far above max_th and an idle link
// brings it back within about 150 ms.
var glitchConfig = Config{MinThreshold: 5, MaxThreshold: 15, Weight: 0.01, LinkRate: 8 * aqm.Mbit,
	LimitPackets: 100, Seed: 9}

// loadAboveMax builds a standing queue of 25 packets and holds it until
// the average is about 25, above max_th.
func loadAboveMax(t *testing.T, q *Queue[int], now aqm.Time) aqm.Time {
	t.Helper()
	for range 25 {
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now)
	}
	for range 1000 {
		now += aqm.Time(time.Millisecond)
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now)
	}
	require.Greater(t, q.avg, 20.0)
	return now
}

// lightTraffic offers one Not-ECT packet per millisecond for 10 s, each
// sent at once, and returns how many got through.
func lightTraffic(q *Queue[int], now aqm.Time) int {
	delivered := 0
	for range 10_000 {
		now += aqm.Time(time.Millisecond)
		if q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now).Accepted() {
			if _, ok := q.Dequeue(now); ok {
				delivered++
			}
		}
	}
	return delivered
}

// TestTimeGlitchIdleStart protects the idle decay against one far-future
// reading: a Dequeue at now+2^62 that empties the queue must not park the
// idle start in the future (which froze the stale average above max_th
// and dropped every later packet); light traffic afterwards gets through
// as on a queue that saw no glitch.
func TestTimeGlitchIdleStart(t *testing.T) {
	run := func(glitch bool) int {
		q, err := New[int](glitchConfig, nil)
		require.NoError(t, err)
		now := loadAboveMax(t, q, t0)
		for q.Len() > 1 {
			q.Dequeue(now)
		}
		at := now
		if glitch {
			at = now + 1<<62
		}
		q.Dequeue(at)
		return lightTraffic(q, now)
	}
	clean, glitched := run(false), run(true)
	t.Logf("delivered of 10000: clean %d, after the glitch %d", clean, glitched)
	require.Greater(t, clean, 9500)
	require.GreaterOrEqual(t, glitched, clean-5, "recovery must take at most a few packets longer than without the glitch")
}

// TestTimeGlitchAlternating protects the idle decay against alternating
// extreme readings (math.MinInt64 and math.MaxInt64) while the queue
// drains: light traffic at normal time afterwards gets through.
func TestTimeGlitchAlternating(t *testing.T) {
	run := func(glitch bool) int {
		q, err := New[int](glitchConfig, nil)
		require.NoError(t, err)
		now := loadAboveMax(t, q, t0)
		lo, hi := aqm.Time(math.MinInt64), aqm.Time(math.MaxInt64)
		if !glitch {
			lo, hi = now, now
		}
		for q.Len() > 0 {
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, lo)
			q.Dequeue(hi)
		}
		return lightTraffic(q, now)
	}
	clean, glitched := run(false), run(true)
	t.Logf("delivered of 10000: clean %d, after the glitch %d", clean, glitched)
	require.Greater(t, clean, 9500)
	require.GreaterOrEqual(t, glitched, clean-5)
}

// TestTimeGlitchAdaptive protects Adaptive RED's clock: after one arrival
// at now+2^62 the next adaptation instant must come back to normal time,
// so max_p keeps adapting to a standing queue above the target band.
func TestTimeGlitchAdaptive(t *testing.T) {
	run := func(glitch bool) (uint64, float64) {
		c := glitchConfig
		c.Gentle, c.Adaptive, c.Weight, c.AdaptInterval = true, true, 0.2, 100*time.Millisecond
		q, err := New[int](c, nil)
		require.NoError(t, err)
		now := t0
		for range 12 { // a standing queue of 12: above the band [9, 11]
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000, ECN: aqm.ECT0}}, now)
		}
		if glitch {
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000, ECN: aqm.ECT0}}, now+1<<62)
		}
		before := q.Detail().Adaptations
		for range 1000 { // 1 s: ten adaptation intervals
			now += aqm.Time(time.Millisecond)
			if q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000, ECN: aqm.ECT0}}, now).Accepted() {
				for q.Len() > 12 {
					q.Dequeue(now)
				}
			}
		}
		return q.Detail().Adaptations - before, q.Detail().MaxP
	}
	cleanN, cleanP := run(false)
	n, p := run(true)
	t.Logf("adaptations in 1 s: clean %d (max_p %.4f), after the glitch %d (max_p %.4f)", cleanN, cleanP, n, p)
	require.GreaterOrEqual(t, cleanN, uint64(8))
	require.GreaterOrEqual(t, n+1, cleanN, "at most one interval of recovery")
}

// TestBackwardTimeNeverFreezesDecay protects the rule that time going
// backwards counts as zero elapsed without stopping later decay: after an
// arrival dated one second early, the next arrival 50 ms later decays the
// average by exactly 50 ms worth.
func TestBackwardTimeNeverFreezesDecay(t *testing.T) {
	q, err := New[int](Config{MinThreshold: 50, MaxThreshold: 150, Weight: 0.5, LinkRate: 8 * aqm.Mbit, Seed: 1}, nil)
	require.NoError(t, err)
	now := t0
	for range 10 {
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now)
	}
	for q.Len() > 0 {
		q.Dequeue(now)
	}
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now-aqm.Time(time.Second)) // backwards: no decay
	a := q.avg
	require.Greater(t, a, 1.0)
	q.Dequeue(now - aqm.Time(time.Second))
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now-aqm.Time(time.Second)+aqm.Time(50*time.Millisecond))
	// 50 ms at s = 1 ms: 50 packet times at w = 0.5.
	require.InDelta(t, a*math.Pow(0.5, 50), q.avg, 1e-12)
}

// TestSeeds protects the seed rule: zero draws a secret seed per queue (two
// default queues make different decisions), a fixed seed is reproducible,
// Config reports the seed in use, and Reconfigure with Seed 0 keeps the
// stream.
func TestSeeds(t *testing.T) {
	trace := func(q *Queue[int]) []aqm.Verdict {
		var vs []aqm.Verdict
		now := t0
		for i := range 3000 {
			now += aqm.Time(time.Microsecond)
			vs = append(vs, q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now))
			if i%2 == 0 {
				q.Dequeue(now)
			}
			for q.Len() > 40 {
				q.Dequeue(now)
			}
		}
		return vs
	}
	c := Config{MinThreshold: 5, MaxThreshold: 200, Weight: 0.2, MaxP: 0.5}
	a, err := New[int](c, nil)
	require.NoError(t, err)
	b, err := New[int](c, nil)
	require.NoError(t, err)
	require.NotZero(t, a.Config().Seed)
	eff := a.Config()
	eff.Seed = 0
	require.Equal(t, filled(c), eff, "Config reports the effective configuration")
	require.NotEqual(t, a.Config().Seed, b.Config().Seed)
	require.NotEqual(t, trace(a), trace(b), "two zero-seed queues must draw different streams")

	c.Seed = 77
	x, _ := New[int](c, nil)
	y, _ := New[int](c, nil)
	require.EqualValues(t, 77, x.Config().Seed)
	require.Equal(t, trace(x), trace(y))

	// Reconfigure with Seed 0 keeps the seed and the stream position.
	x, _ = New[int](c, nil)
	y, _ = New[int](c, nil)
	c2 := c
	c2.Seed = 0
	require.NoError(t, y.Reconfigure(c2))
	require.EqualValues(t, 77, y.Config().Seed)
	require.Equal(t, trace(x), trace(y))
}

// TestConfigForLink protects the preset: it validates at every rate, sets
// the link rate, sizes the packet limit from the buffer rule (never below
// max_th), and keeps the rest at the defaults (a zero rate is
// internal/configcheck's TestConfigForLinkZeroRate).
func TestConfigForLink(t *testing.T) {
	for _, rate := range []aqm.Rate{aqm.Mbit, 8 * aqm.Mbit, 100 * aqm.Mbit, 10 * aqm.Gbit, 100 * aqm.Gbit, aqm.Tbit, maxLinkRate * 2} {
		for _, rtt := range []time.Duration{0, 10 * time.Millisecond, 300 * time.Millisecond} {
			c := ConfigForLink(rate, rtt)
			require.NoError(t, c.Validate(), "rate %v rtt %v", rate, rtt)
			want := min(rate, maxLinkRate)
			require.Equal(t, want, c.LinkRate)
			eff := filled(c)
			require.GreaterOrEqual(t, c.LimitPackets, want.BufferPackets(rtt))
			require.GreaterOrEqual(t, c.LimitPackets, eff.MaxThreshold)
			if eff.MaxThreshold <= want.BufferPackets(rtt) {
				require.Equal(t, want.BufferPackets(rtt), c.LimitPackets)
			}
			require.Equal(t, Config{LinkRate: c.LinkRate, LimitPackets: c.LimitPackets}, c)
		}
	}
	// 8 Mbit/s, 100 ms: 400 kB, 265 full-size packets.
	require.Equal(t, 265, ConfigForLink(8*aqm.Mbit, 100*time.Millisecond).LimitPackets)
}

// TestMemoryBounded protects the memory rule: a limit derived from the
// thresholds is capped (byte mode) or must be set explicitly (packet mode),
// and Detail reports what the ring preallocated.
func TestMemoryBounded(t *testing.T) {
	q, err := New[uint64](Config{ByteMode: true, MinThreshold: 1 << 38, MaxThreshold: 1 << 39, Seed: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, maxDerivedLimitPackets, q.Config().LimitPackets)
	d := q.Detail()
	require.GreaterOrEqual(t, d.MemoryBytes, maxDerivedLimitPackets*32)
	require.Less(t, d.MemoryBytes, maxDerivedLimitPackets*32+4096)

	_, err = New[uint64](Config{MinThreshold: 1 << 20, MaxThreshold: 1 << 21}, nil)
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.Contains(t, err.Error(), "red: LimitPackets (0)")

	q, err = New[uint64](Config{LimitPackets: 1000, Seed: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, 1024*32+int(unsafeSizeofQueue(q)), q.Detail().MemoryBytes)
}

// TestDetailMetrics protects the metric export: names are unique and
// lower_snake, and each value is the Detail field it names.
func TestDetailMetrics(t *testing.T) {
	for _, byteMode := range []bool{false, true} {
		c := Config{Gentle: true, Adaptive: true, ByteMode: byteMode, Seed: 3}
		q, err := New[int](c, nil)
		require.NoError(t, err)
		now := t0
		for range 3000 {
			now += aqm.Time(10 * time.Microsecond)
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now)
		}
		d := q.Detail()
		got := map[string]float64{}
		for m := range d.metrics() {
			_, dup := got[m.Name]
			require.False(t, dup, m.Name)
			require.Regexp(t, `^[a-z][a-z0-9_]*$`, m.Name)
			got[m.Name] = m.Value
		}
		unit := "_packets"
		if byteMode {
			unit = "_bytes"
		}
		want := map[string]float64{
			"average_queue" + unit: d.Avg, "max_probability": d.MaxP, "probability": d.Prob,
			"count_packets": float64(d.Count), "min_threshold" + unit: d.MinThreshold,
			"max_threshold" + unit: d.MaxThreshold, "weight": d.Weight,
			"target_low" + unit: d.TargetLow, "target_high" + unit: d.TargetHigh,
			"dropped_probabilistic_packets": float64(d.DroppedProbabilistic), "marked_probabilistic_packets": float64(d.MarkedProbabilistic),
			"dropped_forced_packets": float64(d.DroppedForced), "marked_forced_packets": float64(d.MarkedForced),
			"adaptations": float64(d.Adaptations), "memory_bytes": float64(d.MemoryBytes),
		}
		require.Equal(t, want, got)
		require.Positive(t, d.DroppedProbabilistic+d.DroppedForced)
	}
}

// TestBurstMatchesLoop protects the burst path where the kit's Burst check
// cannot look: over random configurations (the kit runs named ones) and on
// the idle start and Adaptive RED's next instant (state Detail does not
// show). On random traces (bursts of 0..300 packets, random sizes, ECN and
// time steps, including backward and far jumps) EnqueueBatch and
// DequeueBatch give exactly what the loops of Enqueue and Dequeue give:
// verdicts, counts, packets, order, Stats, Detail and those instants.
func TestBurstMatchesLoop(t *testing.T) {
	runs, ops := 60, 300
	if testing.Short() {
		runs, ops = 20, 150
	}
	r := rand.New(rand.NewPCG(42, 43))
	for run := range runs {
		c := randomRefConfig(r)
		var dropsA, dropsB int
		a, err := New[uint64](c, func(aqm.Packet[uint64], aqm.Verdict) { dropsA++ })
		require.NoError(t, err)
		b, err := New[uint64](c, func(aqm.Packet[uint64], aqm.Verdict) { dropsB++ })
		require.NoError(t, err)
		now := t0
		var seq uint64
		ps := make([]aqm.Packet[uint64], 300)
		va, vb := make([]aqm.Verdict, 300), make([]aqm.Verdict, 300)
		ba, bb := make([]aqm.Packet[uint64], 300), make([]aqm.Packet[uint64], 300)
		for op := range ops {
			switch x := r.IntN(100); {
			case x < 2:
				now += aqm.Time([]int64{-int64(time.Second), 1 << 62, int64(time.Hour)}[r.IntN(3)])
			default:
				now += aqm.Time(r.IntN(3000)) * aqm.Time(time.Microsecond)
			}
			n := r.IntN(301)
			if r.IntN(2) == 0 {
				ps := ps[:n]
				for i := range ps {
					seq++
					ps[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{
						Size: uint32([]int{1000, 1500, 64, 0, 9000}[r.IntN(5)]), ECN: aqm.ECN(r.IntN(8))}}
				}
				nv := n - r.IntN(2)*r.IntN(n+1) // sometimes fewer verdict slots
				ka := a.EnqueueBatch(ps, va[:nv], now)
				kb := aqm.EnqueueLoop[uint64](b, ps, vb[:nv], now)
				require.Equal(t, kb, ka, "run %d op %d", run, op)
				require.Equal(t, vb[:nv], va[:nv], "run %d op %d", run, op)
			} else {
				ka := a.DequeueBatch(ba[:n], now)
				kb := aqm.DequeueLoop[uint64](b, bb[:n], now)
				require.Equal(t, kb, ka, "run %d op %d", run, op)
				require.Equal(t, bb[:kb], ba[:ka], "run %d op %d", run, op)
			}
			require.Equal(t, b.Stats(), a.Stats(), "run %d op %d", run, op)
			require.Equal(t, b.Detail(), a.Detail(), "run %d op %d", run, op)
			require.Equal(t, b.idleStart, a.idleStart, "run %d op %d", run, op)
			require.Equal(t, b.nextTick, a.nextTick, "run %d op %d", run, op)
			require.Equal(t, dropsB, dropsA)
		}
	}
}

func unsafeSizeofQueue[T any](q *Queue[T]) uintptr { return unsafe.Sizeof(*q) }
