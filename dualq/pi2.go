package dualq

import (
	"math"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// This file is the DualPI2 controller: the lazy PI2 update (advance,
// catchUp, update, derive) and the per-packet decisions it drives
// (decideL4SAlone, decideL4SCoupled, decideClassic, native, roll). The controller is a plain,
// non-generic value inside the queue, so that its decisions inline into
// the queue's paths; the queue owns the two rings, the scheduler and the
// counters, and asks the controller what to do with each packet.

// controller is the PI2 state: the base probability, the probabilities
// derived from it, the update schedule and the random stream. Its zero
// value, seeded, is a fresh controller.
type controller struct {
	pC        uint64   // Classic probability p'^2, 2^32 scale
	pCL       uint64   // coupled L4S probability min(k·p', 1), 2^32 scale
	overload  bool     // k·p' ≥ 1 and overload drops are on
	lCoupled  bool     // overload or pCL > 0: the coupled AQM can act on L4S packets
	lSlow     bool     // the native AQM is the ramp or a packet step: the L4S decision takes its slow path
	step      int64    // the step threshold, ns (params.step, kept here for the inlined path)
	par       *params  // the queue's params (the queue lives behind a pointer)
	nextUpd   aqm.Time // instant of the next PI update
	updFloor  aqm.Time // nextUpd − Tupdate: an earlier now re-anchors the schedule
	started   bool     // nextUpd is set
	p48       int64    // p', 2^48 scale, in [0, par.pmax]
	prevDelay int64    // the delay seen by the previous update, ns
	updates   uint64   // PI updates run so far
	rnd       rng.Source
}

// heads is what the PI update reads from the queue: the arrival instants
// of the two head packets, if any.
type heads struct {
	l, c       aqm.Time
	hasL, hasC bool
}

// empty reports whether both queues are empty.
func (h *heads) empty() bool { return !h.hasL && !h.hasC }

// delay returns the larger of the two head packets' ages at t, in ns,
// clamped to [0, maxDelay]; an empty queue counts as 0.
func (h *heads) delay(t int64) int64 {
	var d int64
	if h.hasL {
		d = age(int64(h.l), t)
	}
	if h.hasC {
		d = max(d, age(int64(h.c), t))
	}
	return d
}

// oldest returns the earlier of the two heads' arrival instants; at least
// one queue must hold a packet.
func (h *heads) oldest() aqm.Time {
	switch {
	case !h.hasL:
		return h.c
	case !h.hasC:
		return h.l
	}
	return min(h.l, h.c)
}

// advance is the slow path of the queue's advance, which calls it when an
// update is due (now ≥ nextUpd), none is scheduled yet, or the schedule
// lies more than one Tupdate ahead (now < updFloor). When an update is due
// it runs every update due at or before now; before the first one is
// scheduled, or when the next update lies more than one Tupdate ahead of
// now (time ran backwards, or returned from a reading far in the future),
// it re-anchors the schedule at now, as if the queue had just started, and
// runs no update (no time has elapsed).
func (c *controller) advance(par *params, now aqm.Time, h *heads) {
	if !c.started || now < c.nextUpd {
		c.started = true
		c.schedule(par, now)
		return
	}
	c.catchUp(par, now, h)
}

// schedule sets the next update one Tupdate after t.
func (c *controller) schedule(par *params, t aqm.Time) {
	c.nextUpd = aqm.Time(satAdd(int64(t), par.tupdate))
	c.updFloor = c.nextUpd - aqm.Time(par.tupdate)
}

// catchUp runs the n ≥ 1 updates due at nextUpd, nextUpd+T, … ≤ now. No
// packet arrived or left between them, so the head of each queue is the same
// packet at every one of those instants and each update sees exactly what a
// timer firing at that instant would have seen. The work is bounded:
//
//   - Both queues empty: every update after the first subtracts
//     alpha·target (its delay and the previous one are 0), so the rest
//     collapse to one saturating subtraction.
//   - A backlog: the head delays grow by T per update (until maxDelay), so
//     once p' has reached its cap with a delay ≥ target every later
//     increment is ≥ 0 and p' stays at the cap: the rest are skipped. Before
//     that, the delay passes target within target/T updates and p' reaches
//     the cap within about sqrt(2/(alpha·T)) more, at most ~1.1·10^4
//     updates under Validate's bounds, and only once per stall.
//   - Heads younger than the update instant (only after time ran
//     backwards): each such update sees delay 0 after delay 0, so the run
//     of them collapses like the idle case.
func (c *controller) catchUp(par *params, now aqm.Time, h *heads) {
	step := uint64(par.tupdate)
	first := uint64(c.nextUpd)
	n := (uint64(now)-first)/step + 1 // now ≥ nextUpd, so the difference is exact in uint64
	last := int64(first + (n-1)*step) // ≤ now, so it fits in int64
	tu := int64(first)
	for m := n; m > 0; {
		if h.empty() {
			c.update(par, 0)
			c.idleUpdates(par, m-1)
			break
		}
		d := h.delay(tu)
		if d == 0 && c.prevDelay == 0 {
			// tu is not after the oldest head's arrival (possible only
			// after time ran backwards): every update until tu passes it
			// sees delay 0 after delay 0, the idle decrement. Run them at
			// once.
			k := min((uint64(h.oldest())-uint64(tu))/step+1, m)
			c.idleUpdates(par, k)
			m -= k
			tu += int64(k * step) // wraps only when m is 0 and tu unused
			continue
		}
		c.update(par, d)
		if m > 1 && c.p48 == par.pmax && d >= par.target {
			c.updates += m - 1
			c.prevDelay = h.delay(last)
			break
		}
		m--
		tu += int64(step)
	}
	c.schedule(par, aqm.Time(last))
	c.derive(par)
}

// idleUpdates runs k PI updates that each see delay 0 after delay 0 (an
// empty queue, or heads younger than the update instant), in closed form:
// each subtracts alpha·target, down to 0.
func (c *controller) idleUpdates(par *params, k uint64) {
	if k == 0 {
		return
	}
	c.updates += k
	c.prevDelay = 0
	if uint64(c.p48)/uint64(par.alphaTarget) < k {
		c.p48 = 0
	} else {
		c.p48 -= int64(k) * par.alphaTarget
	}
}

// update is one PI2 step with queue delay d:
//
//	p' += alpha·(d − target) + beta·(d − d_prev), clamped to [0, pmax]
//
// in 2^-48 units; |each product| < 2^59 (see maxDelay).
func (c *controller) update(par *params, d int64) {
	delta := par.alpha*(d-par.target) + par.beta*(d-c.prevDelay)
	p := c.p48 + delta
	c.p48 = min(max(p, 0), par.pmax)
	c.prevDelay = d
	c.updates++
}

// derive recomputes the per-packet probabilities from p'.
func (c *controller) derive(par *params) {
	p32 := uint64(c.p48) >> 16 // 2^48 → 2^32 scale
	c.pCL = min(par.k*p32, one32)
	if p32 >= one32 {
		c.pC = one32 // p32·p32 would be 2^64
	} else {
		c.pC = p32 * p32 >> 32 // p'^2: 2^64 scale → 2^32 scale
	}
	c.overload = !par.overflow && par.k*uint64(c.p48) >= uint64(one48)
	c.lCoupled = c.overload || c.pCL != 0
	c.lSlow = par.ramp || par.stepInPkts
	c.step = par.step
}

// roll returns true with probability p/2^32. It draws a random number only
// when 0 < p < 2^32, so a queue whose probabilities are 0 or 1 never touches
// its random source.
func (c *controller) roll(p uint64) bool {
	if p == 0 {
		return false
	}
	if p >= one32 {
		return true
	}
	return uint64(c.rnd.Uint32()) < p
}

// native returns the native L4S AQM's marking probability (2^32 scale) for
// a packet that waited sojourn ns; lenAfter is the L4S queue length after it
// was popped.
func native(par *params, sojourn int64, lenAfter int) uint64 {
	if par.stepInPkts {
		if lenAfter > par.stepPkts {
			return one32
		}
		return 0
	}
	if !par.ramp {
		if sojourn > par.step {
			return one32
		}
		return 0
	}
	// RFC 9332 ramp, applied only while the L4S queue held more than
	// Th_len = 1 packet (counting the one being dequeued).
	if lenAfter < 1 || sojourn <= par.rampMin {
		return 0
	}
	x := sojourn - par.rampMin
	if x >= par.rampRange {
		return one32
	}
	// x < rampRange ≤ 1 s < 2^30, so x<<32 < 2^62.
	return uint64(x<<32) / uint64(par.rampRange)
}

// action is a controller decision on a popped packet.
type action uint8

const (
	keep         action = iota // send the packet unchanged
	mark                       // set CE (the coupled or Classic AQM)
	markStep                   // set CE (the native L4S AQM)
	dropEarly                  // drop: a signal to a Not-ECT packet
	dropOverload               // drop: an ECN-capable packet in overload
)

// verdict returns the drop reason of a drop action.
func (a action) verdict() aqm.Verdict {
	if a == dropOverload {
		return aqm.DroppedOverload
	}
	return aqm.DroppedEarly
}

// The L4S decision on a packet just popped after waiting sojourn ns, with
// lenAfter L4S packets behind it, is decideL4SAlone while the 2·MTU
// safeguard keeps the coupled AQM out and decideL4SCoupled otherwise (the
// caller picks, so that each inlines). Outside overload the mark
// probability is max(native, p_CL), one roll; in overload the packet is
// dropped with p_C and marked otherwise. Both take decideL4SSlow for the
// ramp, a non-zero p_CL or overload.

// decideL4SAlone is the L4S decision when the safeguard keeps the coupled AQM
// out: the step alone, inline.
func (c *controller) decideL4SAlone(sojourn int64, lenAfter int) action {
	if c.lSlow {
		return c.decideL4SSlow(sojourn, lenAfter, false)
	}
	if sojourn > c.step {
		return markStep
	}
	return keep
}

// decideL4SCoupled is the L4S decision when the coupled AQM may act: inline
// while p_CL is 0 and there is no overload.
func (c *controller) decideL4SCoupled(sojourn int64, lenAfter int) action {
	if c.lSlow || c.lCoupled {
		return c.decideL4SSlow(sojourn, lenAfter, true)
	}
	if sojourn > c.step {
		return markStep
	}
	return keep
}

// decideL4SSlow is the L4S decision with a ramp, a coupled probability or
// overload.
func (c *controller) decideL4SSlow(sojourn int64, lenAfter int, coupled bool) action {
	par := c.par
	if coupled && c.overload {
		if c.roll(c.pC) {
			return dropOverload
		}
		return mark
	}
	pn := native(par, sojourn, lenAfter)
	var pc uint64
	if coupled {
		pc = c.pCL
	}
	if pn >= pc {
		if c.roll(pn) {
			return markStep
		}
	} else if c.roll(pc) {
		return mark
	}
	return keep
}

// decideNotECTInL is the L4S decision for a Not-ECT packet in the L4S
// queue (an NQB packet): where an ECN-capable one would be marked it is
// dropped, and in overload it is dropped with p_C and kept otherwise, as
// Linux treats Not-ECT packets a filter puts in its L queue.
func (c *controller) decideNotECTInL(sojourn int64, lenAfter int, coupled bool) action {
	if coupled && c.overload {
		if c.roll(c.pC) {
			return dropEarly
		}
		return keep
	}
	if c.decideL4SSlow(sojourn, lenAfter, coupled) != keep {
		return dropEarly
	}
	return keep
}

// decideL4SEnqueue is the coupled decision on an L4S-queue packet with
// codepoint ecn at enqueue (DropEnqueue), where the native AQM has no say:
// outside overload it is marked (a Not-ECT one dropped) with p_CL; in
// overload it is dropped with p_C and otherwise marked (a Not-ECT one
// kept).
func (c *controller) decideL4SEnqueue(ecn aqm.ECN) action {
	if c.overload {
		if c.roll(c.pC) {
			if ecn == aqm.NotECT {
				return dropEarly
			}
			return dropOverload
		}
		if ecn == aqm.NotECT {
			return keep
		}
		return mark
	}
	if !c.roll(c.pCL) {
		return keep
	}
	if ecn == aqm.NotECT {
		return dropEarly
	}
	return mark
}

// decideClassic decides the fate of a Classic packet with codepoint ecn
// just popped; coupled reports whether the 2·MTU safeguard lets the AQM act. With probability p_C it is
// dropped if Not-ECT or in overload and marked otherwise. Its common case,
// p_C = 0, inlines.
func (c *controller) decideClassic(ecn aqm.ECN, coupled bool) action {
	if !coupled || c.pC == 0 {
		return keep
	}
	return c.classicHit(ecn)
}

// classicHit is decideClassic once p_C > 0 and the safeguard allows it.
func (c *controller) classicHit(ecn aqm.ECN) action {
	if !c.roll(c.pC) {
		return keep
	}
	switch {
	case ecn == aqm.NotECT:
		return dropEarly
	case c.overload:
		return dropOverload
	}
	return mark
}

// age returns t − enq clamped to [0, maxDelay], without int64 overflow.
func age(enq, t int64) int64 {
	if t <= enq {
		return 0
	}
	d := t - enq
	if d < 0 || d > maxDelay { // d < 0: the subtraction overflowed
		return maxDelay
	}
	return d
}

// satAdd returns a+b for b ≥ 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
