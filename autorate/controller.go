package autorate

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Setter is what a [Controller] drives: anything that takes a shaping rate
// and may refuse it. Every front (front.Front, front.Sharded, front.IP) and
// cake.Queue satisfies it; [SetterFunc] adapts a function, to set several
// shapers at once or to log the rate.
type Setter interface {
	SetRate(aqm.Rate) error
}

// SetterFunc adapts a function to [Setter].
type SetterFunc func(aqm.Rate) error

// SetRate calls f(r).
func (f SetterFunc) SetRate(r aqm.Rate) error { return f(r) }

// Action is what a call decided about the rate.
type Action uint8

// The actions, in the order the controller considers them.
const (
	// Hold leaves the rate as it was.
	Hold Action = iota
	// Cut lowered the rate: bufferbloat was detected.
	Cut
	// Increase raised the rate: the load was high and the delay low.
	Increase
	// Decay moved the rate one step towards BaseRate: the load was low.
	Decay
	// Fallback set BaseRate: no active reflector answered for
	// ProbeTimeout.
	Fallback
)

var actionNames = [...]string{"hold", "cut", "increase", "decay", "fallback"}

// String returns the action's lower-case name.
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", a)
}

// Decision is the outcome of one call: what was decided and the rate in
// effect afterwards.
type Decision struct {
	Action Action
	// Rate is the rate in effect after the call. When a [Setter] refused
	// the new rate, it is the rate last applied and Err says why.
	Rate aqm.Rate
	// Err is the Setter's error, if it refused the rate.
	Err error
}

// Stats counts what a Controller did since New.
type Stats struct {
	// Samples counts the samples that entered the detection window.
	Samples uint64
	// Resting counts samples from rested reflectors: they moved their
	// reflector's baseline but were not judged.
	Resting uint64
	// Ignored counts samples refused outright: a reflector index outside
	// [0, Reflectors) or a negative delay.
	Ignored uint64
	// Cuts, Increases, Decays and Fallbacks count the decisions of each
	// kind (a Fallback at BaseRate counts although the rate did not move).
	Cuts, Increases, Decays, Fallbacks uint64
	// AchievedCuts counts the cuts that went to AchievedCut times the
	// achieved rate rather than to the scaled cut.
	AchievedCuts uint64
	// Rested and Readmitted count reflectors taken out of and put back into
	// the detection window by the health checks.
	Rested, Readmitted uint64
	// SetRateErrors counts rates the Setter refused.
	SetRateErrors uint64
}

// ReflectorState is a snapshot of one reflector.
type ReflectorState struct {
	// Active reports whether the reflector's samples are judged; false
	// while it rests.
	Active bool
	// Baseline is its baseline delay; DeltaEWMA its average rise above the
	// baseline while the load was not high.
	Baseline, DeltaEWMA time.Duration
	// Last is when its last sample arrived.
	Last aqm.Time
	// Offences is the number of health checks in the offence window that
	// found it silent.
	Offences int
	// RestUntil is when a resting reflector is re-admitted.
	RestUntil aqm.Time
}

// reflector states.
const (
	unseen uint8 = iota
	active
	resting
)

type reflector struct {
	baseline  float64 // ns
	deltaEWMA float64 // ns
	last      aqm.Time
	restUntil aqm.Time
	offences  uint64 // one bit per health check of the offence window
	state     uint8
}

// Controller adjusts a shaping rate from delay samples and the achieved
// rate. It reads no clock and starts no goroutine: every method takes the
// instant it is called at. It is not safe for concurrent use.
type Controller struct {
	cfg  Config
	rate aqm.Rate
	set  Setter

	refl []reflector
	// The detection window: the last DetectionWindow samples' delay rises
	// (ns) and whether each was delayed, oldest first from head.
	deltas  []float64
	delayed uint64 // bit i: slot i was delayed
	head    int

	achieved aqm.Rate
	fresh    bool // an achieved rate arrived since the last increase
	high     bool // the last achieved rate was high against the rate then

	started      bool
	lastAccepted aqm.Time // the last judged sample, or the first call
	fellBack     bool     // Fallback happened and no sample has come since
	recoverTo    aqm.Rate // the rate before the last episode of cuts; 0 once regained
	cutLast      bool     // the last move of the rate was a cut
	lastCut      aqm.Time
	lastIncrease aqm.Time
	lastChange   aqm.Time // the last cut, increase or decay (for DecayRefractory)
	lastHealth   aqm.Time
	lastCompare  aqm.Time
	offenceIdx   int

	stats Stats
}

// New returns a controller at cfg.BaseRate, or cfg's validation error.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Controller{
		cfg:    cfg,
		rate:   cfg.BaseRate,
		refl:   make([]reflector, cfg.Reflectors),
		deltas: make([]float64, cfg.DetectionWindow),
	}, nil
}

// Config returns the configuration in effect, defaults filled in.
func (c *Controller) Config() Config { return c.cfg }

// Rate returns the current rate.
func (c *Controller) Rate() aqm.Rate { return c.rate }

// Stats returns the counters.
func (c *Controller) Stats() Stats { return c.stats }

// Reflector returns reflector i's state; false if i is out of range or the
// reflector has sent no sample yet.
func (c *Controller) Reflector(i int) (ReflectorState, bool) {
	if i < 0 || i >= len(c.refl) || c.refl[i].state == unseen {
		return ReflectorState{}, false
	}
	r := &c.refl[i]
	return ReflectorState{
		Active: r.state == active, Baseline: time.Duration(r.baseline), DeltaEWMA: time.Duration(r.deltaEWMA),
		Last: r.last, Offences: c.offences(r), RestUntil: r.restUntil,
	}, true
}

// Drive makes the controller apply each rate it decides through s, and
// applies the current rate at once. If s refuses a rate, the controller
// keeps the rate last applied, so that its state never drifts from the
// shaper's; the Decision carries the error and Stats counts it. A nil s
// stops driving.
func (c *Controller) Drive(s Setter) error {
	c.set = s
	if s == nil {
		return nil
	}
	if err := s.SetRate(c.rate); err != nil {
		c.stats.SetRateErrors++
		return err
	}
	return nil
}

// Achieved reports the rate the shaper achieved, measured over the interval
// that ends at now (cake-autorate measures every 200 ms). The load is high
// when it is at least HighLoad of the current rate; an increase needs a
// report made since the last one. It returns Hold, or Fallback if the
// probes have been silent for ProbeTimeout.
func (c *Controller) Achieved(now aqm.Time, rate aqm.Rate) Decision {
	d := c.tick(now)
	c.achieved = rate
	c.fresh = true
	c.high = float64(rate) >= c.cfg.HighLoad*float64(c.rate)
	return d
}

// Tick runs the health checks and the probe timeout at now without a
// sample. Call it periodically when probes may stop, so that the rate falls
// back to BaseRate even if no other call comes.
func (c *Controller) Tick(now aqm.Time) Decision { return c.tick(now) }

// Sample feeds one delay measurement that arrived at now: a one-way delay
// or a round-trip time from reflector (an index in [0, Reflectors)), the
// same kind for every sample of a controller. It updates the reflector's
// baseline and, if the reflector is active, judges the sample and decides.
func (c *Controller) Sample(now aqm.Time, reflector int, delay time.Duration) Decision {
	d := c.tick(now)
	if reflector < 0 || reflector >= len(c.refl) || delay < 0 {
		c.stats.Ignored++
		return d
	}
	r := &c.refl[reflector]
	x := float64(delay)
	if r.state == unseen {
		r.state = active
		r.baseline = x
		r.deltaEWMA = 0
	} else {
		alpha := c.cfg.BaselineFall
		if x >= r.baseline {
			alpha = c.cfg.BaselineRise
		}
		r.baseline = alpha*x + (1-alpha)*r.baseline
	}
	r.last = now
	delta := x - r.baseline
	if !c.high {
		r.deltaEWMA = c.cfg.DeltaAlpha*delta + (1-c.cfg.DeltaAlpha)*r.deltaEWMA
	}
	if r.state == resting {
		if c.anyActive() {
			c.stats.Resting++
			return d
		}
		// Rather blind than deaf: with no reflector left to judge by, a
		// resting one that answers is re-admitted at once.
		c.readmit(r, now)
	}
	c.stats.Samples++
	c.lastAccepted = now
	c.fellBack = false
	c.push(delta)
	if dd := c.decide(now); dd.Action != Hold || d.Action == Hold {
		return dd
	}
	return d // the fallback this call made before judging the sample
}

// push adds a delay rise to the detection window.
func (c *Controller) push(delta float64) {
	c.deltas[c.head] = delta
	bit := uint64(1) << c.head
	if delta > c.threshold(c.cfg.DelayThreshold) {
		c.delayed |= bit
	} else {
		c.delayed &^= bit
	}
	c.head++
	if c.head == len(c.deltas) {
		c.head = 0
	}
}

// threshold returns thr plus one PacketBytes packet's time at the current
// rate, in ns.
func (c *Controller) threshold(thr time.Duration) float64 {
	return float64(thr) + float64(c.cfg.PacketBytes)*8e9/float64(c.rate)
}

// avgDelta is the mean delay rise over the window (slots not yet filled
// count as zero, as cake-autorate's do).
func (c *Controller) avgDelta() float64 {
	// Oldest first, so that the sum is the same whichever slot is oldest.
	sum := 0.0
	for _, v := range c.deltas[c.head:] {
		sum += v
	}
	for _, v := range c.deltas[:c.head] {
		sum += v
	}
	return sum / float64(len(c.deltas))
}

// since reports whether at least span has passed from t to now; an unset t
// is long ago.
func since(t, now aqm.Time, span time.Duration) bool {
	return t.IsZero() || t.Since(now) >= span
}

// decide is the rate decision after a judged sample.
func (c *Controller) decide(now aqm.Time) Decision {
	cfg := &c.cfg
	thr := c.threshold(cfg.DelayThreshold)
	avg := c.avgDelta()
	cutFree := since(c.lastCut, now, cfg.CutRefractory)
	switch {
	case bits.OnesCount64(c.delayed) >= cfg.DetectionThreshold:
		if !cutFree {
			return c.hold()
		}
		full := c.threshold(cfg.FullCutAbove)
		f := clamp01((avg - thr) / (full - thr))
		cut := cfg.MinCut + f*(cfg.MaxCut-cfg.MinCut)
		next := c.scale(1 - cut)
		if cfg.AchievedCut > 0 {
			// cake-autorate up to v3.0: the lower of the two, unless the
			// achieved one is at the minimum or below.
			if a := aqm.Rate(math.Round(cfg.AchievedCut * float64(c.achieved))); a > cfg.MinRate && a < next {
				next = a
				c.stats.AchievedCuts++
			}
		}
		if !c.cutLast {
			// The first cut of an episode: the rate it cuts from is the
			// last one known to have held, and recovery aims back at it.
			c.recoverTo = c.rate
		}
		c.cutLast = true
		c.lastCut, c.lastChange = now, now
		c.stats.Cuts++
		return c.apply(Cut, next)
	case c.high:
		if !cutFree || !c.fresh || !since(c.lastIncrease, now, cfg.IncreaseRefractory) {
			return c.hold()
		}
		full := c.threshold(cfg.FullIncreaseBelow)
		f := clamp01((thr - avg) / (thr - full))
		inc := cfg.MinIncrease + f*(cfg.MaxIncrease-cfg.MinIncrease)
		c.fresh = false
		c.lastIncrease, c.lastChange = now, now
		c.stats.Increases++
		next := c.scale(1 + inc)
		if c.recoverTo > c.rate && cfg.Recovery > 0 && f > 0 {
			// Close a share of the gap to the rate before the cut, at
			// least the scaled increase.
			gap := float64(c.recoverTo - c.rate)
			next = max(next, min(c.recoverTo, c.rate+aqm.Rate(math.Round(f*cfg.Recovery*gap))))
		}
		if next >= c.recoverTo {
			c.recoverTo = 0
		}
		c.cutLast = false
		return c.apply(Increase, next)
	default:
		if !cutFree || !since(c.lastChange, now, cfg.DecayRefractory) {
			return c.hold()
		}
		c.lastChange = now
		next := c.rate
		switch {
		case c.rate > cfg.BaseRate:
			next = max(c.scale(1-cfg.DecayStep), cfg.BaseRate)
		case c.rate < cfg.BaseRate:
			next = min(c.scale(1+cfg.DecayStep), cfg.BaseRate)
		}
		if next == c.rate {
			return c.hold()
		}
		c.cutLast = false
		c.stats.Decays++
		return c.apply(Decay, next)
	}
}

// scale returns the current rate times m, rounded, within [MinRate,
// MaxRate].
func (c *Controller) scale(m float64) aqm.Rate {
	v := math.Round(float64(c.rate) * m)
	return min(max(aqm.Rate(v), c.cfg.MinRate), c.cfg.MaxRate)
}

func clamp01(x float64) float64 {
	if !(x > 0) { // NaN too
		return 0
	}
	return min(x, 1)
}

func (c *Controller) hold() Decision { return Decision{Action: Hold, Rate: c.rate} }

// apply sets the new rate, through the Setter if there is one.
func (c *Controller) apply(a Action, r aqm.Rate) Decision {
	if r != c.rate && c.set != nil {
		if err := c.set.SetRate(r); err != nil {
			c.stats.SetRateErrors++
			return Decision{Action: a, Rate: c.rate, Err: err}
		}
	}
	c.rate = r
	return Decision{Action: a, Rate: r}
}

// tick runs the probe timeout and, when due, a health check.
func (c *Controller) tick(now aqm.Time) Decision {
	if !c.started {
		c.started = true
		c.lastAccepted, c.lastHealth, c.lastCompare = now, now, now
	}
	if since(c.lastHealth, now, c.cfg.HealthInterval) {
		c.health(now)
	}
	if !c.fellBack && since(c.lastAccepted, now, c.cfg.ProbeTimeout) {
		c.fellBack = true
		c.stats.Fallbacks++
		// The window's samples are stale and so is any load report.
		clear(c.deltas)
		c.delayed, c.head, c.fresh, c.achieved = 0, 0, false, 0
		c.recoverTo, c.cutLast = 0, false
		c.lastChange = now
		return c.apply(Fallback, c.cfg.BaseRate)
	}
	return c.hold()
}

func (c *Controller) anyActive() bool {
	for i := range c.refl {
		if c.refl[i].state == active {
			return true
		}
	}
	return false
}

func (c *Controller) offences(r *reflector) int {
	return bits.OnesCount64(r.offences & (uint64(1)<<c.cfg.OffenceWindow - 1))
}

func (c *Controller) rest(r *reflector, now aqm.Time) {
	r.state = resting
	r.restUntil = now.Add(c.cfg.RestTime)
	r.offences = 0
	c.stats.Rested++
}

func (c *Controller) readmit(r *reflector, now aqm.Time) {
	r.state = active
	r.offences = 0
	r.last = max(r.last, now)
	c.stats.Readmitted++
}

// health is one health check: re-admit rested reflectors whose time is
// up, compare the active ones when due, and count silences.
func (c *Controller) health(now aqm.Time) {
	cfg := &c.cfg
	c.lastHealth = now
	for i := range c.refl {
		if r := &c.refl[i]; r.state == resting && !now.Before(r.restUntil) {
			c.readmit(r, now)
		}
	}
	if since(c.lastCompare, now, cfg.ComparisonInterval) {
		c.lastCompare = now
		c.compare(now)
	}
	bit := uint64(1) << c.offenceIdx
	restedOne := false
	for i := range c.refl {
		r := &c.refl[i]
		if r.state != active {
			continue
		}
		r.offences &^= bit
		if r.last.Since(now) > cfg.ResponseDeadline {
			r.offences |= bit
		}
		if !restedOne && c.offences(r) >= cfg.OffenceThreshold {
			c.rest(r, now)
			restedOne = true
		}
	}
	c.offenceIdx++
	if c.offenceIdx == cfg.OffenceWindow {
		c.offenceIdx = 0
	}
}

// compare rests the first active reflector whose baseline or average rise
// sits too far above the lowest among the active reflectors; it needs two.
func (c *Controller) compare(now aqm.Time) {
	n := 0
	minBase, minDelta := math.Inf(1), math.Inf(1)
	for i := range c.refl {
		if r := &c.refl[i]; r.state == active {
			n++
			minBase = min(minBase, r.baseline)
			minDelta = min(minDelta, r.deltaEWMA)
		}
	}
	if n < 2 {
		return
	}
	for i := range c.refl {
		r := &c.refl[i]
		if r.state == active && (r.baseline-minBase > float64(c.cfg.BaselineSpread) || r.deltaEWMA-minDelta > float64(c.cfg.DeltaSpread)) {
			c.rest(r, now)
			return
		}
	}
}
