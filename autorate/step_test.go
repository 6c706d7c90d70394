package autorate

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// at returns the instant t milliseconds after an arbitrary non-zero epoch.
func at(t int) aqm.Time { return aqm.Time(time.Second) + aqm.Time(t)*aqm.Time(ms) }

// op is one call of a step table: a sample (reflector, delay), an achieved
// rate, or a tick, with the decision it must return.
type op struct {
	t        int // ms
	kind     byte
	refl     int
	delay    time.Duration
	achieved aqm.Rate
	want     Action
	rate     aqm.Rate // the rate after the call
}

func sample(t, refl int, d time.Duration, want Action, rate aqm.Rate) op {
	return op{t: t, kind: 's', refl: refl, delay: d, want: want, rate: rate}
}

func load(t int, r aqm.Rate, rate aqm.Rate) op {
	return op{t: t, kind: 'a', achieved: r, want: Hold, rate: rate}
}

func tick(t int, want Action, rate aqm.Rate) op {
	return op{t: t, kind: 't', want: want, rate: rate}
}

func run(t *testing.T, c *Controller, ops []op) {
	t.Helper()
	for i, o := range ops {
		var d Decision
		switch o.kind {
		case 's':
			d = c.Sample(at(o.t), o.refl, o.delay)
		case 'a':
			d = c.Achieved(at(o.t), o.achieved)
		default:
			d = c.Tick(at(o.t))
		}
		require.Equal(t, o.want, d.Action, "step %d (t=%dms %c)", i, o.t, o.kind)
		require.InDelta(t, float64(o.rate), float64(d.Rate), 1, "step %d (t=%dms %c)", i, o.t, o.kind)
		require.Equal(t, d.Rate, c.Rate(), "step %d", i)
	}
}

// stepConfig is the configuration of the step tables: every default but
// the rates, so that the thresholds are 30, 10 and 60 ms plus 12000 bits
// at the current rate (0.24 ms at 50 Mbit/s).
var stepConfig = Config{MinRate: 10 * aqm.Mbit, BaseRate: 50 * aqm.Mbit, MaxRate: 100 * aqm.Mbit}

func newStep(t *testing.T, cfg Config) *Controller {
	t.Helper()
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

// TestCutSteps protects the bufferbloat response: three delayed samples of
// six cut the rate by MinCut + f·(MaxCut − MinCut), f the mean rise's place
// between the delay threshold and FullCutAbove, and nothing moves during
// CutRefractory. The rates were worked out by hand from the package doc's
// formulas: at 150 ms the window holds rises 0, 99.94, 99.88006 and
// 99.82018 ms, mean 49.90007 ms, f = (49.90007 − 30.24)/30 = 0.65534, cut
// 0.16728, rate 50e6·0.83272 = 41635973; at 450 ms the mean is 99.65 ms,
// above FullCutAbove, so the full 0.25: 31226980; at 750 ms four of six
// are still delayed, mean 66.36 ms: 23420235.
func TestCutSteps(t *testing.T) {
	c := newStep(t, stepConfig)
	run(t, c, []op{
		sample(0, 0, 20*ms, Hold, 50*aqm.Mbit), // first sample: baseline 20 ms
		sample(50, 0, 120*ms, Hold, 50*aqm.Mbit),
		sample(100, 0, 120*ms, Hold, 50*aqm.Mbit),
		sample(150, 0, 120*ms, Cut, 41635973),  // third delayed sample
		sample(200, 0, 120*ms, Hold, 41635973), // CutRefractory
		sample(449, 0, 120*ms, Hold, 41635973), // still within 300 ms
		sample(450, 0, 120*ms, Cut, 31226980),  // refractory over; full cut
		sample(500, 0, 20*ms, Hold, 31226980),  // bloat still in the window, refractory
		sample(750, 0, 20*ms, Cut, 23420235),   // four delayed of six, mean 66.36 ms: the full cut again
	})
	require.Equal(t, uint64(3), c.Stats().Cuts)
}

// TestAchievedCutSteps protects AchievedCut: a cut goes to AchievedCut
// times the last achieved rate when that is lower than the scaled cut and
// above MinRate, and to the scaled cut otherwise; a fallback forgets the
// achieved rate. The delays are TestCutSteps', so the scaled cuts are
// worked out as there: 41635973 at 150 ms, but 0.9 of 30 Mbit/s is lower:
// 27000000; at 450 ms the full 0.25 of that, 20250000, since 0.9 of
// 5 Mbit/s is below MinRate; at 750 ms the full cut again, 15187500, below
// 0.9 of 20 Mbit/s.
func TestAchievedCutSteps(t *testing.T) {
	cfg := stepConfig
	cfg.AchievedCut = DefaultAchievedCut
	c := newStep(t, cfg)
	run(t, c, []op{
		load(0, 30*aqm.Mbit, 50*aqm.Mbit), // not high: no increase
		sample(0, 0, 20*ms, Hold, 50*aqm.Mbit),
		sample(50, 0, 120*ms, Hold, 50*aqm.Mbit),
		sample(100, 0, 120*ms, Hold, 50*aqm.Mbit),
		sample(150, 0, 120*ms, Cut, 27*aqm.Mbit), // 0.9·30 Mbit/s < 41635973
		load(200, 5*aqm.Mbit, 27*aqm.Mbit),
		sample(200, 0, 120*ms, Hold, 27*aqm.Mbit),
		sample(449, 0, 120*ms, Hold, 27*aqm.Mbit),
		sample(450, 0, 120*ms, Cut, 20250000), // 4.5 Mbit/s is below MinRate: scaled
		load(500, 20*aqm.Mbit, 20250000),
		sample(500, 0, 20*ms, Hold, 20250000),
		sample(750, 0, 20*ms, Cut, 15187500), // scaled, below 18 Mbit/s
	})
	require.Equal(t, uint64(3), c.Stats().Cuts)
	require.Equal(t, uint64(1), c.Stats().AchievedCuts)
	// After a fallback the achieved rate is forgotten: bufferbloat before
	// the next report is cut on the scale alone, from BaseRate.
	run(t, c, []op{load(800, 25*aqm.Mbit, 15187500), tick(10800, Fallback, 50*aqm.Mbit)})
	require.Equal(t, Hold, c.Sample(at(11000), 0, 20*ms).Action)
	for _, t0 := range []int{11050, 11100} {
		require.Equal(t, Hold, c.Sample(at(t0), 0, 120*ms).Action)
	}
	d := c.Sample(at(11150), 0, 120*ms)
	require.Equal(t, Cut, d.Action)
	require.Greater(t, d.Rate, 40*aqm.Mbit, "a cut to 0.9 of the achieved rate before the fallback")
	require.Equal(t, uint64(1), c.Stats().AchievedCuts)
}

// TestIncreaseSteps protects the increase: only under high load (achieved
// ≥ 75% of the rate), once per achieved-rate report and IncreaseRefractory,
// by MinIncrease + f·(MaxIncrease − MinIncrease) with f the mean rise's
// place between the delay threshold and FullIncreaseBelow. Worked out by
// hand: with an empty window the full 4% (52 Mbit/s); at 1210 ms the
// window holds 0, 0, 29.97, 29.94003, 29.91006 and 29.88009 ms, mean
// 24.92510 ms, f = (30.23077 − 24.92510)/20 = 0.26528, increase 1.06113%:
// 52551790.
func TestIncreaseSteps(t *testing.T) {
	c := newStep(t, stepConfig)
	run(t, c, []op{
		load(0, 40*aqm.Mbit, 50*aqm.Mbit), // 40 ≥ 37.5: high
		sample(10, 0, 20*ms, Increase, 52*aqm.Mbit),
		sample(20, 0, 20*ms, Hold, 52*aqm.Mbit), // no report since the increase
		load(30, 45*aqm.Mbit, 52*aqm.Mbit),      // 45 ≥ 39: high
		sample(40, 0, 20*ms, Hold, 52*aqm.Mbit), // IncreaseRefractory
		sample(60, 0, 50*ms, Hold, 52*aqm.Mbit),
		sample(80, 0, 50*ms, Hold, 52*aqm.Mbit),
		sample(100, 0, 50*ms, Hold, 52*aqm.Mbit),
		sample(120, 0, 50*ms, Hold, 52*aqm.Mbit),
		sample(210, 0, 50*ms, Increase, 52551790), // partial: the rise nears the threshold
		load(300, 30*aqm.Mbit, 52551790),          // 30 < 39.4: not high
		sample(500, 0, 20*ms, Hold, 52551790),     // low load, but within DecayRefractory
	})
	require.Equal(t, uint64(2), c.Stats().Increases)
}

// TestDecaySteps protects the return to BaseRate at low load: one
// DecayStep (1%) per DecayRefractory, from above and from below, never
// past BaseRate.
func TestDecaySteps(t *testing.T) {
	c := newStep(t, stepConfig)
	run(t, c, []op{
		load(0, 40*aqm.Mbit, 50*aqm.Mbit),
		sample(0, 0, 20*ms, Increase, 52*aqm.Mbit),
		load(100, aqm.Mbit, 52*aqm.Mbit),
		sample(999, 0, 20*ms, Hold, 52*aqm.Mbit), // DecayRefractory from the increase
		sample(1000, 0, 20*ms, Decay, 51480000),  // 52e6·0.99
		sample(1500, 0, 20*ms, Hold, 51480000),
		sample(2000, 0, 20*ms, Decay, 50965200),
		sample(3000, 0, 20*ms, Decay, 50455548),
		sample(4000, 0, 20*ms, Decay, 50*aqm.Mbit), // 49951...: stops at BaseRate
		sample(5000, 0, 20*ms, Hold, 50*aqm.Mbit),  // at BaseRate: nothing to do
		// Below BaseRate: a cut, then decay upwards.
		sample(5100, 0, 200*ms, Hold, 50*aqm.Mbit),
		sample(5200, 0, 200*ms, Hold, 50*aqm.Mbit),
		sample(5300, 0, 200*ms, Cut, 37500000), // mean far above FullCutAbove: 25%
		sample(5400, 0, 20*ms, Hold, 37500000),
		sample(5500, 0, 20*ms, Hold, 37500000), // three delayed still: bloat, but CutRefractory
		sample(5550, 0, 20*ms, Hold, 37500000),
		sample(5599, 0, 20*ms, Hold, 37500000),  // two delayed: low load, CutRefractory
		sample(5700, 0, 20*ms, Hold, 37500000),  // one delayed: low load, but DecayRefractory
		sample(6300, 0, 20*ms, Decay, 37875000), // 37.5e6·1.01, DecayRefractory after the cut
		sample(7300, 0, 20*ms, Decay, 38253750),
	})
}

// TestBoundsSteps protects MinRate and MaxRate: a cut never goes below the
// minimum and an increase never above the maximum, the decision being
// reported although the rate stays.
func TestBoundsSteps(t *testing.T) {
	cfg := stepConfig
	cfg.MaxRate = 51 * aqm.Mbit
	cfg.MinRate = 48 * aqm.Mbit
	c := newStep(t, cfg)
	run(t, c, []op{
		load(0, 50*aqm.Mbit, 50*aqm.Mbit),
		sample(0, 0, 20*ms, Increase, 51*aqm.Mbit), // 52 clamped to 51
		load(200, 50*aqm.Mbit, 51*aqm.Mbit),
		sample(200, 0, 20*ms, Increase, 51*aqm.Mbit), // at the maximum
		sample(300, 0, 200*ms, Hold, 51*aqm.Mbit),    // no report since the increase
		sample(400, 0, 200*ms, Hold, 51*aqm.Mbit),
		sample(500, 0, 200*ms, Cut, 48*aqm.Mbit), // 38.25 clamped to 48
		sample(800, 0, 200*ms, Cut, 48*aqm.Mbit), // at the minimum
	})
}

// TestProbeLossSteps protects the answer to probes that stop: the rate
// holds (ticks and load reports change nothing) until no active reflector
// has answered for ProbeTimeout, then falls back to BaseRate once, and the
// first sample resumes normal operation from there with a clean window
// and no stale load report.
func TestProbeLossSteps(t *testing.T) {
	c := newStep(t, stepConfig)
	run(t, c, []op{
		load(0, 40*aqm.Mbit, 50*aqm.Mbit),
		sample(0, 0, 20*ms, Increase, 52*aqm.Mbit),
		tick(5000, Hold, 52*aqm.Mbit),
		load(9000, 50*aqm.Mbit, 52*aqm.Mbit), // high load, no probes: hold
		tick(9999, Hold, 52*aqm.Mbit),
		tick(10000, Fallback, 50*aqm.Mbit), // 10 s after the last sample
		tick(11000, Hold, 50*aqm.Mbit),     // once per outage
		tick(30000, Hold, 50*aqm.Mbit),
		sample(30100, 0, 20*ms, Hold, 50*aqm.Mbit), // high, but the report was cleared
		load(30200, 45*aqm.Mbit, 50*aqm.Mbit),
		sample(30300, 0, 20*ms, Increase, 52*aqm.Mbit),
		tick(40299, Hold, 52*aqm.Mbit),
		{t: 40300, kind: 'a', achieved: 45 * aqm.Mbit, want: Fallback, rate: 50 * aqm.Mbit}, // a load report notices the timeout too
	})
	d := c.Achieved(at(40300), 45*aqm.Mbit)
	require.Equal(t, Hold, d.Action, "fell back already")
	require.Equal(t, 50*aqm.Mbit, c.Rate())
	require.Equal(t, uint64(2), c.Stats().Fallbacks)
	// From below BaseRate the fallback raises the rate.
	c = newStep(t, stepConfig)
	run(t, c, []op{
		sample(0, 0, 20*ms, Hold, 50*aqm.Mbit),
		sample(100, 0, 200*ms, Hold, 50*aqm.Mbit),
		sample(200, 0, 200*ms, Hold, 50*aqm.Mbit),
		sample(300, 0, 200*ms, Cut, 37500000),
		tick(10300, Fallback, 50*aqm.Mbit),
	})
}

// TestProbeLossNeverStarted protects a controller that never gets a
// sample: the timeout runs from its first call and leaves it at BaseRate.
func TestProbeLossNeverStarted(t *testing.T) {
	c := newStep(t, stepConfig)
	run(t, c, []op{
		tick(0, Hold, 50*aqm.Mbit),
		load(5000, 49*aqm.Mbit, 50*aqm.Mbit),
		tick(10000, Fallback, 50*aqm.Mbit),
	})
}

// TestStaleReflectorSteps protects the offence rule: a reflector silent
// beyond ResponseDeadline at three health checks is rested, its samples
// then move only its baseline, and after RestTime it is re-admitted.
func TestStaleReflectorSteps(t *testing.T) {
	cfg := stepConfig
	cfg.RestTime = 10 * time.Second
	c := newStep(t, cfg)
	c.Sample(at(0), 1, 30*ms)
	for tm := 0; tm < 5000; tm += 100 {
		c.Sample(at(tm), 0, 20*ms)
		r, _ := c.Reflector(1)
		require.Equal(t, tm < 4000, r.Active, "t=%d", tm)
	}
	// Checks at 1000 (silent 1 s: not more than the deadline), 2000, 3000
	// and 4000 count offences; the third rests it.
	r, ok := c.Reflector(1)
	require.True(t, ok)
	require.False(t, r.Active)
	require.Equal(t, at(4000).Add(10*time.Second), r.RestUntil)
	require.Equal(t, uint64(1), c.Stats().Rested)
	r0, _ := c.Reflector(0)
	require.True(t, r0.Active)
	require.Zero(t, r0.Offences)
	// A resting reflector's delayed samples do not count as bufferbloat.
	before := c.Stats().Samples
	for tm := 5100; tm < 6000; tm += 100 {
		d := c.Sample(at(tm), 1, 300*ms)
		require.NotEqual(t, Cut, d.Action)
	}
	require.Equal(t, before, c.Stats().Samples)
	require.Equal(t, uint64(9), c.Stats().Resting)
	r, _ = c.Reflector(1)
	require.Greater(t, r.Baseline, 30*ms, "its baseline still follows it")
	// Re-admitted at the first check at or after 14 s: checks ran at 5.1
	// and 13.9 s, so the next is at 14.9 s.
	c.Sample(at(13900), 0, 20*ms)
	c.Tick(at(14899))
	r, _ = c.Reflector(1)
	require.False(t, r.Active)
	c.Tick(at(14900))
	r, _ = c.Reflector(1)
	require.True(t, r.Active)
	require.Equal(t, uint64(1), c.Stats().Readmitted)
}

// TestDriftReflectorSteps protects the comparison: at each
// ComparisonInterval the first active reflector whose baseline sits more
// than BaselineSpread above the lowest, or whose rise EWMA more than
// DeltaSpread above the lowest, is rested; one reflector alone is never
// compared.
func TestDriftReflectorSteps(t *testing.T) {
	cfg := stepConfig
	cfg.ComparisonInterval = 5 * time.Second
	c := newStep(t, cfg)
	for tm := 0; tm <= 5000; tm += 100 {
		c.Sample(at(tm), 0, 20*ms)
		c.Sample(at(tm), 1, 41*ms) // 21 ms above: too far
		c.Sample(at(tm), 2, 39*ms) // 19 ms above: kept
	}
	r1, _ := c.Reflector(1)
	r2, _ := c.Reflector(2)
	require.False(t, r1.Active)
	require.True(t, r2.Active)
	require.Equal(t, uint64(1), c.Stats().Rested)

	// A noisy reflector: same baseline, rises 12 ms on average at low load.
	c = newStep(t, cfg)
	for tm := 0; tm <= 5000; tm += 100 {
		c.Sample(at(tm), 0, 20*ms)
		d := 20 * ms
		if tm%200 == 100 {
			d = 44 * ms
		}
		c.Sample(at(tm), 3, d)
	}
	r3, _ := c.Reflector(3)
	require.False(t, r3.Active)
	require.Greater(t, r3.DeltaEWMA, 10*ms)

	// Alone, even a long path is kept.
	c = newStep(t, cfg)
	for tm := 0; tm <= 6000; tm += 100 {
		c.Sample(at(tm), 5, 300*ms)
	}
	r5, _ := c.Reflector(5)
	require.True(t, r5.Active)
}

// TestLastReflectorReadmitted protects the controller from going deaf: a
// rested reflector that answers while no other is active is re-admitted
// at once and judged.
func TestLastReflectorReadmitted(t *testing.T) {
	c := newStep(t, stepConfig)
	c.Sample(at(0), 0, 20*ms)
	for tm := 1000; tm <= 4000; tm += 1000 {
		c.Tick(at(tm))
	}
	r, _ := c.Reflector(0)
	require.False(t, r.Active)
	d := c.Sample(at(4100), 0, 20*ms)
	r, _ = c.Reflector(0)
	require.True(t, r.Active)
	require.Equal(t, uint64(1), c.Stats().Readmitted)
	require.Equal(t, uint64(2), c.Stats().Samples)
	require.Equal(t, Hold, d.Action)
}

// TestIgnoredSamples protects bad input: a reflector outside [0,
// Reflectors) or a negative delay is counted and changes nothing.
func TestIgnoredSamples(t *testing.T) {
	c := newStep(t, stepConfig)
	for _, s := range []struct {
		refl  int
		delay time.Duration
	}{{-1, ms}, {8, ms}, {1 << 30, ms}, {0, -ms}} {
		d := c.Sample(at(0), s.refl, s.delay)
		require.Equal(t, Hold, d.Action)
	}
	require.Equal(t, uint64(4), c.Stats().Ignored)
	require.Zero(t, c.Stats().Samples)
	_, ok := c.Reflector(0)
	require.False(t, ok)
	_, ok = c.Reflector(-3)
	require.False(t, ok)
}

// TestSetterRefusal protects the applied rate: a rate the Setter refuses
// is not taken, so the controller never drifts from the shaper, and the
// error is reported and counted.
func TestSetterRefusal(t *testing.T) {
	c := newStep(t, stepConfig)
	var applied []aqm.Rate
	refuse := false
	errNo := errors.New("no")
	require.NoError(t, c.Drive(SetterFunc(func(r aqm.Rate) error {
		if refuse {
			return errNo
		}
		applied = append(applied, r)
		return nil
	})))
	c.Achieved(at(0), 40*aqm.Mbit)
	d := c.Sample(at(0), 0, 20*ms)
	require.Equal(t, Increase, d.Action)
	require.NoError(t, d.Err)
	refuse = true
	c.Achieved(at(300), 45*aqm.Mbit)
	d = c.Sample(at(300), 0, 20*ms)
	require.Equal(t, Increase, d.Action)
	require.ErrorIs(t, d.Err, errNo)
	require.Equal(t, 52*aqm.Mbit, d.Rate)
	require.Equal(t, 52*aqm.Mbit, c.Rate())
	require.Equal(t, []aqm.Rate{50 * aqm.Mbit, 52 * aqm.Mbit}, applied)
	require.Equal(t, uint64(1), c.Stats().SetRateErrors)
	require.ErrorIs(t, c.Drive(SetterFunc(func(aqm.Rate) error { return errNo })), errNo)
	require.NoError(t, c.Drive(nil))
}

// TestBackwardTime protects the time policy: an instant before the last
// one counts as no time, so refractory periods and the probe timeout do
// not run on it.
func TestBackwardTime(t *testing.T) {
	c := newStep(t, stepConfig)
	run(t, c, []op{
		sample(1000, 0, 20*ms, Hold, 50*aqm.Mbit),
		sample(1100, 0, 200*ms, Hold, 50*aqm.Mbit),
		sample(1200, 0, 200*ms, Hold, 50*aqm.Mbit),
		sample(1300, 0, 200*ms, Cut, 37500000),
		sample(0, 0, 200*ms, Hold, 37500000), // backwards: still refractory
		tick(0, Hold, 37500000),
		sample(1599, 0, 200*ms, Hold, 37500000),
		sample(1600, 0, 200*ms, Cut, 28125000),
	})
}

// TestActionString protects the names in logs.
func TestActionString(t *testing.T) {
	var got []string
	for a := Hold; a <= Fallback+1; a++ {
		got = append(got, a.String())
	}
	require.Equal(t, []string{"hold", "cut", "increase", "decay", "fallback", "action(5)"}, got)
	require.Equal(t, "cut", fmt.Sprint(Cut))
}

// TestRecoverySteps protects Recovery: after an episode of cuts, an
// increase with the delay at or below FullIncreaseBelow (f = 1) goes back
// to the rate the first cut started from when Recovery is 1, where the
// scaled increase alone adds 4 %; the target is then forgotten, so the
// next increase is the scaled one. The cut is TestCutSteps' first
// (41635973); the six low samples from 200 ms clear the window by 450 ms,
// when CutRefractory is over.
func TestRecoverySteps(t *testing.T) {
	ops := func(recovered, after aqm.Rate) []op {
		return []op{
			sample(0, 0, 20*ms, Hold, 50*aqm.Mbit),
			sample(50, 0, 120*ms, Hold, 50*aqm.Mbit),
			sample(100, 0, 120*ms, Hold, 50*aqm.Mbit),
			sample(150, 0, 120*ms, Cut, 41635973),
			load(200, 45*aqm.Mbit, 41635973),
			sample(200, 0, 20*ms, Hold, 41635973), // bufferbloat still in the window
			sample(250, 0, 20*ms, Hold, 41635973),
			sample(300, 0, 20*ms, Hold, 41635973), // CutRefractory
			sample(350, 0, 20*ms, Hold, 41635973),
			sample(400, 0, 20*ms, Hold, 41635973),
			sample(450, 0, 20*ms, Increase, recovered),
			load(600, 45*aqm.Mbit, recovered),
			sample(650, 0, 20*ms, Increase, after),
		}
	}
	cfg := stepConfig
	run(t, newStep(t, cfg), ops(43301412, 45033468)) // 4 % twice
	cfg.Recovery = 1
	run(t, newStep(t, cfg), ops(50*aqm.Mbit, 52*aqm.Mbit))
	// Half the gap, twice: 41635973 + 4182013.5, then + 2091006.5 (above
	// the 4 % increase, 1832719), each rounded.
	cfg.Recovery = 0.5
	run(t, newStep(t, cfg), ops(45817987, 47908994))
}
