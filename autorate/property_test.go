package autorate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"
)

const propSeed = 3168

// randomConfig draws a valid configuration from g: rates across six
// decades, windows, thresholds, factors and periods over their ranges.
func randomConfig(g *rand.Rand) Config {
	lo := aqm.Rate(100_000 + g.Int64N(1_000_000_000))
	base := lo + aqm.Rate(g.Int64N(int64(lo)*4+1))
	hi := base + aqm.Rate(g.Int64N(int64(base)*10+1))
	w := 1 + g.IntN(maxWindow)
	thr := time.Duration(2+g.IntN(100)) * ms
	cutLo := 0.001 + 0.2*g.Float64()
	incHi := 0.001 + 0.3*g.Float64()
	ow := 1 + g.IntN(maxWindow)
	span := func(maxMs int) time.Duration { return time.Duration(1+g.IntN(maxMs)) * ms }
	return Config{
		MinRate: lo, BaseRate: base, MaxRate: hi,
		DelayThreshold: thr, FullIncreaseBelow: time.Duration(g.Int64N(int64(thr))) + 1, FullCutAbove: thr + span(100),
		DetectionWindow: w, DetectionThreshold: 1 + g.IntN(w),
		BaselineRise: 1e-4 + 0.1*g.Float64(), BaselineFall: 0.1 + 0.9*g.Float64(), DeltaAlpha: 0.01 + 0.9*g.Float64(),
		MinCut: cutLo, MaxCut: cutLo + (0.99-cutLo)*g.Float64(),
		MinIncrease: incHi * g.Float64(), MaxIncrease: incHi,
		DecayStep: 0.001 + 0.2*g.Float64(), HighLoad: 0.05 + 0.95*g.Float64(),
		CutRefractory: span(1000), IncreaseRefractory: span(1000), DecayRefractory: span(3000),
		PacketBytes: 1 + g.IntN(9000), Reflectors: 1 + g.IntN(6),
		ResponseDeadline: span(2000), HealthInterval: span(2000), OffenceWindow: ow, OffenceThreshold: 1 + g.IntN(ow),
		ComparisonInterval: span(10000), BaselineSpread: span(50), DeltaSpread: span(30),
		RestTime: span(20000), ProbeTimeout: span(20000),
	}
}

// TestPropertyBoundsAndRefractory protects the guarantees a user relies
// on, for random configurations and traces: the rate stays in [MinRate,
// MaxRate]; nothing but a Fallback moves it within CutRefractory of a cut;
// no increase comes within IncreaseRefractory of an increase; no decay
// within DecayRefractory of any change; every changed rate is reported by
// a decision that says why, and a Hold never changes it.
func TestPropertyBoundsAndRefractory(t *testing.T) {
	params := proptest.Parameters(t, propSeed, 150, 20)
	properties := gopter.NewProperties(params)
	properties.Property("bounds and refractory periods", prop.ForAll(func(seed uint64) bool {
		g := rand.New(rand.NewPCG(seed, 1))
		cfg := randomConfig(g)
		if err := cfg.Validate(); err != nil {
			t.Logf("config %+v: %v", cfg, err)
			return false
		}
		c, err := New(cfg)
		if err != nil {
			return false
		}
		tr := newTracer(g)
		var lastCut, lastInc, lastChange aqm.Time
		for i := range 3000 {
			cl := tr.next(c.Rate())
			before := c.Rate()
			d := cl.replay(c)
			now := cl.at
			if d.Rate < cfg.MinRate || d.Rate > cfg.MaxRate || d.Rate != c.Rate() {
				t.Logf("call %d: rate %v outside [%v, %v]", i, d.Rate, cfg.MinRate, cfg.MaxRate)
				return false
			}
			moved := d.Rate != before
			if moved && d.Action == Hold {
				t.Logf("call %d: Hold moved the rate %v → %v", i, before, d.Rate)
				return false
			}
			if d.Action == Fallback {
				lastChange = now
				continue
			}
			// Within span of t0, time going backwards counting as none.
			in := func(t0 aqm.Time, span time.Duration) bool { return !t0.IsZero() && max(now.Sub(t0), 0) < span }
			if moved && in(lastCut, cfg.CutRefractory) {
				t.Logf("call %d: %v within CutRefractory of the cut at %v (now %v)", i, d.Action, lastCut, now)
				return false
			}
			if d.Action == Increase && in(lastInc, cfg.IncreaseRefractory) {
				t.Logf("call %d: increase within IncreaseRefractory", i)
				return false
			}
			if d.Action == Decay && in(lastChange, cfg.DecayRefractory) {
				t.Logf("call %d: decay within DecayRefractory", i)
				return false
			}
			switch d.Action {
			case Cut:
				lastCut, lastChange = now, now
			case Increase:
				lastInc, lastChange = now, now
			case Decay:
				lastChange = now
			}
		}
		return true
	}, gen.UInt64()))
	properties.TestingRun(t)
}

// TestPropertyNoPanic protects bad input: any reflector index, delay,
// achieved rate and instant, in any order, leaves the rate in bounds.
func TestPropertyNoPanic(t *testing.T) {
	params := proptest.Parameters(t, propSeed+1, 200, 30)
	properties := gopter.NewProperties(params)
	properties.Property("arbitrary calls", prop.ForAll(func(seed uint64) bool {
		g := rand.New(rand.NewPCG(seed, 2))
		c, err := New(Config{})
		if err != nil {
			return false
		}
		for range 500 {
			now := aqm.Time(g.Int64())
			switch g.IntN(3) {
			case 0:
				c.Sample(now, int(g.Int32())-1<<30, time.Duration(g.Int64()-1<<62))
			case 1:
				c.Achieved(now, aqm.Rate(g.Uint64()))
			default:
				c.Tick(now)
			}
			if r := c.Rate(); r < defaultMinRate || r > defaultMaxRate {
				return false
			}
		}
		return true
	}, gen.UInt64()))
	properties.TestingRun(t)
}

// TestHighLoadBoundary protects the load rule at its edge: an achieved
// rate of exactly HighLoad of the rate is high.
func TestHighLoadBoundary(t *testing.T) {
	c := newStep(t, stepConfig)
	run(t, c, []op{
		load(0, 37500000, 50*aqm.Mbit), // exactly 75%
		sample(0, 0, 20*ms, Increase, 52*aqm.Mbit),
	})
	c = newStep(t, stepConfig)
	run(t, c, []op{
		load(0, 37499999, 50*aqm.Mbit),
		sample(0, 0, 20*ms, Hold, 50*aqm.Mbit),
	})
	require.Equal(t, uint64(0), c.Stats().Increases)
}
