package pie

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Params are the constants a [Controller] runs on, derived from a
// [Control] and shared by every Controller of a queue.
type Params struct{ pp params }

// Params returns the [Params] for c with defaults applied. Call
// [Control.Validate] (or the embedding configuration's Validate) first: the
// values are used as they are.
func (c Control) Params() Params { return Params{pp: c.WithDefaults().derive()} }

// Controller is the PIE state of one queue, as a plain value a flow-queueing
// scheduler embeds per flow (Linux fq_pie and ns-3's FqPie keep one PIE per
// flow): the drop probability, the delay history, the burst allowance,
// the derandomization accumulator, the departure-rate estimator and its
// own random source. It runs exactly the algorithm of [Queue] on the
// backlog and head packet its owner reports. Initialize it with
// [Controller.Init]; it is not safe for concurrent use.
type Controller struct{ c controller }

// Init resets f to a fresh controller whose random draws start from seed.
func (f *Controller) Init(p *Params, seed uint64) { f.c.init(&p.pp, seed) }

// Update runs the periodic probability updates due at now for a queue
// whose contents have not changed since f's last call: empty, or with its
// oldest packet enqueued at head and backlog bytes queued. Missed periods
// are replayed as a timer would have run them; a schedule left in the
// future by a reading far ahead of now restarts from now. Call it before
// [Controller.Decide] and [Controller.Dequeued]. The common case, no update
// due, is a single compare.
func (f *Controller) Update(p *Params, now aqm.Time, empty bool, head aqm.Time, backlog int) {
	if f.Due(p, now) {
		f.c.catchUp(&p.pp, now, empty, head, backlog)
	}
}

// Due reports whether [Controller.Update] has work at now: an update is due, or
// the schedule lies further ahead than one TUpdate (a reading far in the
// future left it there). A caller can test it before gathering Update's
// arguments.
func (f *Controller) Due(p *Params, now aqm.Time) bool {
	return uint64(f.c.next-now-1) >= uint64(p.pp.tupdate)
}

// Reconfigured carries f over from the parameters old to new, as
// [Queue.Reconfigure] does: the burst allowance is cut to the new
// MaxBurst, and the departure-rate estimate restarts if the estimator or
// its threshold changed.
func (f *Controller) Reconfigured(old, new *Params) {
	if new.pp.rate != old.pp.rate || new.pp.dqThresh != old.pp.dqThresh {
		f.c.measuring, f.c.dqCount, f.c.avgDq, f.c.dqEnd = false, 0, 0, minTime
	}
	f.c.burst = min(f.c.burst, new.pp.maxBurst)
}

// Decide is PIE's decision for a packet of size bytes and ECN codepoint
// ecn arriving at now, its queue holding backlog bytes before it:
// [aqm.Enqueued] (no signal), [aqm.Marked] (queue it with CE set),
// [aqm.DroppedEarly] or, for an ECN-capable packet dropped because the
// probability is at or above ECNThreshold, [aqm.DroppedOverload]. No
// signal is given while the burst allowance lasts. The decision rests on
// the probability of the last [Controller.Update], so now is not read; it
// is taken so that the three per-flow controllers decide alike.
func (f *Controller) Decide(p *Params, now aqm.Time, size uint32, ecn aqm.ECN, backlog int) aqm.Verdict {
	c, pp := &f.c, &p.pp
	if c.burst != 0 || !c.dropEarly(pp, size, backlog) {
		return aqm.Enqueued
	}
	c.accu = 0 // every positive decision restarts the derandomization
	capable := ecn&aqm.ECNMask != aqm.NotECT
	switch {
	case pp.ecn && capable && c.p < pp.ecnTh:
		return aqm.Marked
	case pp.ecn && capable:
		return aqm.DroppedOverload
	}
	return aqm.DroppedEarly
}

// Overflow records that one of f's packets hit a limit at now: the
// derandomization restarts, as on a refusal by [Queue]. PIE's rule needs
// neither p nor now; they are taken so that every per-flow controller is
// told the same way.
func (f *Controller) Overflow(p *Params, now aqm.Time) { f.c.accu = 0 }

// Dequeued feeds the departure-rate estimator (used only with
// RateEstimator) with a packet of size bytes leaving at now a backlog of
// backlog bytes, this packet included.
func (f *Controller) Dequeued(p *Params, now aqm.Time, size uint32, backlog int) {
	if p.pp.rate {
		f.c.onDequeue(&p.pp, now, size, backlog)
	}
}

// State is a snapshot of a [Controller].
type State struct {
	// Prob is the drop probability in [0, 1].
	Prob float64
	// QueueDelay is the delay estimate of the last update.
	QueueDelay time.Duration
	// BurstAllowance is the burst allowance left.
	BurstAllowance time.Duration
	// Updates counts the periodic updates applied.
	Updates uint64
	// NextUpdate is the instant of the next update; zero before the
	// first call.
	NextUpdate aqm.Time
}

// State returns a snapshot of f.
func (f *Controller) State() State {
	c := &f.c
	s := State{
		Prob:           float64(c.p) / float64(probOne),
		QueueDelay:     time.Duration(c.old),
		BurstAllowance: time.Duration(c.burst),
		Updates:        c.updates,
	}
	if c.next != minTime {
		s.NextUpdate = c.next
	}
	return s
}
