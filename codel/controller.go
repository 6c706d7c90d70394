package codel

import (
	"math"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Action is what a [Controller] decides for the packet it examined.
type Action uint8

const (
	// Deliver: send the packet unchanged.
	Deliver Action = iota
	// Drop: drop the packet (a CoDel congestion drop) and examine the next.
	Drop
	// Mark: set CE on the packet instead of dropping it, and send it.
	Mark
	// MarkCE: set CE because the sojourn time exceeded the CE threshold
	// (shallow marking), and send it.
	MarkCE
)

// String names the action.
func (a Action) String() string {
	switch a {
	case Deliver:
		return "deliver"
	case Drop:
		return "drop"
	case Mark:
		return "mark"
	case MarkCE:
		return "mark-ce"
	}
	return "action(?)"
}

// Controller flag bits.
const (
	flagDropping  = 1 << iota // in the dropping state
	flagAbove                 // firstAbove holds a deadline
	flagPending               // a scheduled signal was just given; the next packet decides the next one
	flagEntered               // the dropping state was entered by a drop in this call; deliver the next packet
	flagScheduled             // dropNext has been set at least once
)

// maxCount saturates count: Linux lets it wrap; beyond 2^30 the spacing
// interval/2^15 no longer changes anything that matters.
const maxCount = 1 << 30

// Controller is the CoDel state machine of one queue (RFC 8289 section 5):
// the deadline after which a standing delay allows dropping, the dropping
// state, count, lastcount, the time of the next drop and the cached
// 1/sqrt(count). It is a small value (40 bytes) so a fair queue can embed one
// per flow; [Queue] embeds one for a single FIFO. The zero Controller is the
// initial state. It holds no packets: the owner pops the head packet, calls
// [Controller.Decide] with its sojourn time and the bytes still queued, and
// acts on the returned [Action], looping while it is Drop.
type Controller struct {
	firstAbove aqm.Time // deadline: dropping is allowed from here (flagAbove)
	dropNext   aqm.Time // time of the next scheduled drop or mark
	count      uint32   // signals in this dropping episode (see Config.LinuxCount)
	lastCount  uint32   // count when the dropping state was last entered
	invSqrt    uint32   // 1/sqrt(count) in Q0.32, valid for count ≥ 1
	ldelay     uint32   // sojourn of the last packet examined, ns, saturated
	flags      uint8
}

// State is a snapshot of a [Controller], for statistics.
type State struct {
	// Dropping reports whether the controller is in the dropping state.
	Dropping bool `metric:"dropping,gauge"`
	// Count is the number of drops and marks of the current or last
	// dropping episode, as the control law uses it.
	Count uint32 `metric:"count,gauge"`
	// LastCount is Count when the dropping state was last entered.
	LastCount uint32 `metric:"lastcount,gauge"`
	// InvSqrt is the cached 1/sqrt(Count) as a Q0.32 fraction (divide by
	// 2^32).
	InvSqrt uint32 `metric:"-"`
	// FirstAbove is the deadline after which the current standing delay
	// allows a drop, or zero if the delay is below target.
	FirstAbove aqm.Time `metric:"first_above_time_seconds,gauge"`
	// DropNext is the time of the next scheduled drop or mark (meaningful
	// while Dropping; afterwards the re-entry rule uses it).
	DropNext aqm.Time `metric:"next_drop_time_seconds,gauge"`
	// LastSojourn is the sojourn time of the last packet examined (Linux
	// ldelay), saturated at about 4.29 s.
	LastSojourn time.Duration `metric:"ldelay_seconds,gauge"`
}

// State returns a snapshot of c.
func (c *Controller) State() State {
	s := State{
		Dropping:    c.flags&flagDropping != 0,
		Count:       c.count,
		LastCount:   c.lastCount,
		InvSqrt:     c.invSqrt,
		DropNext:    c.dropNext,
		LastSojourn: time.Duration(c.ldelay),
	}
	if c.flags&flagAbove != 0 {
		s.FirstAbove = c.firstAbove
	}
	return s
}

// addSat returns t+d, saturated at the ends of the int64 range.
func addSat(t aqm.Time, d int64) aqm.Time {
	if d > 0 && t > aqm.Time(math.MaxInt64-d) {
		return math.MaxInt64
	}
	return t + aqm.Time(d)
}

// subSat returns a-b, saturated at the ends of the int64 range.
func subSat(a, b aqm.Time) int64 {
	d := int64(a) - int64(b)
	if (a >= 0) != (b >= 0) && (d >= 0) != (a >= 0) { // overflow
		if a >= 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// setCount sets count to n (clamped to [1, maxCount]) and updates the cached
// inverse square root: from the previous value when n is the next count,
// from a fresh seed otherwise.
func (c *Controller) setCount(n uint32) {
	n = min(max(n, 1), maxCount)
	prev := uint32(0)
	if n == c.count+1 && c.count >= 1 {
		prev = c.invSqrt
	}
	c.count = n
	c.invSqrt = invSqrt(n, prev)
}

// law returns t + Interval/sqrt(count) (RFC 8289 control_law), at least
// 1 ns later than t.
func (c *Controller) law(p *Params, t aqm.Time) aqm.Time {
	return addSat(t, lawStepCached(p.interval, c.count, c.invSqrt))
}

// okToDrop is the RFC's dodequeue test for a packet of sojourn sj with
// backlog bytes left behind it: true once the sojourn time has stayed at or
// above target for an interval while more than an MTU was queued.
func (c *Controller) okToDrop(p *Params, now aqm.Time, sj int64, backlog int) bool {
	if sj < p.target || int64(backlog) <= p.mtu {
		c.flags &^= flagAbove
		return false
	}
	if c.flags&flagAbove == 0 || subSat(c.firstAbove, now) > p.interval {
		// Start the window, or restart it if the deadline lies further
		// ahead than one Interval: it was set at a reading far in the
		// future, and waiting for it would disable CoDel.
		c.firstAbove = addSat(now, p.interval)
		c.flags |= flagAbove
		return false
	}
	if p.strict {
		return now > c.firstAbove
	}
	return now >= c.firstAbove
}

// Decide runs the CoDel dequeue logic (RFC 8289 section 5.5) on the packet
// just removed from the head of the queue: sojourn is its time in the queue,
// backlog the bytes still queued behind it, ecn its codepoint as it was
// queued (its two ECN bits, and the selection bit of [Params.SelectDSCP]
// if that set one; no other bit may be set). It returns
// what to do with it. After Drop, the owner removes the next packet and calls
// Decide again in the same Dequeue, or calls [Controller.Empty] if there is
// none; it stops after 256 drops with [Controller.Resync].
func (c *Controller) Decide(p *Params, now aqm.Time, sojourn time.Duration, backlog int, ecn aqm.ECN) Action {
	sj := int64(max(sojourn, 0))
	if c.deliverBelowTarget(p, sj) {
		return Deliver
	}
	c.ldelay = uint32(min(sj, math.MaxUint32))
	ok := c.okToDrop(p, now, sj, backlog)
	if c.flags&flagEntered != 0 {
		// The packet after the drop that entered the dropping state is sent
		// whatever its sojourn (RFC: the second dodequeue only updates
		// first_above_time).
		c.flags &^= flagEntered
		return c.shallow(p, sj, ecn)
	}
	if c.flags&flagDropping == 0 {
		if !ok {
			return c.shallow(p, sj, ecn)
		}
		c.enter(p, now)
		if p.ecn && ecn.Capable() {
			return Mark
		}
		c.flags |= flagEntered
		return Drop
	}
	if c.flags&flagPending != 0 {
		// The previous packet was dropped or marked at dropNext. The RFC
		// schedules the next signal only if this one is still above target.
		c.flags &^= flagPending
		if !ok {
			c.flags &^= flagDropping
			return c.shallow(p, sj, ecn)
		}
		if !p.linuxCount {
			c.setCount(c.count + 1)
		}
		c.dropNext = c.law(p, c.dropNext)
	} else if !ok {
		c.flags &^= flagDropping
		return c.shallow(p, sj, ecn)
	}
	if subSat(c.dropNext, now) > p.interval {
		// No control-law step exceeds Interval: the schedule was taken
		// from a reading far in the future. Take it from now.
		c.dropNext = c.law(p, now)
	}
	if now < c.dropNext {
		return c.shallow(p, sj, ecn)
	}
	if p.linuxCount {
		c.setCount(c.count + 1)
	}
	c.flags |= flagPending
	if p.ecn && ecn.Capable() {
		return Mark
	}
	return Drop
}

// DeliverIfBelowTarget is Decide's common case, small enough to inline
// into a queue's Dequeue: a packet whose sojourn is below target while the
// controller is not dropping and no CE threshold is set. It then does what
// Decide would (records the sojourn, forgets the above-target deadline)
// and reports true, meaning [Deliver]; otherwise it changes nothing and
// reports false, and the caller calls Decide.
func (c *Controller) DeliverIfBelowTarget(p *Params, sojourn time.Duration) bool {
	return c.deliverBelowTarget(p, int64(max(sojourn, 0)))
}

// deliverBelowTarget is Decide's common case, small enough to inline into
// a queue's Dequeue: a packet of sojourn sj (ns, ≥ 0) below target while not
// dropping and with no CE threshold. Decide would record the sojourn,
// forget the above-target deadline (okToDrop) and deliver (shallow); this
// does the same and reports true, or changes nothing and reports false.
func (c *Controller) deliverBelowTarget(p *Params, sj int64) bool {
	if sj >= p.target || c.flags&(flagDropping|flagEntered) != 0 || p.ceThreshold != 0 {
		return false
	}
	c.ldelay = uint32(min(sj, math.MaxUint32))
	c.flags &^= flagAbove
	return true
}

// enter switches to the dropping state with the RFC/Linux re-entry rule: if
// the last episode ended recently (the next drop was due less than 16
// intervals ago) and signalled more than once, resume at the count it
// reached beyond its starting point; otherwise start at 1. A last schedule
// more than one Interval ahead of now came from a reading far in the
// future and does not count as recent.
func (c *Controller) enter(p *Params, now aqm.Time) {
	delta := c.count - c.lastCount
	n := uint32(1)
	if delta > 1 && delta <= maxCount && c.flags&flagScheduled != 0 &&
		subSat(now, c.dropNext) < 16*p.interval && subSat(c.dropNext, now) <= p.interval {
		n = delta
	}
	c.count = 0 // setCount reseeds: n is not count+1 of anything cached
	c.setCount(n)
	c.lastCount = c.count
	c.dropNext = c.law(p, now)
	c.flags |= flagDropping | flagScheduled
	c.flags &^= flagPending
}

// shallow applies the CE threshold to a packet about to be delivered. With
// CEThresholdECT1Only it selects ECT(1) and CE, and the ECN-capable NQB
// packets SelectDSCP flagged (nqbSelected).
func (c *Controller) shallow(p *Params, sj int64, ecn aqm.ECN) Action {
	if p.ceThreshold > 0 && sj > p.ceThreshold && ecn.Capable() && (!p.ceECT1 || ecn&(aqm.ECT1|nqbSelected) != 0) {
		return MarkCE
	}
	return Deliver
}

// Empty tells c that its queue was found empty at now: it leaves the
// dropping state and forgets the above-target deadline (RFC 8289 dodequeue
// on an empty queue). CoDel's rule needs neither p nor now; they are taken
// so that every per-flow controller is told the same way.
func (c *Controller) Empty(p *Params, now aqm.Time) {
	c.flags &^= flagDropping | flagAbove | flagPending | flagEntered
}

// Overflow records that one of c's packets hit a limit at now. CoDel's
// rule does not react to a refusal (a fair queue's overload dropper uses
// [Controller.AddCount] instead), so Overflow changes nothing; it is here
// so that every per-flow controller is told the same way.
func (c *Controller) Overflow(p *Params, now aqm.Time) {}

// Resync is called instead of Decide when the owner has dropped
// 256 packets in one Dequeue: the next packet is sent and, if
// still dropping, the next drop is scheduled one control-law step from now
// rather than from the stale schedule.
func (c *Controller) Resync(p *Params, now aqm.Time) {
	c.flags &^= flagPending | flagEntered
	if c.flags&flagDropping != 0 {
		c.dropNext = c.law(p, now)
	}
}

// AddCount adds k to count, as Linux fq_codel does for the packets its
// overload dropper removes from a flow (so that CoDel escalates faster
// afterwards), and recomputes the cached 1/sqrt(count) for the new count.
// Linux keeps the stale value; one Newton step from it at a count more than
// three times larger leaves the basin of convergence and can collapse the
// spacing to a few microseconds (see the package doc).
func (c *Controller) AddCount(k uint32) {
	if k == 0 {
		return
	}
	n := uint64(c.count) + uint64(k)
	c.count = 0
	c.setCount(uint32(min(n, maxCount)))
}
