package cobalt

import (
	"math"
	"math/bits"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Action is what a [Controller] decides for a packet at the head of its
// queue.
type Action uint8

const (
	// Deliver sends the packet unchanged.
	Deliver Action = iota
	// Mark sends the packet with CE set (the CoDel half's signal to an
	// ECN-capable packet).
	Mark
	// DropCoDel drops the packet: the CoDel half's signal to a packet that
	// is not ECN-capable (or to any packet with ECN disabled).
	DropCoDel
	// DropBlue drops the packet on BLUE's probability, ECN-capable or not,
	// and whether or not the CoDel half has just marked it
	// ([Controller.Marked] tells).
	DropBlue
)

// String names the action.
func (a Action) String() string {
	switch a {
	case Deliver:
		return "deliver"
	case Mark:
		return "mark"
	case DropCoDel:
		return "drop-codel"
	case DropBlue:
		return "drop-blue"
	}
	return "action(?)"
}

// Controller is the COBALT state of one queue or one flow: the CoDel half
// (count, the next signal time, whether it is dropping) and the BLUE half
// (its drop probability and when it last changed), and the random stream
// BLUE draws from. The zero value is a fresh controller; [Controller.Init]
// gives it a stream of its own, so that the flows of one queue do not draw
// in lockstep. It is a plain value of 32 bytes, meant to be embedded per
// flow; it is not safe for concurrent use.
type Controller struct {
	next      aqm.Time  // next signal; while count is 0, an activity timeout
	blueStamp aqm.Time  // when p last changed
	count     uint32    // signals in the current episode (decays after it)
	p         uint32    // BLUE's drop probability, 2^32 = 1
	src       rng.Small // BLUE's draws
	dropping  bool
	marked    bool // the last Decide's CoDel half marked its packet
}

// Init resets c to a fresh controller whose random draws start from seed.
// COBALT's fresh state does not depend on p; it is taken so that every
// per-flow controller is set up the same way.
func (c *Controller) Init(p *Params, seed uint64) {
	*c = Controller{}
	c.src.Seed(seed)
}

// State is a snapshot of a [Controller].
type State struct {
	// Count is the number of signals in the current episode, decaying by
	// one per spacing once the sojourn time is back below target.
	Count uint32 `metric:"count,gauge"`
	// Dropping reports whether the sojourn time was above target at the
	// last evaluation.
	Dropping bool `metric:"dropping,gauge"`
	// Next is the next signal time (an activity timeout while Count is 0).
	Next aqm.Time `metric:"next_signal_time_seconds,gauge"`
	// BlueProbability is BLUE's drop probability in [0, 1].
	BlueProbability float64 `metric:"blue_probability,gauge"`
}

// State returns a snapshot of c.
func (c *Controller) State() State {
	return State{Count: c.count, Dropping: c.dropping, Next: c.next, BlueProbability: float64(c.p) / (1 << 32)}
}

// Marked reports whether the CoDel half marked the packet of the last
// [Controller.Decide] call: true when it returned [Mark], and also when it
// returned [DropBlue] for a packet the CoDel half had marked first (Linux
// CAKE's ecn_marked). A caller that delivers a packet despite DropBlue, as
// CAKE delivers the last packet of a flow queue, sets CE on it when Marked
// is true.
func (c *Controller) Marked() bool { return c.marked }

// spacing returns floor(interval/sqrt(n)) exactly (interval for n <= 1):
// the control law's gap after n signals. The float64 estimate is corrected
// by the integer test s²·n <= interval², so the result is the exact floor.
func spacing(p *Params, n uint32) int64 {
	if n <= 1 {
		return p.interval
	}
	s := int64(float64(p.interval) / math.Sqrt(float64(n)))
	for s > 0 && !sqTimesNLE(uint64(s), n, p.interval2) {
		s--
	}
	for sqTimesNLE(uint64(s+1), n, p.interval2) {
		s++
	}
	return s
}

// sqTimesNLE reports whether s²·n <= lim (a 128-bit hi, lo pair).
func sqTimesNLE(s uint64, n uint32, lim [2]uint64) bool {
	h, l := mul128(s, s) // s < 2^42, so s² < 2^84 and s²·n < 2^116
	h2, l2 := mul128(l, uint64(n))
	h2 += h * uint64(n)
	return h2 < lim[0] || h2 == lim[0] && l2 <= lim[1]
}

func mul128(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }

// control returns t plus the spacing for the current count, saturating.
func (c *Controller) control(p *Params, t aqm.Time) aqm.Time {
	return addSat(t, spacing(p, c.count))
}

func addSat(t aqm.Time, d int64) aqm.Time {
	if s := t + aqm.Time(d); s >= t {
		return s
	}
	return math.MaxInt64
}

// reanchor applies the time policy: an instant stored further ahead of now
// than it could have been scheduled (after a reading far in the future) is
// pulled back, so one bad reading cannot park the controller.
func (c *Controller) reanchor(p *Params, now aqm.Time) {
	if c.next > addSat(now, p.interval) {
		c.next = c.control(p, now)
	}
	if c.blueStamp > now {
		c.blueStamp = now
	}
}

// Decide decides the fate of a packet leaving the head of the queue at now
// after sojourn, with ECN codepoint ecn. It runs the CoDel half (with the
// decay of count that replaces RFC 8289's re-entry rule) and then, unless
// the CoDel half dropped the packet, BLUE's random drop, drawing from c's
// stream only when BLUE's probability is above zero: a packet the CoDel
// half has just marked CE can still be dropped by BLUE, so a sender that
// ignores marks is policed as one without ECN. A sojourn above the configured
// BlueThreshold first raises BLUE's probability.
//
// While not dropping, each spacing that has passed since the next signal
// time takes one off count, at most 64 per call. A longer backlog of decay
// is kept (the next signal time stays in the past) and continues on the
// following calls, to the count an unbounded decay reaches; a backlog that
// certainly decays count to zero (a gap of at least
// Interval·min(count, 2·sqrt(count)), which covers every remaining
// spacing) resets count at once.
func (c *Controller) Decide(p *Params, now aqm.Time, sojourn time.Duration, ecn aqm.ECN) Action {
	c.reanchor(p, now)
	soj := int64(sojourn)
	if soj > p.blueCeil {
		c.blueUp(p, now)
	}
	above := soj > p.target && soj > p.mtuGuard
	n := c.count
	late := subSat(now, c.next)
	due := n > 0 && late >= 0
	act := Deliver
	if above {
		if !c.dropping {
			c.dropping = true
			c.next = c.control(p, now)
		}
		if n == 0 {
			n = 1
		}
	} else {
		c.dropping = false
	}
	c.count = n
	if due && c.dropping {
		if ecn&aqm.ECNMask != aqm.NotECT && p.ecn {
			act = Mark
		} else {
			act = DropCoDel
		}
		if c.count < math.MaxUint32 {
			c.count++
		}
		c.next = c.control(p, c.next)
		late = subSat(now, c.next)
	} else if due {
		if decaysOut(p, c.count, late) {
			c.count = 0
		}
		for steps := 0; c.count > 0 && late >= 0 && steps < maxDecaySteps; steps++ {
			c.count--
			c.next = c.control(p, c.next)
			late = subSat(now, c.next)
		}
		if c.count > 0 && late >= 0 {
			// Decay is still owed: keep the next time in the past, so that
			// the following calls carry on from here.
			late = 0
		}
	}
	c.marked = act == Mark
	if act != DropCoDel && c.p != 0 && c.src.Uint32() < c.p {
		act = DropBlue
	}
	if c.count == 0 {
		c.next = addSat(now, p.interval)
	} else if late > 0 && act != DropCoDel && act != DropBlue {
		c.next = now
	}
	return act
}

// decaysOut reports whether a decay backlog of late nanoseconds certainly
// takes count n all the way to zero, that is whether
// late >= Interval·min(n, 2·sqrt(n)): the n steps add spacing(n-1), ...,
// spacing(0) to the next time, and since spacing(k) <= Interval/sqrt(k)
// and the first two are Interval, their sum is at most Interval·n and at
// most 2·Interval·sqrt(n-1). Resetting count then gives exactly what the
// unbounded loop gives (count 0, which re-arms the activity timeout).
func decaysOut(p *Params, n uint32, late int64) bool {
	if late/int64(n) >= p.interval {
		return true
	}
	// late² >= 4·Interval²·n, in 128 bits: Interval² < 2^84, so the right
	// side is below 2^118.
	lh, ll := bits.Mul64(uint64(late), uint64(late))
	rh, rl := bits.Mul64(p.interval2[1], 4*uint64(n))
	rh += p.interval2[0] * 4 * uint64(n)
	return lh > rh || lh == rh && ll >= rl
}

// subSat returns a-b saturated to int64.
func subSat(a, b aqm.Time) int64 {
	d := int64(a) - int64(b)
	if (a >= b) != (d >= 0) { // overflow
		if a >= b {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// blueUp raises BLUE's probability by one step, at most once per target.
func (c *Controller) blueUp(p *Params, now aqm.Time) {
	if subSat(now, c.blueStamp) > p.target {
		c.p = uint32(min(uint64(c.p)+uint64(p.pInc), 1<<32-1))
		c.blueStamp = now
	}
}

// Overflow records that one of the queue's packets hit a limit at now:
// BLUE's probability rises (at most once per target) and the CoDel half is
// forced to signal at once.
func (c *Controller) Overflow(p *Params, now aqm.Time) {
	c.reanchor(p, now)
	c.blueUp(p, now)
	c.dropping = true
	c.next = now
	if c.count == 0 {
		c.count = 1
	}
}

// Empty records that the queue was found empty at now: BLUE's
// probability falls (at most once per target), the CoDel half stops
// dropping, and count decays by one if its next time has passed.
func (c *Controller) Empty(p *Params, now aqm.Time) {
	c.reanchor(p, now)
	if c.p != 0 && subSat(now, c.blueStamp) > p.target {
		c.p -= min(c.p, p.pDec)
		c.blueStamp = now
	}
	c.dropping = false
	if c.count > 0 && now >= c.next {
		c.count--
		c.next = c.control(p, c.next)
	}
}
