package pie

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Defaults of the zero fields of [Config].
const (
	// defaultTarget is QDELAY_REF, the queueing delay PIE steers towards
	// (RFC 8033 §4.2, Appendix A): 15 ms.
	defaultTarget = 15 * time.Millisecond
	// defaultTUpdate is T_UPDATE, the period of the drop-probability
	// update (RFC 8033 §4.2): 15 ms.
	defaultTUpdate = 15 * time.Millisecond
	// defaultAlpha is alpha, the integral gain of the update in Hz
	// (1/s per second of delay error), RFC 8033 §4.2: 0.125.
	defaultAlpha = 0.125
	// defaultBeta is beta, the proportional gain of the update in Hz,
	// RFC 8033 §4.2: 1.25.
	defaultBeta = 1.25
	// defaultMaxBurst is MAX_BURST, the burst allowance (RFC 8033 §4.4):
	// 150 ms.
	defaultMaxBurst = 150 * time.Millisecond
	// defaultLimitPackets is the packet limit: 1000, as Linux sch_pie.
	defaultLimitPackets = 1000
	// defaultMeanPacketBytes is MEAN_PKTSIZE, the typical packet size used
	// by the "two packets" safeguard and as the reference size of byte
	// mode: 1500 bytes, an Ethernet MTU.
	defaultMeanPacketBytes = 1500
	// defaultECNThreshold is mark_ecnth (RFC 8033 §5.1): ECN-capable
	// packets are marked instead of dropped while the probability is below
	// 10%.
	defaultECNThreshold = 0.1
	// defaultDequeueThresholdBytes is DQ_THRESHOLD of the departure-rate
	// estimator (RFC 8033 §5.2): 16 KiB, 2^14 bytes.
	defaultDequeueThresholdBytes = 1 << 14
)

// Bounds that keep the fixed-point arithmetic exact (see controller.go).
const (
	// maxDelay is the largest queueing delay PIE represents: 2^36 ns, about
	// 68.7 s. Longer delays (a stalled link, a huge clock jump) saturate
	// at it; every probability decision is already at its limit long
	// before.
	maxDelay = time.Duration(1) << 36
	// maxGain is the largest Alpha or Beta accepted, in Hz.
	maxGain = 16.0
	// maxMeanPacketBytes keeps p·size within 64 bits in byte mode:
	// p ≤ 2^48 and size ≤ 2^16-1.
	maxMeanPacketBytes = 1<<16 - 1
	maxLimitPackets    = 1 << 24
)

// Control holds the settings of one PIE controller: everything but the
// limits and the seed. It is embedded in [Config] and in the configurations
// of the queues that run PIE per flow (package fq's PIEConfig), so that its
// fields are written cfg.Target and its defaults, ranges and rules are
// stated once, here. The zero value is RFC 8033's PIE with timestamps, ECN
// marking below 10% and no derandomization.
type Control struct {
	// Target is QDELAY_REF, the queueing delay PIE controls to. Zero means
	// 15 ms (15 ms). It must be in [1µs, 10s].
	Target time.Duration
	// TUpdate is T_UPDATE, the period of the probability update. Zero
	// means 15 ms (15 ms). It must be in [1µs, 10s]. RFC 8033
	// §4.2: if TUpdate is halved, halve Alpha and raise Beta by Alpha/4.
	TUpdate time.Duration
	// Alpha is the integral gain in Hz. Zero means 0.125 (0.125).
	// It must be in (0, 16.0]; it is used rounded to a multiple of
	// 2^-20 Hz (exact for the RFC values).
	Alpha float64
	// Beta is the proportional gain in Hz. Zero means 1.25
	// (1.25). Same range and rounding as Alpha.
	Beta float64
	// MaxBurst is MAX_BURST, how long a burst may exceed the target
	// without early drops after a quiet period. Zero means
	// 150 ms (150 ms); it must be at most 10 s. Set
	// DisableBurstAllowance for none.
	MaxBurst time.Duration
	// DisableBurstAllowance turns the burst allowance off (MAX_BURST = 0).
	DisableBurstAllowance bool

	// MeanPacketBytes is MEAN_PKTSIZE in bytes. No early drop happens
	// while the backlog (before the arrival) is at most twice this (RFC
	// 8033 §4.1 safeguard), and in byte mode a packet of this size sees
	// the full probability. Zero means 1500 (1500). It
	// must be in [1, 65535].
	MeanPacketBytes int

	// DisableECN makes PIE drop ECN-capable packets too. By default
	// ECN-capable packets are marked CE instead of dropped while the drop
	// probability is below ECNThreshold (RFC 8033 §5.1).
	DisableECN bool
	// ECNThreshold is mark_ecnth, a probability: marking happens only while
	// the drop probability is strictly below it; at or above it
	// ECN-capable packets are dropped ([aqm.DroppedOverload]). Zero means
	// 0.1 (0.1). It must be in [0, 1].
	ECNThreshold float64
	// Derandomize turns on the derandomization of RFC 8033 §5.4: an
	// accumulated probability suppresses drops until it reaches 0.85 and
	// forces one when it reaches 8.5. Off by default, as in the RFC.
	Derandomize bool
	// ByteMode scales the probability for each packet by
	// min(Size, MeanPacketBytes)/MeanPacketBytes, so small packets are
	// dropped less often (Linux sch_pie "bytemode").
	ByteMode bool

	// RateEstimator estimates the queueing delay as backlog divided by a
	// measured departure rate (RFC 8033 §5.2) instead of from packet
	// timestamps. Off by default: the delay is the age of the packet at
	// the head of the queue.
	RateEstimator bool
	// DequeueThresholdBytes is DQ_THRESHOLD, the bytes a departure-rate
	// measurement cycle covers, and the backlog needed to start one. Zero
	// means 16384 (16384). It must be in
	// [1, 1<<30]. Used only with RateEstimator.
	DequeueThresholdBytes int

	// HighDelayBoost adds a further 2% to each update while the delay
	// estimate exceeds 250 ms, after the cap of RFC 8033 §5.5 (a Linux
	// sch_pie rule that is not in the RFC). Off by default.
	HighDelayBoost bool
}

// Config configures a PIE queue: the controller's settings ([Control],
// embedded), the limits and the seed. The zero value is RFC 8033's PIE
// with timestamps, ECN marking below 10%, no derandomization, a
// 1000-packet limit and a random seed. [ConfigForLink] gives one sized for
// a link's rate.
type Config struct {
	Control

	// LimitPackets is the hard packet limit. Zero means
	// 1000 (1000). Storage for this many packets is
	// allocated by New (rounded up to a power of two; see
	// [Detail].MemoryBytes), so it must be at most 1<<24.
	//
	// PIE steers the delay of responsive traffic towards Target, but
	// against unresponsive traffic only the limits bound the queue: a
	// limit that holds more than a second of traffic at the link rate lets
	// such traffic build a second of delay, which defeats the purpose of
	// the AQM. [ConfigForLink] sizes the limits for a link's rate.
	LimitPackets int
	// LimitBytes is the hard byte limit (sum of Size). Zero means none.
	// See LimitPackets on sizing, and [ConfigForLink].
	LimitBytes int

	// Seed seeds the queue's random source. Zero (the default, and the
	// right choice in production) draws a secret seed from crypto/rand, so
	// no one can predict the queue's drop decisions; [Queue.Config] reports
	// the seed drawn. A fixed non-zero seed makes the decisions
	// reproducible: two queues with the same Config and the same calls
	// make the same decisions. Use one in tests and simulations.
	Seed uint64
}

// Validate checks every field of c and returns nil or the [errors.Join]
// of one [*aqm.ConfigError] (package "pie") per bad field, each wrapping
// [aqm.ErrInvalidConfig]. It does not change c: zero fields stand for
// their defaults.
func (c Control) Validate() error { return errors.Join(c.validate()...) }

// validate is [Control.Validate] as a list, in field order.
func (c Control) validate() []error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "pie", Field: field, Value: v, Rule: rule})
	}
	d := c.withDefaults()
	span := func(field string, v time.Duration) {
		if v < time.Microsecond || v > 10*time.Second {
			bad(field, v, "must be in [1µs, 10s]")
		}
	}
	span("Target", d.Target)
	span("TUpdate", d.TUpdate)
	gain := func(field string, g float64) {
		if math.IsNaN(g) || g < 0x1p-21 || g > maxGain {
			bad(field, g, "must be in [2^-21, 16] Hz")
		}
	}
	gain("Alpha", d.Alpha)
	gain("Beta", d.Beta)
	if d.MaxBurst < 0 || d.MaxBurst > 10*time.Second {
		bad("MaxBurst", d.MaxBurst, "must be in [0, 10s]")
	}
	if d.MeanPacketBytes < 0 || d.MeanPacketBytes > maxMeanPacketBytes {
		bad("MeanPacketBytes", d.MeanPacketBytes, "must be in [1, "+strconv.FormatUint(uint64(maxMeanPacketBytes), 10)+"]")
	}
	if math.IsNaN(d.ECNThreshold) || d.ECNThreshold < 0 || d.ECNThreshold > 1 {
		bad("ECNThreshold", d.ECNThreshold, "must be in [0, 1]")
	}
	if d.DequeueThresholdBytes < 0 || d.DequeueThresholdBytes > 1<<30 {
		bad("DequeueThresholdBytes", d.DequeueThresholdBytes, "must be in [1, 1073741824]")
	}
	return errs
}

// Validate checks every field of c and returns nil or the [errors.Join]
// of one [*aqm.ConfigError] per bad field, each wrapping
// [aqm.ErrInvalidConfig]: the controller's fields as [Control.Validate]
// checks them, then the limits. It does not change c: zero fields stand
// for their defaults, which [Queue.Config] reports.
func (c Config) Validate() error {
	errs := c.Control.validate()
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "pie", Field: field, Value: v, Rule: rule})
	}
	if c.LimitPackets < 0 || c.LimitPackets > maxLimitPackets {
		bad("LimitPackets", c.LimitPackets, "must be in [0, "+strconv.FormatUint(uint64(maxLimitPackets), 10)+"]")
	}
	if c.LimitBytes < 0 {
		bad("LimitBytes", c.LimitBytes, "must not be negative")
	}
	errs = append(errs, c.signalRules("pie", "LimitBytes", c.LimitPackets, c.LimitBytes)...)
	return errors.Join(errs...)
}

// minLimitPackets is the smallest non-zero LimitPackets accepted: PIE
// drops nothing while at most two mean-size packets are queued, so the
// queue must hold a third behind them and the arrival.
const minLimitPackets = 4

// signalRules reports the limits with which PIE could never signal, one
// [*aqm.ConfigError] each with Pkg set to pkg, for a queue that holds at
// most limitPackets packets and limitBytes bytes (0: no byte limit), the
// byte limit being called bytesField; c's MeanPacketBytes, RateEstimator
// and DequeueThresholdBytes are read with their defaults. Package fq's
// FQ-PIE applies the same rules to its own limits, which one flow may
// fill. Out-of-range fields are left to Validate.
func (c Config) signalRules(pkg, bytesField string, limitPackets, limitBytes int) []error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: pkg, Field: field, Value: v, Rule: rule})
	}
	d := c.withDefaults()
	mean := d.MeanPacketBytes
	if mean < 1 || mean > maxMeanPacketBytes || limitPackets < 0 || limitBytes < 0 {
		return nil // reported on their own
	}
	if limitPackets > 0 && limitPackets < minLimitPackets {
		// PIE drops nothing while at most 2×MeanPacketBytes are queued, which
		// takes three mean-size packets to exceed.
		bad("LimitPackets", limitPackets, "must be 0 or at least 4")
	}
	if limitBytes > 0 && limitBytes < 4*mean {
		// PIE drops nothing while at most 2×MeanPacketBytes are queued, and a
		// full queue of packets of up to twice the mean may hold less.
		bad(bytesField, limitBytes, "must be 0 or at least 4×MeanPacketBytes ("+strconv.Itoa(4*mean)+")")
	}
	if !d.RateEstimator || d.DequeueThresholdBytes < 1 || d.DequeueThresholdBytes > 1<<30 {
		return errs
	}
	// The departure rate is measured from a dequeue that leaves at least
	// DequeueThresholdBytes queued; a buffer that never holds that many
	// bytes leaves the delay estimate at zero, and PIE silent.
	lp := limitPackets
	if lp == 0 {
		lp = defaultLimitPackets
	}
	buf := lp * mean
	if limitBytes > 0 {
		buf = min(buf, limitBytes)
	}
	if d.DequeueThresholdBytes <= mean {
		// A measurement cycle that one packet completes takes no time, the
		// departure rate looks infinite and PIE never signals.
		bad("DequeueThresholdBytes", d.DequeueThresholdBytes, "must be more than MeanPacketBytes ("+strconv.Itoa(mean)+") with RateEstimator")
	}
	if need := d.DequeueThresholdBytes + 2*mean; buf < need {
		bad("DequeueThresholdBytes", d.DequeueThresholdBytes, "must be at most "+strconv.Itoa(buf-2*mean)+" with RateEstimator (the buffer less 2×MeanPacketBytes)")
	}
	return errs
}

// withDefaults returns c with every zero field that has a default set to
// it: the settings a controller built from c runs on, as the queues that
// embed Control report them in their Config.
func (c Control) withDefaults() Control {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Target, defaultTarget)
	def(&c.TUpdate, defaultTUpdate)
	def(&c.MaxBurst, defaultMaxBurst)
	if c.Alpha == 0 {
		c.Alpha = defaultAlpha
	}
	if c.Beta == 0 {
		c.Beta = defaultBeta
	}
	if c.MeanPacketBytes == 0 {
		c.MeanPacketBytes = defaultMeanPacketBytes
	}
	if c.ECNThreshold == 0 {
		c.ECNThreshold = defaultECNThreshold
	}
	if c.DequeueThresholdBytes == 0 {
		c.DequeueThresholdBytes = defaultDequeueThresholdBytes
	}
	return c
}

// withDefaults returns c with every zero field that has a default set to
// it. The zero Seed is left for New to replace with a random one.
func (c Config) withDefaults() Config {
	c.Control = c.Control.withDefaults()
	if c.LimitPackets == 0 {
		c.LimitPackets = defaultLimitPackets
	}
	return c
}

// ConfigForLink returns a Config for a link that drains at rate, for flows
// whose round-trip time is about rtt (zero means 100 ms): the
// byte limit is rate.BufferBytes(rtt), four round trips at the rate between
// 64 KiB and 32 MiB (see [aqm.Rate.BufferBytes]), and the packet limit is
// that many full-size packets, but at least 1000 so that
// small packets are not refused first. Everything else keeps its default.
// A zero rate (unknown or unlimited) gives the zero Config: the defaults.
func ConfigForLink(rate aqm.Rate, rtt time.Duration) Config {
	if rate == 0 {
		return Config{}
	}
	return Config{
		LimitBytes:   rate.BufferBytes(rtt),
		LimitPackets: max(rate.BufferPackets(rtt), defaultLimitPackets),
	}
}

// params are the hot-path constants derived from a validated Config.
type params struct {
	target   int64 // ns
	tupdate  int64 // ns
	alphaQ   int64 // alpha in units of 2^-20 Hz (see gainScale)
	betaQ    int64 // beta in units of 2^-20 Hz
	maxBurst int64 // ns

	limitPackets int
	limitBytes   int   // 0: none
	safeBytes    int   // 2·MEAN_PKTSIZE: no early drop while backlog ≤ this
	meanBytes    int64 // byte-mode reference size

	ecn       bool
	ecnTh     int64 // mark only while p < ecnTh (prob units)
	derand    bool
	byteMode  bool
	rate      bool
	boost     bool
	dqThresh  int64 // bytes
	boostOver int64 // ns: 250 ms
}

// gainShift is the number of fraction bits of the fixed-point gains:
// alphaQ = round(alpha·2^20). 2^-20 Hz (≈1e-6 Hz) represents 0.125, 1.25
// and the RFC's halving rule (0.0625, 1.28125) exactly; with alpha ≤ 16 Hz
// alphaQ ≤ 2^24, which keeps the update's products below 2^62.
const gainShift = 20

// derive returns the params of a queue built from c (defaults applied).
func (c Config) derive() params {
	p := c.Control.derive()
	p.limitPackets, p.limitBytes = c.LimitPackets, c.LimitBytes
	return p
}

// derive returns the params of a controller built from c (defaults
// applied); the limits are a queue's and stay zero.
func (c Control) derive() params {
	p := params{
		target:    int64(c.Target),
		tupdate:   int64(c.TUpdate),
		alphaQ:    int64(math.Round(c.Alpha * (1 << gainShift))),
		betaQ:     int64(math.Round(c.Beta * (1 << gainShift))),
		maxBurst:  int64(c.MaxBurst),
		safeBytes: 2 * c.MeanPacketBytes,
		meanBytes: int64(c.MeanPacketBytes),
		ecn:       !c.DisableECN,
		ecnTh:     probCeil(c.ECNThreshold),
		derand:    c.Derandomize,
		byteMode:  c.ByteMode,
		rate:      c.RateEstimator,
		boost:     c.HighDelayBoost,
		dqThresh:  int64(c.DequeueThresholdBytes),
		boostOver: int64(250 * time.Millisecond),
	}
	if c.DisableBurstAllowance {
		p.maxBurst = 0
	}
	return p
}
