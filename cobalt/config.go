package cobalt

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/dropcap"
	"github.com/aqmkit/aqmkit/internal/frame"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Defaults for the zero fields of [Config].
const (
	// defaultTarget is the acceptable standing delay, 5 ms (CoDel's, and
	// both Linux CAKE's and ns-3's default).
	defaultTarget = 5 * time.Millisecond
	// defaultInterval is CoDel's window and the base of the control law,
	// 100 ms.
	defaultInterval = 100 * time.Millisecond
	// defaultBlueIncrement is the step by which BLUE's drop probability
	// rises on an overflow, 1/256 (Linux CAKE and ns-3).
	defaultBlueIncrement = 1.0 / 256
	// defaultBlueDecrement is the step by which it falls when the queue is
	// found empty, 1/4096 (Linux CAKE and ns-3).
	defaultBlueDecrement = 1.0 / 4096
	// defaultBlueThreshold is the sojourn time above which a dequeued
	// packet raises BLUE's probability as an overflow does, 400 ms (ns-3's
	// BlueThreshold; Linux CAKE has no such ceiling).
	defaultBlueThreshold = 400 * time.Millisecond
	// defaultLimitPackets is the packet limit of a [Queue], 1000.
	defaultLimitPackets = 1000
	// maxInterval is the largest Interval (and Target) accepted, one hour,
	// as for CoDel.
	maxInterval = time.Hour
	// maxLimitPackets is the largest LimitPackets accepted; storage for
	// this many packets is allocated up front.
	maxLimitPackets = 1 << 24
	// maxDropsPerDequeue bounds the packets one Dequeue call drops: 256,
	// as in CoDel (see package dropcap).
	maxDropsPerDequeue = dropcap.PerDequeue
	// minLimitPackets is the smallest non-zero LimitPackets accepted, 2:
	// COBALT signals on a packet that leaves while another waits.
	minLimitPackets = 2
	// minLimitBytes is the smallest non-zero LimitBytes accepted: two
	// full-size packets of 1514 bytes.
	minLimitBytes = 2 * frame.FullBytes
	// minBlueStep is the smallest BLUE step the 2^32 scale represents.
	minBlueStep = 1.0 / (1 << 32)
	// maxDecaySteps bounds the count decrements one evaluation makes while
	// CoDel is not dropping (see Controller.Decide).
	maxDecaySteps = 64
)

// Control holds the settings of one COBALT controller: everything but the
// limits and the seed. It is embedded in [Config] and in the configurations
// of the queues that run COBALT per flow (package fq's CobaltConfig), so
// that its fields are written cfg.Target and its defaults, ranges and
// rules are stated once, here. The zero value is COBALT with ns-3's
// defaults and ECN marking: target 5 ms, interval 100 ms, BLUE steps 1/256
// and 1/4096, a 400 ms BLUE ceiling.
type Control struct {
	// Target is the acceptable minimum sojourn time. Zero means
	// 5 ms; it must be below Interval.
	Target time.Duration
	// Interval is how long the sojourn time must stay above Target before
	// the first signal, and the base of the spacing Interval/sqrt(count).
	// Zero means 100 ms; at most one hour.
	Interval time.Duration
	// MTUTime, if positive, is the time one full-size packet takes at the
	// link rate; a sojourn must also exceed 4·MTUTime to count as above
	// target, so that a slow link is not signalled for the packets it is
	// merely serialising (Linux CAKE sets it from the shaper's rate). Zero
	// disables the guard.
	MTUTime time.Duration
	// BlueIncrement and BlueDecrement are BLUE's steps, as probabilities in
	// (0, 1]. Zero means 1/256 and 1/4096.
	BlueIncrement float64
	BlueDecrement float64
	// BlueThreshold is the sojourn time above which a dequeued packet
	// raises BLUE's probability. Zero means 400 ms.
	BlueThreshold time.Duration
	// DisableBlueThreshold turns the BlueThreshold ceiling off, as in Linux
	// CAKE: BLUE then rises only on overflow.
	DisableBlueThreshold bool
	// DisableECN makes the CoDel half drop ECN-capable packets instead of
	// marking them CE. BLUE always drops, ECN-capable or not.
	DisableECN bool
}

// Config configures a COBALT [Queue]: the controller's settings
// ([Control], embedded), the limits and the seed. The zero value is
// COBALT with ns-3's defaults and ECN marking and a 1000-packet limit.
type Config struct {
	Control
	// LimitPackets is the most packets a [Queue] holds; an arrival beyond
	// it is refused and raises BLUE's probability. Zero means
	// 1000. A limit that holds more than a second of
	// packets at the link rate leaves BLUE slow to react: size it with
	// [ConfigForLink].
	LimitPackets int
	// LimitBytes, if positive, is the most bytes a Queue holds, checked
	// like LimitPackets. Zero means no byte limit.
	LimitBytes int
	// Seed seeds BLUE's random draws. Zero (the default, for production)
	// draws a secret seed from crypto/rand; a fixed seed makes a queue
	// reproducible (tests, simulations). [Queue.Config] reports the seed
	// in use.
	Seed uint64
}

// ConfigForLink returns the default configuration with the limits sized
// for a link of the given rate and a typical round-trip time rtt
// ([aqm.Rate.BufferBytes]), and the MTU-time guard set for that rate. A
// zero rate (unknown or unlimited) gives the zero Config: the defaults.
func ConfigForLink(rate aqm.Rate, rtt time.Duration) Config {
	if rate == 0 {
		return Config{}
	}
	return Config{
		LimitPackets: rate.BufferPackets(rtt),
		LimitBytes:   rate.BufferBytes(rtt),
		Control:      Control{MTUTime: rate.TxTime(frame.FullBytes)},
	}
}

// Validate reports every field of c that is out of range, one
// [*aqm.ConfigError] (package "cobalt") each, joined with [errors.Join];
// each wraps [aqm.ErrInvalidConfig]. A field out of range on its own is
// reported even if it also breaks the rule that Target be less than
// Interval, which is checked only when both are in range. It does not
// change c.
func (c Control) Validate() error { return errors.Join(c.validate()...) }

// validate is [Control.Validate] as a list, in field order.
func (c Control) validate() []error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "cobalt", Field: field, Value: v, Rule: rule})
	}
	if c.Target < 0 || c.Target >= maxInterval {
		bad("Target", c.Target, "must be in [0, "+maxInterval.String()+")")
	}
	if c.Interval < 0 || c.Interval > maxInterval {
		bad("Interval", c.Interval, "must be in [0, "+maxInterval.String()+"]")
	}
	if c.MTUTime < 0 || c.MTUTime > maxInterval {
		bad("MTUTime", c.MTUTime, "must be in [0, "+maxInterval.String()+"]")
	}
	if !(c.BlueIncrement >= 0 && c.BlueIncrement <= 1) {
		bad("BlueIncrement", c.BlueIncrement, "must be in [0, 1]")
	}
	if !(c.BlueDecrement >= 0 && c.BlueDecrement <= 1) {
		bad("BlueDecrement", c.BlueDecrement, "must be in [0, 1]")
	}
	if c.BlueThreshold < 0 {
		bad("BlueThreshold", c.BlueThreshold, "must not be negative")
	}
	// BLUE's steps live on a 2^32 scale: a smaller increment rounds to
	// zero and BLUE would never rise on an overflow.
	if c.BlueIncrement > 0 && c.BlueIncrement < minBlueStep {
		// A smaller step rounds to zero and BLUE never rises.
		bad("BlueIncrement", c.BlueIncrement, "must be 0 or at least 2^-32")
	}
	d := c.withDefaults()
	if c.Target >= 0 && c.Target < maxInterval && c.Interval >= 0 && c.Interval <= maxInterval && d.Target >= d.Interval {
		bad("Target", d.Target, "must be less than Interval ("+d.Interval.String()+")")
	}
	return errs
}

// Validate reports every field of c that is out of range, one
// [*aqm.ConfigError] each, joined: the controller's fields as
// [Control.Validate] checks them, then the limits. It does not change c.
func (c Config) Validate() error {
	errs := c.Control.validate()
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "cobalt", Field: field, Value: v, Rule: rule})
	}
	if c.LimitPackets < 0 || c.LimitPackets > maxLimitPackets {
		bad("LimitPackets", c.LimitPackets, "must be in [0, "+strconv.Itoa(maxLimitPackets)+"]")
	}
	if c.LimitBytes < 0 {
		bad("LimitBytes", c.LimitBytes, "must not be negative")
	}
	// COBALT signals at dequeue, on a packet that leaves while others wait:
	// limits that hold less than two full-size packets leave only the
	// limit's tail drop.
	if c.LimitPackets > 0 && c.LimitPackets < minLimitPackets {
		// With one packet queued, COBALT has nothing to signal on before the
		// limit refuses the next.
		bad("LimitPackets", c.LimitPackets, "must be 0 or at least 2")
	}
	if c.LimitBytes > 0 && c.LimitBytes < minLimitBytes {
		bad("LimitBytes", c.LimitBytes, "must be 0 or at least 2 full-size packets ("+strconv.Itoa(minLimitBytes)+" bytes): with less, full-size packets are refused at the limit before COBALT can signal")
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default set to
// it: the settings a controller built from c runs on, as the queues that
// embed Control report them in their Config.
func (c Control) withDefaults() Control {
	if c.Target == 0 {
		c.Target = defaultTarget
	}
	if c.Interval == 0 {
		c.Interval = defaultInterval
	}
	if c.BlueIncrement == 0 {
		c.BlueIncrement = defaultBlueIncrement
	}
	if c.BlueDecrement == 0 {
		c.BlueDecrement = defaultBlueDecrement
	}
	if c.BlueThreshold == 0 {
		c.BlueThreshold = defaultBlueThreshold
	}
	return c
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Control = c.Control.withDefaults()
	if c.LimitPackets == 0 {
		c.LimitPackets = defaultLimitPackets
	}
	return c
}

// Params are the derived constants a [Controller] runs on, shared by every
// Controller of a queue. Build them with [Control.Params].
type Params struct {
	target    int64 // ns
	interval  int64 // ns
	mtuGuard  int64 // ns: 4·MTUTime
	blueCeil  int64 // ns; math.MaxInt64: off
	pInc      uint32
	pDec      uint32
	ecn       bool
	interval2 [2]uint64 // interval² in 128 bits (hi, lo), for the exact law
	ctl       Control   // the settings, defaults filled in
}

// Control returns the settings p was built from, defaults filled in: the
// settings its controllers run on, as a queue that embeds [Control]
// reports them in its Config.
func (p *Params) Control() Control { return p.ctl }

// Params returns the [Params] for c with defaults applied, for a [Queue]
// or for a queue that embeds a [Controller] per flow. Call
// [Control.Validate] (or the embedding configuration's Validate) first:
// out-of-range values are clamped here, not reported.
func (c Control) Params() Params {
	d := c.withDefaults()
	iv := int64(min(max(d.Interval, 2), maxInterval))
	tg := min(max(int64(d.Target), 1), iv-1)
	p := Params{
		target:   tg,
		interval: iv,
		mtuGuard: 4 * int64(min(max(d.MTUTime, 0), maxInterval)),
		blueCeil: math.MaxInt64,
		pInc:     probScale(d.BlueIncrement),
		pDec:     probScale(d.BlueDecrement),
		ecn:      !d.DisableECN,
		ctl:      d,
	}
	if !d.DisableBlueThreshold {
		p.blueCeil = int64(max(d.BlueThreshold, 0))
	}
	p.interval2[0], p.interval2[1] = mul128(uint64(iv), uint64(iv))
	return p
}

// probScale turns a probability in [0, 1] into the 2^32 scale BLUE's p
// uses, rounding to nearest and saturating at 2^32-1.
func probScale(f float64) uint32 {
	if !(f > 0) {
		return 0
	}
	v := math.Round(f * (1 << 32))
	if v >= 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(v)
}

// seedOf returns the seed a queue built from c runs on.
func seedOf(c Config) uint64 { return rng.SeedOrRandom(c.Seed) }
