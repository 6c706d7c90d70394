package fq

import (
	"strconv"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/frame"
)

// The limits with which a flow's AQM could never signal. One flow may hold
// the whole buffer, so the per-flow AQM's own rules apply to the queue's
// shared limits: the same rules as codel.Config's, cobalt.Config's and
// pie.Config's LimitPackets and LimitBytes, here for LimitPackets and
// MemoryLimitBytes. Fields out of range on their own are left to
// validateSched and the controller's Validate.

// signalRules: CoDel signals only while more than MTUBytes stay queued
// behind the packet leaving (the flow's bytes, or all bytes with
// GlobalBacklogGuard).
func (c CoDelConfig) signalRules() []error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "fq", Field: field, Value: v, Rule: rule})
	}
	if c.LimitPackets > 0 && c.LimitPackets < 3 {
		// CoDel signals only while more than MTUBytes stay queued behind the
		// packet leaving, which takes two more packets of up to MTUBytes.
		bad("LimitPackets", c.LimitPackets, "must be 0 or at least 3")
	}
	// The MTUBytes in effect, when valid (codel.Control reports it if not).
	mtuOK := codel.Control{MTUBytes: c.MTUBytes}.Validate() == nil
	p := codel.Control{MTUBytes: c.MTUBytes}.Params()
	mtu := p.Control().MTUBytes
	if c.MemoryLimitBytes > 0 && c.MemoryLimitBytes <= maxCoDelMemoryLimit && mtuOK && c.MemoryLimitBytes < 3*mtu {
		// CoDel signals only while more than MTUBytes stay queued behind the
		// packet leaving, and a full queue of packets of up to MTUBytes may
		// hold less.
		bad("MemoryLimitBytes", c.MemoryLimitBytes, "must be 0 or at least 3×MTUBytes ("+strconv.Itoa(3*mtu)+")")
	}
	return errs
}

// signalRules: COBALT signals on a packet that leaves while another of its
// flow waits; BLUE's step must not round to zero (cobalt.Config checks
// that one).
func (c CobaltConfig) signalRules() []error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "fq", Field: field, Value: v, Rule: rule})
	}
	if c.LimitPackets > 0 && c.LimitPackets < 2 {
		// With one packet queued, COBALT has nothing to signal on before the
		// limit refuses the next.
		bad("LimitPackets", c.LimitPackets, "must be 0 or at least 2")
	}
	if need := 2 * frame.FullBytes; c.MemoryLimitBytes > 0 && c.MemoryLimitBytes < need {
		bad("MemoryLimitBytes", c.MemoryLimitBytes, "must be 0 or at least 2 full-size packets ("+strconv.Itoa(need)+" bytes): with less, full-size packets are refused at the limit before COBALT can signal")
	}
	return errs
}

// signalRules: PIE drops nothing while at most 2×MeanPacketBytes are
// queued in the flow, and with RateEstimator measures the departure rate
// only once DequeueThresholdBytes are queued.
func (c PIEConfig) signalRules() []error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "fq", Field: field, Value: v, Rule: rule})
	}
	d := c.withDefaults()
	mean := d.MeanPacketBytes
	if mean < 1 || mean > 1<<16-1 || d.LimitPackets < 0 || d.MemoryLimitBytes < 0 {
		return nil // reported on their own
	}
	if c.LimitPackets > 0 && c.LimitPackets < 4 {
		// PIE drops nothing while at most 2×MeanPacketBytes are queued, which
		// takes three mean-size packets to exceed.
		bad("LimitPackets", c.LimitPackets, "must be 0 or at least 4")
	}
	if c.MemoryLimitBytes > 0 && c.MemoryLimitBytes < 4*mean {
		// PIE drops nothing while at most 2×MeanPacketBytes are queued, and a
		// full queue of packets of up to twice the mean may hold less.
		bad("MemoryLimitBytes", c.MemoryLimitBytes, "must be 0 or at least 4×MeanPacketBytes ("+strconv.Itoa(4*mean)+")")
	}
	if !d.RateEstimator || d.DequeueThresholdBytes < 1 || d.DequeueThresholdBytes > 1<<30 {
		return errs
	}
	if d.DequeueThresholdBytes <= mean {
		// A measurement cycle that one packet completes takes no time, the
		// departure rate looks infinite and PIE never signals.
		bad("DequeueThresholdBytes", d.DequeueThresholdBytes, "must be more than MeanPacketBytes ("+strconv.Itoa(mean)+") with RateEstimator")
	}
	buf := min(d.LimitPackets*mean, d.MemoryLimitBytes)
	if buf < d.DequeueThresholdBytes+2*mean {
		bad("DequeueThresholdBytes", d.DequeueThresholdBytes, "must be at most "+strconv.Itoa(buf-2*mean)+" with RateEstimator (the buffer less 2×MeanPacketBytes)")
	}
	return errs
}
