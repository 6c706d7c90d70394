package codel

import (
	"errors"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/dropcap"
)

// Defaults for the zero fields of [Config].
const (
	// defaultTarget is the acceptable standing queue delay, 5 ms (RFC 8289
	// section 4.4).
	defaultTarget = 5 * time.Millisecond
	// defaultInterval is the sliding window over which the minimum delay is
	// tracked, 100 ms (RFC 8289 section 4.3).
	defaultInterval = 100 * time.Millisecond
	// defaultMTUBytes is the "less than one MTU queued" guard threshold, 1514
	// bytes: an Ethernet MTU plus its 14-byte header, the value Linux takes
	// from the device (psched_mtu).
	defaultMTUBytes = 1514
	// defaultLimitPackets is the packet limit, 1000, Linux sch_codel's
	// default.
	defaultLimitPackets = 1000
	// maxInterval is the largest Interval accepted: one hour. It keeps
	// interval^2*count within 128 bits in the control law and 16*Interval
	// within int64.
	maxInterval = time.Hour
	// maxMTUBytes is the largest MTUBytes accepted, 2^20 as in Linux.
	maxMTUBytes = 1 << 20
	// maxLimitPackets is the largest LimitPackets accepted: storage for
	// this many packets is allocated up front.
	maxLimitPackets = 1 << 24
	// maxDropsPerDequeue bounds the packets one Dequeue call drops: 256
	// (see package dropcap).
	maxDropsPerDequeue = dropcap.PerDequeue
)

// Control holds the settings of one CoDel controller: everything but the
// limits. It is embedded in [Config] and in the configurations of the
// queues that run CoDel per flow (package fq's CoDelConfig), so that its
// fields are written cfg.Target and its defaults, ranges and rules are
// stated once, here. The zero value is RFC 8289 CoDel with ECN marking and
// a one-MTU guard of 1514 bytes.
type Control struct {
	// Target is the acceptable minimum sojourn time. Zero means
	// 5 ms. It must be below Interval (and so below
	// one hour).
	Target time.Duration
	// Interval is the window the minimum sojourn time must stay above
	// Target before CoDel drops, and the base of the control law
	// Interval/sqrt(count). Zero means 100 ms; at most
	// one hour.
	Interval time.Duration
	// MTUBytes is the guard: CoDel does not drop while at most this many
	// bytes remain queued after the head packet is removed (RFC 8289's
	// MAXPACKET, Linux's mtu). Zero means 1514 (an Ethernet MTU plus its
	// 14-byte header, as Linux takes from the device); at most 2^20.
	MTUBytes int
	// DisableECN makes CoDel drop ECN-capable packets too. By default it
	// sets CE on ECN-capable packets instead of dropping them (RFC 8289
	// section 5 allows it; Linux sch_codel has it off by default, fq_codel
	// on).
	DisableECN bool
	// CEThreshold, if positive, enables shallow marking: a packet that
	// leaves with a sojourn time strictly above it is marked CE if it is
	// ECN-capable (and selected by CEThresholdECT1Only), independently of
	// the CoDel state and of DisableECN (Linux ce_threshold). Zero disables
	// it.
	CEThreshold time.Duration
	// CEThresholdECT1Only restricts CEThreshold marking to L4S packets:
	// those that arrived ECT(1) or CE (Linux ce_threshold_selector 0x01
	// with mask 0x01). By default every ECN-capable packet is eligible.
	CEThresholdECT1Only bool
	// CEThresholdNQB, with CEThreshold and CEThresholdECT1Only, selects for
	// the CE threshold the packets that arrive with DSCP [aqm.DSCPNQB] (45, the
	// Non-Queue-Building PHB of RFC 9956) too, through the queues'
	// EnqueueDSCP ([Queue.EnqueueDSCP], package fq's CoDel.EnqueueDSCP):
	// RFC 9956 asks that NQB traffic share the L4S treatment where a
	// shallow queue exists. Only ECN-capable packets can be marked, so a
	// Not-ECT NQB packet is never marked by the threshold. Enqueue, which
	// sees no DSCP, selects on ECN alone. Without CEThreshold and
	// CEThresholdECT1Only it has no effect: without the second, every
	// ECN-capable packet is already selected.
	CEThresholdNQB bool
	// StrictDeadline makes the first drop need now > the deadline that
	// starts one Interval after the sojourn time rose above Target, as Linux
	// and ns-3 do. By default now >= the deadline suffices (RFC 8289).
	StrictDeadline bool
	// LinuxCount counts signals the Linux way: count rises before every drop
	// or mark at a scheduled time. By default (RFC 8289) a drop raises count
	// only if the next packet is still above target and a further drop is
	// scheduled, so after an episode Linux's count is one higher, which the
	// re-entry rule carries into the next episode.
	LinuxCount bool
}

// SelectsNQB reports whether a controller built from c selects DSCP-45
// packets for the CE threshold: CEThresholdNQB with a positive CEThreshold
// and CEThresholdECT1Only. Only then does [Params.SelectDSCP] set its
// selection bit.
func (c Control) SelectsNQB() bool {
	return c.CEThresholdNQB && c.CEThreshold > 0 && c.CEThresholdECT1Only
}

// Validate reports every field of c that is out of range, one
// [*aqm.ConfigError] (package "codel") each, joined with [errors.Join]; each
// wraps [aqm.ErrInvalidConfig]. A field that is out of range on its own is
// reported even if it also breaks a rule that relates it to another field
// (Target must be less than Interval); that relation is checked only when
// both fields are in range. It does not change c.
func (c Control) Validate() error { return errors.Join(c.validate()...) }

// validate is [Control.Validate] as a list, in field order.
func (c Control) validate() []error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "codel", Field: field, Value: v, Rule: rule})
	}
	targetOK := c.Target >= 0 && c.Target < maxInterval
	if !targetOK {
		bad("Target", c.Target, "must be in [0, "+maxInterval.String()+")")
	}
	intervalOK := c.Interval >= 0 && c.Interval <= maxInterval
	if !intervalOK {
		bad("Interval", c.Interval, "must be in [0, "+maxInterval.String()+"]")
	}
	if d := c.withDefaults(); targetOK && intervalOK && d.Target >= d.Interval {
		bad("Target", d.Target, "must be less than Interval ("+d.Interval.String()+")")
	}
	if c.MTUBytes < 0 || c.MTUBytes > maxMTUBytes {
		bad("MTUBytes", c.MTUBytes, "must be in [0, "+strconv.Itoa(maxMTUBytes)+"]")
	}
	if c.CEThreshold < 0 {
		bad("CEThreshold", c.CEThreshold, "must not be negative")
	}
	return errs
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
	if c.MTUBytes == 0 {
		c.MTUBytes = defaultMTUBytes
	}
	return c
}

// Config configures a CoDel [Queue]: the controller's settings
// ([Control], embedded) and the limits. The zero value is RFC 8289 CoDel
// with ECN marking, a 1000-packet limit and a one-MTU guard of 1514 bytes.
// [ConfigForLink] gives one sized for a link's rate. CoDel makes no random
// decisions, so it has no seed: the same calls give the same decisions.
type Config struct {
	Control
	// LimitPackets is the most packets queued; arrivals beyond it are
	// refused ([aqm.DroppedOverlimit]) and do not touch CoDel's state. Zero
	// means 1000; at most 16777216. New allocates
	// storage for this many packets (rounded up to a power of two; see
	// [Detail].MemoryBytes).
	//
	// CoDel keeps the delay of responsive traffic near Target, but against
	// unresponsive traffic only the limits bound the queue: a limit that
	// holds more than a second of traffic at the link rate lets such
	// traffic build a second of delay, which defeats the purpose of the
	// AQM. [ConfigForLink] sizes the limits for a link's rate.
	LimitPackets int
	// LimitBytes is the most bytes queued. Zero means no byte limit. See
	// LimitPackets on sizing, and [ConfigForLink].
	LimitBytes int
}

// Validate reports every field of c that is out of range, one
// [*aqm.ConfigError] each, joined with [errors.Join]; each wraps
// [aqm.ErrInvalidConfig]. The controller's fields are checked as
// [Control.Validate] checks them, then the limits. It does not change c:
// zero fields stand for their defaults, which [Queue.Config] reports.
func (c Config) Validate() error {
	errs := c.Control.validate()
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "codel", Field: field, Value: v, Rule: rule})
	}
	if c.LimitPackets < 0 || c.LimitPackets > maxLimitPackets {
		bad("LimitPackets", c.LimitPackets, "must be in [0, "+strconv.FormatUint(uint64(maxLimitPackets), 10)+"]")
	}
	if c.LimitBytes < 0 {
		bad("LimitBytes", c.LimitBytes, "must not be negative")
	}
	// CoDel signals only while more than MTUBytes stay queued behind the
	// packet leaving. Limits that never hold that much, in packets of up
	// to MTUBytes, leave only the limit's tail drop.
	if c.LimitPackets > 0 && c.LimitPackets < minLimitPackets {
		// CoDel signals only while more than MTUBytes stay queued behind the
		// packet leaving, which takes two more packets of up to MTUBytes.
		bad("LimitPackets", c.LimitPackets, "must be 0 or at least 3")
	}
	if mtu := c.withDefaults().MTUBytes; c.LimitBytes > 0 && c.MTUBytes >= 0 && c.MTUBytes <= maxMTUBytes && c.LimitBytes < 3*mtu {
		// CoDel signals only while more than MTUBytes stay queued behind the
		// packet leaving, and a full queue of packets of up to MTUBytes may
		// hold less.
		bad("LimitBytes", c.LimitBytes, "must be 0 or at least 3×MTUBytes ("+strconv.Itoa(3*mtu)+")")
	}
	return errors.Join(errs...)
}

// minLimitPackets is the smallest LimitPackets with which CoDel can signal:
// the packet leaving and two more, whose bytes can exceed MTUBytes.
const minLimitPackets = 3

// withDefaults returns c with every zero field that has a default set to
// it.
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

// Params are the derived constants a [Controller] runs on, shared by every
// Controller of a queue. Build them with [Control.Params].
type Params struct {
	target      int64 // ns
	interval    int64 // ns
	mtu         int64 // bytes
	ceThreshold int64 // ns; 0: off
	ecn         bool
	ceECT1      bool
	ceNQB       bool // SelectsNQB: SelectDSCP sets nqbSelected
	strict      bool
	linuxCount  bool
	ctl         Control // the settings, defaults filled in
}

// Control returns the settings p was built from, defaults filled in: the
// settings its controllers run on, as a queue that embeds [Control]
// reports them in its Config.
func (p *Params) Control() Control { return p.ctl }

// Params applies the defaults and returns the [Params] for c, for a
// [Queue] or for a queue that embeds a [Controller] per flow, such as
// package fq's FQ-CoDel. Call [Control.Validate] (or the embedding
// configuration's Validate) first: out-of-range values are clamped here,
// not reported.
func (c Control) Params() Params {
	c = c.withDefaults()
	iv := min(max(c.Interval, 2), maxInterval)
	tg := min(max(c.Target, 1), iv-1)
	return Params{
		target:      int64(tg),
		interval:    int64(iv),
		mtu:         int64(min(max(c.MTUBytes, 0), maxMTUBytes)),
		ceThreshold: int64(max(c.CEThreshold, 0)),
		ecn:         !c.DisableECN,
		ceECT1:      c.CEThresholdECT1Only,
		ceNQB:       c.SelectsNQB(),
		strict:      c.StrictDeadline,
		linuxCount:  c.LinuxCount,
		ctl:         c,
	}
}

// nqbSelected is a bit of an ECN value outside the two ECN bits: set by
// [Params.SelectDSCP] on an ECN-capable NQB packet, it makes the CE
// threshold treat the packet as L4S (shallow). Owners clear it with
// [aqm.ECNMask] on every way out.
const nqbSelected aqm.ECN = 0x80

// SelectDSCP returns the ECN value to store with a packet that arrived
// with codepoint ecn and DSCP dscp, and to pass to [Controller.Decide]
// when it reaches the head: ecn's two ECN bits, plus, if p selects NQB
// packets ([Control.SelectsNQB]) and the packet is ECN-capable with DSCP
// [aqm.DSCPNQB], a selection bit above them that Decide's CE threshold reads
// as "L4S". The owner must clear that bit (keep only [aqm.ECNMask]) before
// the packet leaves, through Dequeue, a DropFunc or any other way. The bit
// is set only while p has a CE threshold, so a packet that Decide does not
// see (its common case, [Controller.DeliverIfBelowTarget], needs no CE
// threshold) never carries it.
func (p *Params) SelectDSCP(ecn aqm.ECN, dscp uint8) aqm.ECN {
	ecn &= aqm.ECNMask
	if p.ceNQB && dscp == aqm.DSCPNQB && ecn != aqm.NotECT {
		ecn |= nqbSelected
	}
	return ecn
}
