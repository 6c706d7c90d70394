package dualq

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Defaults applied by [Config] fields left at their zero value.
const (
	// defaultTarget is the Classic queue delay the base PI controller aims
	// for: 15 ms (RFC 9332 Appendix A, Linux sch_dualpi2).
	defaultTarget = 15 * time.Millisecond
	// defaultTupdate is the PI update interval: 16 ms, Linux's default (RFC
	// 9332's formula min(target, RTT_max/3) gives 15 ms).
	defaultTupdate = 16 * time.Millisecond
	// defaultAlpha is the PI integral gain in Hz: 0.16, Linux's default,
	// which is RFC 9332's formula 0.1·Tupdate/RTT_max² at Tupdate = 16 ms
	// and RTT_max = 100 ms.
	defaultAlpha = 0.16
	// defaultBeta is the PI proportional gain in Hz: 3.2, Linux's default
	// (RFC 9332's formula 0.3/RTT_max gives 3.0 at RTT_max = 100 ms).
	defaultBeta = 3.2
	// defaultCouplingFactor is k in p_CL = k·p': 2 (RFC 9332 §2.4, Linux).
	defaultCouplingFactor = 2
	// defaultStepThreshold is the sojourn time above which the native L4S
	// AQM step marks: 1 ms (Linux sch_dualpi2).
	defaultStepThreshold = time.Millisecond
	// defaultRampMinThreshold is where the optional native L4S ramp starts:
	// 800 µs (RFC 9332 Appendix A, minTh).
	defaultRampMinThreshold = 800 * time.Microsecond
	// defaultRampRange is the width of the optional ramp, from 0 to 100 %
	// marking: 400 µs (RFC 9332 Appendix A, range; maxTh = 1.2 ms).
	defaultRampRange = 400 * time.Microsecond
	// defaultClassicProtectionPercent is the Classic queue's weight in the
	// WRR scheduler: 10 % (Linux classic_protection).
	defaultClassicProtectionPercent = 10
	// defaultTimeShift is the time-shifted FIFO's L4S head start: 50 ms
	// (the RFC 9332 example scheduler as modelled by ns-3).
	defaultTimeShift = 50 * time.Millisecond
	// defaultLimitPackets is the packet limit shared by both queues: 10000
	// (Linux sch_dualpi2).
	defaultLimitPackets = 10000
	// defaultMTUBytes is the MTU used for the WRR credit scale and the
	// "no coupled AQM below two MTUs of backlog" rule: 1500 bytes.
	defaultMTUBytes = 1500
)

// ClassicProtectionNone is the value of [Config.ClassicProtectionPercent]
// that gives the Classic queue a weight of 0 %: strict L4S priority. (Zero
// means the default, 10 %.)
const ClassicProtectionNone = -1

// Validation bounds. Each keeps the fixed-point arithmetic of the hot path
// inside int64 (see params) or the lazy update loop short.
const (
	maxLimitPackets = 1 << 24
	maxDuration     = 10 * time.Second // Target, StepThreshold, TimeShift
	minTupdate      = time.Millisecond
	minGain         = 0.001 // Hz; bounds the catch-up loop of a stalled backlog (see catchUp)
	maxGain         = 100.0 // Hz; keeps gain·delay below 2^59 (see params)
	maxRamp         = time.Second
)

// Config configures a [Queue]. The zero value is the Linux sch_dualpi2
// default configuration, with drops and marks decided at dequeue and a
// secret random seed. [ConfigForLink] sizes the limits for a link instead.
type Config struct {
	// Target is the queue delay the base PI controller holds the larger of
	// the two queues' head delays at. Zero means 15 ms (15 ms).
	// At most 10 s.
	Target time.Duration
	// Tupdate is the interval between PI updates, which run lazily from the
	// time passed to Enqueue and Dequeue. Zero means 16 ms
	// (16 ms). At least 1 ms and at most 10 s.
	Tupdate time.Duration
	// Alpha is the PI integral gain in Hz (probability per second of delay
	// error, per update). Zero means 0.16 (0.16). In [0.001, 100].
	Alpha float64
	// Beta is the PI proportional gain in Hz (probability per second of
	// delay change, per update). Zero means 3.2 (3.2). In
	// [0.001, 100].
	Beta float64
	// CouplingFactor is k, the coupling between the base probability p' and
	// the L4S queue's coupled marking probability p_CL = k·p'. Zero means
	// 2 (2). In [1, 255].
	CouplingFactor int
	// StepThreshold is the L4S sojourn time above which the native step
	// AQM marks every L4S packet (strictly above). Zero means
	// 1 ms (1 ms). Ignored if Ramp is set. At most 10 s.
	StepThreshold time.Duration
	// StepThresholdPackets, if not zero, makes the native step count
	// packets instead of time: an L4S packet is marked when more than this
	// many L4S packets remain queued behind it as it leaves (Linux
	// step_thresh in packets). It cannot be combined with StepThreshold or
	// Ramp. In [1, LimitPackets−2], so that the step can fire.
	StepThresholdPackets int
	// StepMinQueuePackets is Linux's min_qlen_step: the native L4S AQM (step
	// or ramp) acts only on packets that found at least this many L4S
	// packets queued when they arrived. Zero (the default) applies it to
	// every L4S packet. Less than LimitPackets, so that it can apply.
	StepMinQueuePackets int
	// Ramp replaces the native step by RFC 9332's linear ramp: the native
	// L4S marking probability rises from 0 at RampMinThreshold to 1 at
	// RampMinThreshold+RampRange, and is applied only while the L4S queue
	// holds more than one packet (Th_len).
	Ramp bool
	// RampMinThreshold is where the ramp starts. Zero means
	// 800 µs (800 µs). At most 1 s.
	RampMinThreshold time.Duration
	// RampRange is the ramp's width. Zero means 400 µs
	// (400 µs). At most 1 s.
	RampRange time.Duration
	// ClassicProtectionPercent is the Classic queue's weight, in percent of
	// the bytes served while both queues are backlogged, in the credit-based
	// WRR scheduler. Zero means 10 (10 %);
	// [ClassicProtectionNone] means 0 % (strict L4S priority). In [1, 100]
	// otherwise. Ignored with TimeShiftedFIFO.
	ClassicProtectionPercent int
	// TimeShiftedFIFO replaces the WRR scheduler by a time-shifted FIFO:
	// the L4S head is served first unless the Classic head has waited more
	// than TimeShift longer.
	TimeShiftedFIFO bool
	// TimeShift is the time-shifted FIFO's head start for L4S packets.
	// Zero means 50 ms (50 ms). At most 10 s.
	TimeShift time.Duration
	// AnyECTToL4S classifies every ECN-capable packet (ECT(0), ECT(1), CE)
	// into the L4S queue, as in the DualPI2 paper's experiments and Linux's
	// any_ect. By default only ECT(1) and CE go there (RFC 9331).
	AnyECTToL4S bool
	// OverflowOnOverload disables the overload drop: instead p' is capped
	// at 1/k, so the L4S queue is marked at 100 % and the Classic queue at
	// 1/k², and a persistent overload ends in tail drops at the limit
	// (Linux "overflow"). By default, once p' reaches 1/k, ECN-capable
	// packets in both queues are dropped with probability p'² instead of
	// being marked (Linux "drop_on_overload", RFC 9332 §4.2.1).
	OverflowOnOverload bool
	// DropEnqueue moves the coupled and Classic AQM decisions (p_CL, p_C,
	// overload) from dequeue to enqueue, as Linux's drop_enqueue: a packet
	// signalled there is marked on arrival ([aqm.Marked]) or refused with
	// its drop reason. The native L4S AQM (step or ramp) stays at dequeue.
	// By default every decision is made at dequeue (Linux drop_dequeue).
	DropEnqueue bool
	// NQBToL4S classifies packets whose DSCP is 45, the Non-Queue-Building
	// PHB (RFC 9956), into the L4S queue when they arrive through
	// [Queue.EnqueueDSCP]; [Queue.Enqueue], which sees no DSCP, classifies
	// on ECN alone. NQB packets in the L4S queue get the L4S queue's AQM:
	// an ECN-capable one is marked, a Not-ECT one dropped where an L4S
	// packet would be marked, and in overload a Not-ECT one is dropped with
	// p_C like a Classic one (Linux's rules for packets a filter puts in
	// the L queue).
	NQBToL4S bool
	// LimitPackets is the most packets both queues hold together. Zero
	// means 10000 (10000). In [2, 1<<24]: a queue of one
	// packet would never hold the backlog the AQM acts on. Storage for twice
	// this many packets (one ring per queue) is allocated by New:
	// 2·LimitPackets·(size of a Packet[T]), 640 kB for the default and an
	// 8-byte payload ([Detail].MemoryBytes reports it). The AQM keeps the
	// queue short while senders respond, but a limit that holds more than
	// a second of queue at the link rate lets unresponsive traffic build
	// that much delay; [ConfigForLink] sizes the limits for a rate and
	// round-trip time.
	LimitPackets int
	// LimitBytes is the most bytes (sum of Size) both queues hold together:
	// the "memory limit". Zero means LimitPackets × 2 × MTUBytes, Linux's
	// default memlimit (30 MB by default). At least 4×MTUBytes, so that the
	// AQM can act before the buffer is full, and at most 1<<52.
	LimitBytes int
	// MTUBytes is the MTU in bytes: the coupled and Classic AQMs act only
	// while at least 2×MTUBytes (or half of LimitPackets) remain queued
	// after a dequeue, and the WRR credit starts at MTUBytes×(wc−wl). Zero
	// means 1500 (1500). At most 1<<20 and at most a quarter
	// of LimitBytes.
	MTUBytes int
	// Seed seeds the queue's random marking and dropping decisions. Zero
	// (the default, and the right choice in production) draws a secret
	// seed from crypto/rand, so senders cannot predict which packets are
	// marked or dropped; [Queue.Config] reports the seed drawn. Queues
	// with equal configurations and the same non-zero seed decide
	// identically: use a fixed seed for tests and simulations.
	Seed uint64
}

// ConfigForLink returns the configuration of a queue draining a link of
// the given rate for flows whose round-trip time is about rtt (zero means
// 100 ms): the byte limit is [aqm.Rate.BufferBytes] (four round
// trips at the rate, between 64 KiB and 32 MiB) and the packet limit
// [aqm.Rate.BufferPackets] (the same in full-size packets); every other
// field keeps its default. A zero rate (unknown or unlimited) gives the
// zero Config: the defaults.
func ConfigForLink(rate aqm.Rate, rtt time.Duration) Config {
	if rate == 0 {
		return Config{}
	}
	return Config{
		LimitPackets: rate.BufferPackets(rtt),
		LimitBytes:   rate.BufferBytes(rtt),
	}
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Target, defaultTarget)
	def(&c.Tupdate, defaultTupdate)
	if c.StepThresholdPackets == 0 {
		def(&c.StepThreshold, defaultStepThreshold)
	}
	def(&c.RampMinThreshold, defaultRampMinThreshold)
	def(&c.RampRange, defaultRampRange)
	def(&c.TimeShift, defaultTimeShift)
	if c.Alpha == 0 {
		c.Alpha = defaultAlpha
	}
	if c.Beta == 0 {
		c.Beta = defaultBeta
	}
	if c.CouplingFactor == 0 {
		c.CouplingFactor = defaultCouplingFactor
	}
	if c.ClassicProtectionPercent == 0 {
		c.ClassicProtectionPercent = defaultClassicProtectionPercent
	}
	if c.LimitPackets == 0 {
		c.LimitPackets = defaultLimitPackets
	}
	if c.MTUBytes == 0 {
		c.MTUBytes = defaultMTUBytes
	}
	if c.LimitBytes == 0 && c.LimitPackets > 0 && c.MTUBytes > 0 {
		c.LimitBytes = c.LimitPackets * 2 * c.MTUBytes
	}
	return c
}

// Validate reports every field of c that is out of range, one
// [*aqm.ConfigError] per bad field joined with errors.Join; each wraps
// [aqm.ErrInvalidConfig]. Zero fields take their defaults and are valid.
// It does not modify c.
func (c Config) Validate() error {
	d := c.withDefaults()
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "dualq", Field: field, Value: v, Rule: rule})
	}
	durIn := func(field string, v, lo, hi time.Duration) {
		if v < lo || v > hi {
			bad(field, v, "must be in ["+lo.String()+", "+hi.String()+"]")
		}
	}
	durIn("Target", d.Target, 1, maxDuration)
	durIn("Tupdate", d.Tupdate, minTupdate, maxDuration)
	if c.StepThresholdPackets == 0 || c.StepThreshold != 0 {
		durIn("StepThreshold", d.StepThreshold, 1, maxDuration)
	}
	durIn("RampMinThreshold", d.RampMinThreshold, 1, maxRamp)
	durIn("RampRange", d.RampRange, 1, maxRamp)
	durIn("TimeShift", d.TimeShift, 1, maxDuration)
	gainIn := func(field string, v float64) {
		if math.IsNaN(v) || v < minGain || v > maxGain {
			bad(field, v, "must be in [0.001, 100] Hz")
		}
	}
	gainIn("Alpha", d.Alpha)
	gainIn("Beta", d.Beta)
	if d.CouplingFactor < 1 || d.CouplingFactor > 255 {
		bad("CouplingFactor", c.CouplingFactor, "must be in [1, 255]")
	}
	if d.ClassicProtectionPercent != ClassicProtectionNone && (d.ClassicProtectionPercent < 1 || d.ClassicProtectionPercent > 100) {
		bad("ClassicProtectionPercent", c.ClassicProtectionPercent, "must be in [1, 100] or ClassicProtectionNone (-1)")
	}
	if d.LimitPackets < 2 || d.LimitPackets > maxLimitPackets {
		bad("LimitPackets", c.LimitPackets, "must be 0 or in [2, "+strconv.FormatUint(uint64(maxLimitPackets), 10)+"]")
	}
	switch {
	case c.StepThresholdPackets == 0:
	case c.StepThresholdPackets < 0 || c.StepThresholdPackets > d.LimitPackets-2:
		bad("StepThresholdPackets", c.StepThresholdPackets, "must be in [1, LimitPackets−2] so that the step can fire")
	case c.StepThreshold != 0:
		bad("StepThresholdPackets", c.StepThresholdPackets, "cannot be combined with StepThreshold")
	case c.Ramp:
		bad("StepThresholdPackets", c.StepThresholdPackets, "cannot be combined with Ramp")
	}
	if c.StepMinQueuePackets < 0 || c.StepMinQueuePackets >= max(d.LimitPackets, 1) {
		bad("StepMinQueuePackets", c.StepMinQueuePackets, "must be in [0, LimitPackets) so that the native AQM can act")
	}
	if d.MTUBytes < 1 || d.MTUBytes > 1<<20 {
		bad("MTUBytes", c.MTUBytes, "must be in [0, 1048576]")
	}
	// LimitBytes is judged as given: its default derives from LimitPackets
	// and MTUBytes, which are reported on their own if they are bad.
	switch {
	case c.LimitBytes < 0 || int64(c.LimitBytes) > 1<<52:
		bad("LimitBytes", c.LimitBytes, "must be in [0, 2^52]")
	case d.MTUBytes >= 1 && d.MTUBytes <= 1<<20 && d.LimitBytes > 0 && d.LimitBytes < 4*d.MTUBytes:
		// With less than 4 MTUs of buffer, a full queue minus the packet
		// leaving can stay below the 2·MTU the AQM needs: drop-tail.
		bad("LimitBytes", c.LimitBytes, "must be at least 4×MTUBytes ("+strconv.Itoa(4*d.MTUBytes)+") so that the AQM can act before the buffer is full")
	}
	return errors.Join(errs...)
}

// Fixed-point scales.
//
// Probabilities used by per-packet decisions are integers scaled to 2^32:
// the value one32 stands for 1.0, so a decision is "uniform 32-bit random
// number < p" and is exact for every p in [0, 1], including both ends.
//
// The PI integrator keeps p' with 16 more fraction bits, scaled to 2^48
// (one48), so that an update's increment, alpha·Δt with alpha ≈ 0.16 Hz and
// Δt in ns, is not lost to rounding: alpha_fp = alpha·2^48/1e9 ≈ 45036 units
// of 2^-48 per ns of delay error. The decision scale is p' >> 16.
const (
	one32 = uint64(1) << 32
	one48 = int64(1) << 48
	// maxDelay caps the delays fed to the PI controller at 2^34 ns (17.2 s).
	// With gains ≤ 100 Hz, gain_fp ≤ 100·2^48/1e9 < 2^25, so each product
	// gain_fp·delay stays below 2^59 and the sum of two below 2^60: no int64
	// overflow however long the queue stalls. Any delay that long already
	// drives p' up by at least 0.001·17 per update.
	maxDelay = int64(1) << 34
)

// params are the validated configuration, in the hot path's units.
type params struct {
	target      int64 // ns
	tupdate     int64 // ns
	alpha, beta int64 // 2^-48 probability per ns
	k           uint64
	pmax        int64  // cap of p' in 2^-48 units: one48, or one48/k with OverflowOnOverload
	overflow    bool   // OverflowOnOverload
	step        int64  // ns (time step)
	stepPkts    int    // packet step: mark above this many L4S packets left behind
	stepInPkts  bool   // the step counts packets
	minQlen     int    // min_qlen_step: native AQM only for packets that found this many
	dropEnq     bool   // coupled and Classic decisions at enqueue
	nqb         bool   // DSCP 45 to L4S (EnqueueDSCP)
	minLen      int    // LimitPackets/2: the packet-count arm of the safeguard
	ramp        bool   // native ramp instead of the step
	rampMin     int64  // ns
	rampRange   int64  // ns
	wc, wl      int64  // WRR weights in percent
	creditInit  int64  // MTU·(wc − wl)
	tsfifo      bool   // time-shifted FIFO instead of WRR
	tshift      int64  // ns
	anyECT      bool   // all ECN-capable packets to L4S
	limitPkts   int    // shared packet limit
	limitBytes  int    // shared byte limit
	minBacklog  int    // 2·MTU: no coupled/Classic AQM below this backlog (and fewer than minLen packets)
	mtu         int    // bytes
	seed        uint64 // Config.Seed, or the one drawn for a zero Seed
	alphaTarget int64  // alpha·target: the per-update decrease of an idle queue
}

// gainFP converts a gain in Hz to 2^-48 probability units per ns, rounded
// to nearest: g·2^48/1e9.
func gainFP(g float64) int64 { return int64(math.Round(g * float64(one48) / 1e9)) }

// derive validates c and computes its params.
func (c Config) derive() (params, error) {
	if err := c.Validate(); err != nil {
		return params{}, err
	}
	d := c.withDefaults()
	p := params{
		target:     int64(d.Target),
		tupdate:    int64(d.Tupdate),
		alpha:      gainFP(d.Alpha),
		beta:       gainFP(d.Beta),
		k:          uint64(d.CouplingFactor),
		overflow:   d.OverflowOnOverload,
		step:       int64(d.StepThreshold),
		stepPkts:   d.StepThresholdPackets,
		stepInPkts: d.StepThresholdPackets != 0,
		minQlen:    d.StepMinQueuePackets,
		dropEnq:    d.DropEnqueue,
		nqb:        d.NQBToL4S,
		minLen:     max(d.LimitPackets/2, 1),
		ramp:       d.Ramp,
		rampMin:    int64(d.RampMinThreshold),
		rampRange:  int64(d.RampRange),
		tsfifo:     d.TimeShiftedFIFO,
		tshift:     int64(d.TimeShift),
		anyECT:     d.AnyECTToL4S,
		limitPkts:  d.LimitPackets,
		limitBytes: d.LimitBytes,
		minBacklog: 2 * d.MTUBytes,
		mtu:        d.MTUBytes,
		seed:       d.Seed,
	}
	p.pmax = one48
	if p.overflow {
		p.pmax = one48 / int64(p.k)
	}
	p.wc = int64(max(d.ClassicProtectionPercent, 0))
	p.wl = 100 - p.wc
	p.creditInit = int64(d.MTUBytes) * (p.wc - p.wl)
	p.alphaTarget = p.alpha * p.target
	return p, nil
}
