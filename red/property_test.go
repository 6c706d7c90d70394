package red

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

const propSeed = 20260101

func properties(t *testing.T, n int) *gopter.Properties {
	t.Helper()
	return gopter.NewProperties(proptest.Parameters(t, propSeed, n, max(5, n/4)))
}

// traceCheck drives q with a random trace from seed and calls check after
// every arrival with the verdict, the counters before it and the average
// it was decided on. It returns false as soon as check does.
func traceCheck(q *Queue[int], seed uint64, ops int, check func(v aqm.Verdict, before counters, avg float64) bool) bool {
	r := rand.New(rand.NewPCG(seed, 9))
	now := t0
	pEnq := 0.6
	for i := range ops {
		if i%150 == 0 {
			pEnq = []float64{0.3, 0.55, 0.7, 0.9}[r.IntN(4)]
		}
		if r.IntN(500) == 0 {
			now += aqm.Time(time.Duration(r.IntN(3000)) * time.Millisecond)
		}
		now += aqm.Time(r.IntN(500)) * aqm.Time(time.Microsecond)
		if r.Float64() < pEnq {
			before := q.cnt
			v := q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: uint32(r.IntN(1600)), ECN: aqm.ECN(r.IntN(4))}}, now)
			if !check(v, before, q.avg) {
				return false
			}
		} else {
			q.Dequeue(now)
		}
	}
	return true
}

// TestPropertyNoEarlySignalBelowMinTh protects RED's first rule: while the
// average is below min_th nothing is dropped early, marked or counted as a
// signal.
func TestPropertyNoEarlySignalBelowMinTh(t *testing.T) {
	props := properties(t, 100)
	props.Property("below min_th only limit drops", prop.ForAll(func(cfgSeed, traceSeed uint64) bool {
		c := randomRefConfig(rand.New(rand.NewPCG(cfgSeed, 1)))
		q, err := New[int](c, nil)
		if err != nil {
			return false
		}
		minTh := q.Detail().MinThreshold
		return traceCheck(q, traceSeed, 3000, func(v aqm.Verdict, b counters, avg float64) bool {
			if avg >= minTh {
				return true
			}
			a := q.cnt
			a.adaptations, b.adaptations = 0, 0 // Adaptive RED may adapt; no signal may be counted
			return (v == aqm.Enqueued || v == aqm.DroppedOverlimit) && a == b && q.count == -1
		})
	}, gen.UInt64(), gen.UInt64()))
	props.TestingRun(t)
}

// TestPropertyProbabilityMonotone protects the probability curve: p_b is 0
// at min_th, never decreases with the average, never exceeds 1, reaches
// max_p at max_th (within the fixed-point bound), and with Gentle stays
// below 1 short of 2·max_th when max_p < 1.
func TestPropertyProbabilityMonotone(t *testing.T) {
	props := properties(t, 500)
	props.Property("p_b monotone in avg", prop.ForAll(func(minTh, span int, maxP, x, y float64, gentle bool) bool {
		// Byte mode, so the thresholds need no packet storage; p_b is the same.
		q, err := New[int](Config{ByteMode: true, MinThreshold: minTh, MaxThreshold: minTh + span, MaxP: maxP,
			Gentle: gentle, LimitPackets: 10, LimitBytes: 1 << 40}, nil)
		if err != nil {
			return false
		}
		lo, maxTh := float64(minTh), float64(minTh+span)
		top := maxTh
		if gentle {
			top = 2 * maxTh
		}
		a := lo + math.Min(x, y)*(top-lo)
		b := lo + math.Max(x, y)*(top-lo)
		if b >= top {
			b = math.Nextafter(top, 0)
		}
		if a > b {
			a = b
		}
		pa, pb := q.prob(a), q.prob(b)
		ok := q.prob(lo) == 0 && pa <= pb && pb <= one
		ok = ok && math.Abs(float64(q.prob(maxTh))-maxP*one) <= 1+1e-5
		if gentle && maxP < 1 {
			ok = ok && pb < one
		}
		return ok
	}, gen.IntRange(1, 100000), gen.IntRange(1, 300000), gen.Float64Range(0.001, 1),
		gen.Float64Range(0, 1), gen.Float64Range(0, 1), gen.Bool()))
	props.TestingRun(t)
}

// TestPropertyGentleNeverForcedBelowTwiceMax protects Gentle RED: an
// arrival whose average is in [max_th, 2·max_th) is never a forced signal,
// and with max_p < 1 not every such arrival is signalled.
func TestPropertyGentleNeverForcedBelowTwiceMax(t *testing.T) {
	props := properties(t, 60)
	props.Property("gentle ramp is probabilistic", prop.ForAll(func(cfgSeed, traceSeed uint64) bool {
		c := randomRefConfig(rand.New(rand.NewPCG(cfgSeed, 1)))
		c.Gentle = true
		q, err := New[int](c, nil)
		if err != nil {
			return false
		}
		maxTh := q.Detail().MaxThreshold
		inRamp, signalled := 0, 0
		ok := traceCheck(q, traceSeed, 3000, func(v aqm.Verdict, b counters, avg float64) bool {
			if avg < maxTh || avg >= 2*maxTh {
				return true
			}
			inRamp++
			if q.cnt.probDrops+q.cnt.probMarks != b.probDrops+b.probMarks {
				signalled++
			}
			return q.cnt.forcedDrops == b.forcedDrops && q.cnt.forcedMarks == b.forcedMarks &&
				v != aqm.DroppedOverload
		})
		if q.maxP < 1 && inRamp > 200 && signalled == inRamp {
			return false
		}
		return ok
	}, gen.UInt64(), gen.UInt64()))
	props.TestingRun(t)
}

// TestPropertyAdaptiveMaxPBounds protects Adaptive RED's bounds: on any
// trace, including long idle gaps, max_p stays in [0.01, 0.5].
func TestPropertyAdaptiveMaxPBounds(t *testing.T) {
	props := properties(t, 60)
	props.Property("max_p in [0.01, 0.5]", prop.ForAll(func(cfgSeed, traceSeed uint64) bool {
		c := randomRefConfig(rand.New(rand.NewPCG(cfgSeed, 1)))
		c.Adaptive = true
		c.MaxP = min(max(c.MaxP, minAdaptiveMaxP), maxAdaptiveMaxP)
		q, err := New[int](c, nil)
		if err != nil {
			return false
		}
		return traceCheck(q, traceSeed, 3000, func(aqm.Verdict, counters, float64) bool {
			m := q.Detail().MaxP
			return m >= minAdaptiveMaxP && m <= maxAdaptiveMaxP
		})
	}, gen.UInt64(), gen.UInt64()))
	props.TestingRun(t)
}

// TestPropertyAdaptiveReachesTargetBand protects Adaptive RED's purpose: on
// a steady unresponsive overload (arrivals at 1.1–1.6× the link rate), which
// needs a drop fraction 1 − 1/ratio that max_p in [0.01, 0.5] can give,
// max_p adapts until the average sits in the target band. Checked as the
// mean of the average over the last 20 s of a 60 s run, sampled every 10 ms.
func TestPropertyAdaptiveReachesTargetBand(t *testing.T) {
	props := properties(t, 8)
	props.Property("average settles in [0.4, 0.6] of the band", prop.ForAll(func(ratio float64, seed uint64) bool {
		// Link: 8 Mbit/s of 1000-byte packets = 1000 packets/s; automatic
		// weight 1 − e^(−1/1000); thresholds set by hand so the band is wide.
		c := Config{Gentle: true, Adaptive: true, MinThreshold: 20, MaxThreshold: 80, LinkRate: 8_000_000,
			DisableECN: true, Seed: seed}
		q, err := New[int](c, nil)
		if err != nil {
			return false
		}
		r := rand.New(rand.NewPCG(seed, 5))
		service := aqm.Time(time.Millisecond)
		nextDep := t0 + service
		now := t0
		var sum float64
		var samples int
		nextSample := t0 + aqm.Time(40*time.Second)
		end := t0 + aqm.Time(60*time.Second)
		for now < end {
			// Poisson arrivals at ratio × 1000/s.
			now += aqm.Time(r.ExpFloat64() / ratio * float64(service))
			for nextDep <= now {
				q.Dequeue(nextDep)
				nextDep += service
			}
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now)
			for nextSample <= now {
				sum += q.avg
				samples++
				nextSample += aqm.Time(10 * time.Millisecond)
			}
		}
		mean := sum / float64(samples)
		d := q.Detail()
		t.Logf("ratio %.3f: mean avg %.2f in [%.0f, %.0f]? max_p %.3f", ratio, mean, d.TargetLow, d.TargetHigh, d.MaxP)
		return mean >= d.TargetLow && mean <= d.TargetHigh
	}, gen.Float64Range(1.1, 1.6), gen.UInt64()))
	props.TestingRun(t)
}

// TestPropertyIdleDecay protects the idle decay: for any average and any
// idle gap up to the whole int64 range the new average is finite, in
// [0, old], and equals old·(1−w_q)^(idle/s) (to 1e-9, or to zero below
// 10^−12).
func TestPropertyIdleDecay(t *testing.T) {
	props := properties(t, 1000)
	props.Property("decay in [0, avg], closed form", prop.ForAll(func(avg0, w float64, start int64, gap uint64, shift uint) bool {
		// Byte mode with huge thresholds: the average never reaches them.
		q, err := New[int](Config{ByteMode: true, MinThreshold: 1 << 39, MaxThreshold: 1 << 40, LimitPackets: 10,
			LimitBytes: 1 << 40, Weight: w, LinkRate: 8_000_000}, nil)
		if err != nil {
			return false
		}
		gap >>= shift % 64 // spread gaps over every magnitude
		q.idleStart = aqm.Time(start)
		q.avg = avg0
		now := aqm.Time(uint64(start) + gap)
		if now < q.idleStart {
			now = math.MaxInt64 // the gap wrapped: clamp to the largest instant
			gap = uint64(now) - uint64(start)
		}
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1}}, now)
		got := q.avg
		if math.IsNaN(got) || got < 0 || got > avg0 {
			return false
		}
		// s = 1 ms.
		want := avg0 * math.Pow(1-w, float64(gap)/1e6)
		if want < tinyAvg {
			return got <= 1e-9
		}
		return math.Abs(got-want) <= 1e-9*want
	}, gen.Float64Range(0, 1e12), gen.Float64Range(1e-9, 1), gen.Int64(), gen.UInt64(), gen.UIntRange(0, 63)))
	props.TestingRun(t)
}
