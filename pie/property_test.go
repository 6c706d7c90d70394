package pie

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

const propSeed = 8033

func propParams(t *testing.T, minSuccessful int) *gopter.TestParameters {
	return proptest.Parameters(t, propSeed, minSuccessful, max(3, minSuccessful/5))
}

// randomTrace drives q with a random mix of arrivals, departures, idle gaps
// and backward steps drawn from g, calling check before each arrival (after
// the updates due at that instant) and after every operation. check returns
// false to fail the property.
func randomTrace(q *Queue[int], g *rand.Rand, ops int, check func(phase int, v aqm.Verdict) bool) bool {
	now := aqm.Time(time.Second)
	pEnq := 0.5
	for op := range ops {
		if op%400 == 0 {
			pEnq = []float64{0.3, 0.55, 0.7, 0.9}[g.IntN(4)]
		}
		switch r := g.IntN(1000); {
		case r < 4:
			now = now.Add(time.Duration(g.IntN(5000)) * time.Millisecond)
		case r < 6:
			now -= aqm.Time(g.IntN(int(10 * time.Millisecond)))
		default:
			now += aqm.Time(g.IntN(int(time.Millisecond)))
		}
		if g.Float64() < pEnq {
			q.advance(now)
			if !check(0, 0) {
				return false
			}
			size := uint32(1500)
			if g.IntN(3) == 0 {
				size = uint32(g.IntN(3000))
			}
			v := q.Enqueue(aqm.Packet[int]{Payload: op, Meta: aqm.Meta{Size: size, ECN: aqm.ECN(g.IntN(4))}}, now)
			if !check(1, v) {
				return false
			}
		} else {
			q.Dequeue(now)
			if !check(2, 0) {
				return false
			}
		}
	}
	return true
}

// TestPropertyBounds protects the state invariants on random configurations
// and traces: p and the reported probability in [0, 1], the burst allowance
// in [0, MAX_BURST], qdelay_old in [0, maxDelay], the accumulator below
// 8.5 + 1.
func TestPropertyBounds(t *testing.T) {
	props := gopter.NewProperties(propParams(t, 40))
	props.Property("state stays in range", prop.ForAll(func(seed uint64) bool {
		g := rand.New(rand.NewPCG(seed, 3))
		cfg := randomConfig(g)
		q, err := New[int](cfg, nil)
		if err != nil {
			return false
		}
		c := &q.ctl
		return randomTrace(q, g, 3000, func(int, aqm.Verdict) bool {
			d := q.Detail()
			return c.p >= 0 && c.p <= probOne && d.Prob >= 0 && d.Prob <= 1 &&
				c.burst >= 0 && c.burst <= q.pp.maxBurst &&
				c.old >= 0 && c.old <= int64(maxDelay) &&
				c.accu >= 0 && c.accu < accuHigh+probOne
		})
	}, gen.UInt64()))
	props.TestingRun(t)
}

// TestPropertySafeguards protects RFC 8033 §4.1: no arrival is dropped early
// or marked while qdelay_old < ref/2 and p < 0.2, or while the backlog is at
// most 2·MEAN_PKTSIZE, and none while burst allowance remains.
func TestPropertySafeguards(t *testing.T) {
	var signals, guarded int
	props := gopter.NewProperties(propParams(t, 40))
	props.Property("no early drop under a safeguard", prop.ForAll(func(seed uint64) bool {
		g := rand.New(rand.NewPCG(seed, 4))
		cfg := randomConfig(g)
		q, err := New[int](cfg, nil)
		if err != nil {
			return false
		}
		safe := false
		return randomTrace(q, g, 3000, func(phase int, v aqm.Verdict) bool {
			switch phase {
			case 0:
				c := &q.ctl
				safe = (2*c.old < q.pp.target && c.p < safeProb) || q.backlog <= q.pp.safeBytes || c.burst > 0
			case 1:
				early := v == aqm.Marked || v == aqm.DroppedEarly || v == aqm.DroppedOverload
				if safe && early {
					return false
				}
				if early {
					signals++
				}
				if safe {
					guarded++
				}
			}
			return true
		})
	}, gen.UInt64()))
	props.TestingRun(t)
	// Not vacuous: both sides of the rule occurred.
	t.Logf("%d guarded arrivals, %d early signals", guarded, signals)
	if signals == 0 || guarded == 0 {
		t.Fatal("traces never exercised the safeguards")
	}
}

// openLoop is a deterministic open-loop bottleneck: packets of 1500 bytes
// arrive every 1/lambda s and the link sends one every 1/capacity s while
// the queue is not empty. It reports, for the time after warm-up, the
// fraction of arrivals refused and the mean sojourn of departures.
func openLoop(q *Queue[int], lambda, capacity float64, warm, total time.Duration) (dropFrac float64, meanDelay time.Duration, overlimit uint64) {
	ia := time.Duration(1e9 / lambda)
	is := time.Duration(1e9 / capacity)
	t0 := aqm.Time(time.Second)
	nextA, nextS := t0, t0.Add(is)
	end, from := t0.Add(total), t0.Add(warm)
	var arrivals, drops, departures uint64
	var sojourn time.Duration
	for nextA < end || nextS < end {
		if nextA <= nextS {
			v := q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, nextA)
			if nextA >= from {
				arrivals++
				if !v.Accepted() {
					drops++
				}
				if v == aqm.DroppedOverlimit {
					overlimit++
				}
			}
			nextA = nextA.Add(ia)
		} else {
			if p, ok := q.Dequeue(nextS); ok && nextS >= from {
				departures++
				sojourn += p.Enqueued.Since(nextS)
			}
			nextS = nextS.Add(is)
		}
	}
	return float64(drops) / float64(arrivals), sojourn / time.Duration(departures), overlimit
}

// TestPropertyOpenLoopOverload protects PIE's control goal under a steady
// unresponsive overload lambda > C (fluid argument: the queue is bounded, so
// in the long run exactly C of lambda gets through): the drop fraction after
// warm-up is 1 − C/lambda within 0.01 and the mean queueing delay is within
// 20% of the 15 ms target, for both delay estimators.
func TestPropertyOpenLoopOverload(t *testing.T) {
	total := 60 * time.Second
	if testing.Short() {
		total = 40 * time.Second
	}
	props := gopter.NewProperties(propParams(t, 12))
	props.Property("drop fraction 1-C/λ, delay ≈ target", prop.ForAll(func(ratio float64, capIdx int, rate bool) bool {
		capacity := []float64{2000, 5000, 10000}[capIdx]
		lambda := ratio * capacity
		q, err := New[int](Config{Control: Control{RateEstimator: rate, DisableECN: true}, LimitPackets: 1 << 20, Seed: uint64(capIdx) + 1}, nil)
		if err != nil {
			return false
		}
		frac, delay, over := openLoop(q, lambda, capacity, 20*time.Second, total)
		want := 1 - capacity/lambda
		t.Logf("λ/C %.3f C %v rate %v: drop fraction %.4f want %.4f, mean delay %v", ratio, capacity, rate, frac, want, delay)
		ok := math.Abs(frac-want) <= 0.01 && math.Abs(float64(delay-defaultTarget)) <= 0.2*float64(defaultTarget) && over == 0
		return ok
	}, gen.Float64Range(1.05, 3), gen.IntRange(0, 2), gen.Bool()))
	props.TestingRun(t)
}
