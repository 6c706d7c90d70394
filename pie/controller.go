package pie

import (
	"math"
	"math/bits"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Fixed-point probability. A probability x in [0, 1] is held as the int64
// round-down of x·2^48, so 1.0 is exactly probOne. 48 fraction bits resolve
// 3.6e-15, far below the smallest step the RFC's auto-tuning produces
// (alpha·1 ns/2048 ≈ 6e-14), and leave 15 bits of headroom for the
// derandomization accumulator (≤ 9.5·2^48 < 2^52). A random draw is the top
// 48 bits of one 64-bit PCG output, so "u < p" is one shift and one compare.
const (
	probShift       = 48
	probOne   int64 = 1 << probShift
)

// probCeil returns the smallest fixed-point v with v ≥ x·2^48, so that for a
// fixed-point p, "p < probCeil(x)" is exactly "p/2^48 < x". The scaling by
// 2^48 is exact in float64.
func probCeil(x float64) int64 { return int64(math.Ceil(x * (1 << probShift))) }

// Thresholds of RFC 8033, in fixed point.
var (
	// autoTune holds the upper bounds of the auto-tuning bands of RFC 8033
	// §4.2: while p < 1e-6 the update is divided by 2048 (>>11), below
	// 1e-5 by 512 (>>9), 1e-4 by 128 (>>7), 1e-3 by 32 (>>5), 1e-2 by 8
	// (>>3), 0.1 by 2 (>>1), and from 0.1 on by 1.
	autoTune = [...]int64{probCeil(1e-6), probCeil(1e-5), probCeil(1e-4), probCeil(1e-3), probCeil(1e-2), probCeil(0.1)}
	// autoTuneShift[i] is the shift for p below autoTune[i]; the last
	// entry is for p ≥ 0.1.
	autoTuneShift = [...]uint{11, 9, 7, 5, 3, 1, 0}

	// tenPct: the cap of RFC 8033 §5.5 applies from p ≥ 0.1.
	tenPct = probCeil(0.1)
	// capStep is the 2% cap on one update's increase (RFC 8033 §5.5),
	// rounded down: raw > capStep is then exactly raw/2^48 > 0.02 because
	// 0.02·2^48 = 5629499534213.12 is not an integer.
	capStep = int64(math.Floor(0.02 * (1 << probShift)))
	// safeProb: safeguard (a) of RFC 8033 §4.1 needs p < 0.2.
	safeProb = probCeil(0.2)
	// accuLow and accuHigh are the derandomization bounds of RFC 8033
	// §5.4: no drop while accu < 0.85, a certain drop once accu ≥ 8.5
	// (8.5·2^48 is exact).
	accuLow  = probCeil(0.85)
	accuHigh = int64(17) << (probShift - 1)
)

// The update multiplies a delay error in ns by a gain in 2^-20 Hz and wants
// a probability in 2^-48 units: raw = N·2^-20·1e-9·2^48 = N·2^28/10^9 =
// N·2^19/5^9, since 10^9 = 2^9·5^9. Auto-tuning divides further by 2^k, so
// raw = N·2^(19-k)/5^9: one integer division, exact up to the final
// truncation. |N| ≤ 2·2^24·2^36 = 2^61 (gains ≤ 16 Hz, delays ≤ 2^36 ns).
const fiveP9 = 1953125

// maxCatchUp bounds the updates one call replays one by one. An idle queue
// needs at most 1650: each idle update multiplies p by at most 49/50 and
// 2^48·0.98^1648 < 1. A busy queue whose link stalled reaches p = 1 within a
// few hundred at any sane setting. Both then end in a closed form.
const maxCatchUp = 4096

// avgShift is the number of fraction bits of avg_dq_time_ in ns. With the
// cycle time saturated at 2^36 ns, dt·2^24 ≤ 2^60 and dt + 3·avg ≤ 2^62, so
// the weight-1/4 average never overflows; 2^-24 ns keeps the rounding of the
// average far below the 1 ns resolution of the delay it feeds.
const avgShift = 24

// minTime marks a controller that has not seen a packet operation yet.
const minTime = aqm.Time(math.MinInt64)

// Controller is the PIE state of one queue, as a plain value a flow-queueing
// scheduler embeds per flow (Linux fq_pie and ns-3's FqPie keep one PIE per
// flow): the drop probability, the delay history, the burst allowance,
// the derandomization accumulator, the departure-rate estimator and its
// own random source. It runs exactly the algorithm of [Queue] on the
// backlog and head packet its owner reports. Initialize it with
// [Controller.Init]; it is not safe for concurrent use.
type Controller struct {
	p     int64 // drop_prob_, fixed point, in [0, probOne]
	old   int64 // qdelay_old_, ns: the delay estimate of the last update
	burst int64 // burst_allowance_, ns, in [0, maxBurst]
	accu  int64 // accu_prob_, fixed point, in [0, accuHigh+probOne)

	next    aqm.Time // instant of the next update; MinInt64 before the first call
	updates uint64   // number of updates applied

	// Departure-rate estimator (RFC 8033 §5.2).
	measuring bool
	dqStart   aqm.Time
	dqCount   int64    // bytes dequeued in the current cycle
	avgDq     uint64   // avg_dq_time_: ns to dequeue DQ_THRESHOLD bytes, ×2^avgShift (0: no estimate)
	dqEnd     aqm.Time // the reading that ended the last cycle
	dqPrev    uint64   // avgDq before the first cycle that ended at dqEnd

	rng rng.Source
}

func (c *Controller) init(pp *params, seed uint64) {
	*c = Controller{burst: pp.maxBurst, next: minTime, dqEnd: minTime, rng: rng.New(seed)}
}

// satAdd returns t+d saturated at the largest Time.
func satAdd(t aqm.Time, d int64) aqm.Time {
	if t > math.MaxInt64-aqm.Time(d) {
		return math.MaxInt64
	}
	return t + aqm.Time(d)
}

// age returns to−from in ns, 0 if to is not after from (backward time) and
// saturated at maxDelay. The difference is taken in uint64, so instants at
// opposite ends of the int64 range do not overflow (aqm.Time.Since would).
func age(from, to aqm.Time) int64 {
	if to <= from {
		return 0
	}
	return int64(min(uint64(to)-uint64(from), uint64(maxDelay)))
}

// delayAt returns current_qdelay at instant t for a queue whose contents do
// not change between the last packet operation and t: the age of the head
// packet (timestamps) or backlog·avg_dq_time/DQ_THRESHOLD (rate estimator),
// in ns, saturated at maxDelay.
func (c *Controller) delayAt(pp *params, t aqm.Time, empty bool, head aqm.Time, backlog int) int64 {
	if empty {
		return 0
	}
	if !pp.rate {
		return age(head, t)
	}
	// backlog·avgDq/(thresh·2^avgShift), with a 128-bit product;
	// thresh ≤ 2^30 so the divisor fits in 54 bits.
	hi, lo := bits.Mul64(uint64(backlog), c.avgDq)
	d := uint64(pp.dqThresh) << avgShift
	if hi >= d {
		return int64(maxDelay)
	}
	q, _ := bits.Div64(hi, lo, d)
	return int64(min(q, uint64(maxDelay)))
}

// raw returns the probability change of one update with delay estimate cur:
// the PI term of RFC 8033 §4.2, auto-tuned by the current p, capped at 2%
// from p ≥ 0.1 (§5.5), plus 2% beyond 250 ms with HighDelayBoost.
func (c *Controller) raw(pp *params, cur int64) int64 {
	n := pp.alphaQ*(cur-pp.target) + pp.betaQ*(cur-c.old)
	i := 0
	for i < len(autoTune) && c.p >= autoTune[i] {
		i++
	}
	s := 19 - autoTuneShift[i]
	q, r := n/fiveP9, n%fiveP9
	raw := q<<s + (r<<s)/fiveP9
	if c.p >= tenPct && raw > capStep {
		raw = capStep
	}
	if pp.boost && cur > pp.boostOver {
		raw += capStep
	}
	return raw
}

// update runs one periodic update (calculate_drop_prob) with estimate cur.
func (c *Controller) update(pp *params, cur int64) {
	p := c.p + c.raw(pp, cur)
	if p < 0 {
		p = 0
	}
	if cur == 0 && c.old == 0 {
		// Idle decay of RFC 8033 §4.2: p ·= 0.98, rounded down.
		p = p * 49 / 50
	}
	if p > probOne {
		p = probOne
	}
	c.p = p
	// The allowance decreases by T_UPDATE, bottomed at 0 (no unsigned
	// wrap as in DPDK's rte_pie), and is restored once congestion is over:
	// p == 0 and both delay samples below half the target (§4.4).
	if c.burst > pp.tupdate {
		c.burst -= pp.tupdate
	} else {
		c.burst = 0
	}
	if p == 0 && 2*cur < pp.target && 2*c.old < pp.target {
		c.burst = pp.maxBurst
	}
	c.old = cur
	c.updates++
}

// catchUp applies every update due at or before now (the caller checked
// that one is, or that the next update lies more than one TUpdate ahead). The queue's contents are those since the last packet
// operation, so the delay each missed update would have seen is known
// exactly: the updates are those a timer would have run.
func (c *Controller) catchUp(pp *params, now aqm.Time, empty bool, head aqm.Time, backlog int) {
	if pp.rate {
		c.forgetFuture(pp, now)
	}
	if c.next == minTime || now < c.next {
		// The first call, or the next update lies more than one TUpdate
		// ahead (the caller checked): it was scheduled at a reading far in
		// the future. Either way the schedule starts from now.
		c.next = satAdd(now, pp.tupdate)
		return
	}
	constant := empty || pp.rate // the delay estimate does not move between events
	for i := 0; ; i++ {
		t := c.next
		cur := c.delayAt(pp, t, empty, head, backlog)
		c.update(pp, cur)
		c.next = satAdd(t, pp.tupdate)
		if now < c.next || c.next == t {
			return
		}
		// m more updates are due, at c.next + j·T for j < m.
		m := 1 + (uint64(now)-uint64(c.next))/uint64(pp.tupdate)
		last := c.next + aqm.Time((m-1)*uint64(pp.tupdate)) // ≤ now, no overflow
		switch {
		case c.p == probOne && cur >= pp.target:
			// Saturated: the delay only grows (or stays), so every
			// remaining update has raw ≥ 0 and p stays 1; burst runs
			// out and cannot be restored while p > 0.
			c.skip(pp, m, last, c.delayAt(pp, last, empty, head, backlog), false)
			return
		case c.p == 0 && constant && cur <= pp.target:
			// Quiet: raw ≤ 0 at every remaining update, p stays 0.
			c.skip(pp, m, last, cur, 2*cur < pp.target)
			return
		case constant && cur != 0 && c.raw(pp, cur) == 0:
			// At equilibrium: p no longer moves.
			c.skip(pp, m, last, cur, false)
			return
		case constant && cur != 0 && c.old == cur:
			// A steady drift: every update adds the same step r to p
			// while p stays in its auto-tuning band (r depends on p only
			// through the band; qdelay_old is cur). Apply the updates that
			// stay in the band at once, exactly as one by one; the one
			// that leaves it runs on its own in the next iteration.
			r := c.raw(pp, cur)
			if c.p == probOne && r > 0 {
				c.skip(pp, m, last, cur, false) // held at 1
				return
			}
			if n := min(c.inBand(r), m); n > 0 {
				c.p += int64(n) * r // exact: no clamp applies inside the band
				c.skip(pp, n, c.next+aqm.Time((n-1)*uint64(pp.tupdate)), cur, false)
				if n == m {
					return
				}
			}
		case i+1 >= maxCatchUp:
			// Not settled after maxCatchUp updates without a packet
			// operation (only a slow drift of the rate estimator or a
			// very small gain): apply the last due update only.
			c.next = last
			c.updates += m - 1
		}
	}
}

// inBand returns how many updates of step r (not zero) keep p inside its
// auto-tuning band, and above zero: the largest n with p + n·r in the band
// (below the next threshold, or at most probOne in the top band, for
// r > 0; at or above the band's threshold, and at least 1, for r < 0).
// n·|r| stays below 2^50.
func (c *Controller) inBand(r int64) uint64 {
	j := 0
	for j < len(autoTune) && c.p >= autoTune[j] {
		j++
	}
	if r > 0 {
		hi := probOne + 1
		if j < len(autoTune) {
			hi = autoTune[j]
		}
		return uint64(max(hi-1-c.p, 0) / r)
	}
	lo := int64(1)
	if j > 0 {
		lo = autoTune[j-1]
	}
	return uint64(max(c.p-lo, 0) / -r)
}

// skip applies m updates in closed form, their effect on p nil or already
// applied: the burst allowance either is restored each time (reset) or
// runs down by m·T; the last delay sample becomes qdelay_old.
func (c *Controller) skip(pp *params, m uint64, last aqm.Time, cur int64, reset bool) {
	if reset {
		c.burst = pp.maxBurst
	} else if m >= uint64(c.burst)/uint64(pp.tupdate)+1 {
		c.burst = 0
	} else {
		c.burst -= int64(m) * pp.tupdate
	}
	c.old = cur
	c.updates += m
	c.next = satAdd(last, pp.tupdate)
}

// dropEarly is drop_early of RFC 8033 Appendix B: the safeguards, the
// optional derandomization and the random draw, for a packet of size bytes
// arriving on a backlog of backlog bytes. It does not reset accu; the caller
// does, on every positive decision.
func (c *Controller) dropEarly(pp *params, size uint32, backlog int) bool {
	if (2*c.old < pp.target && c.p < safeProb) || backlog <= pp.safeBytes {
		return false
	}
	pe := c.p
	if pp.byteMode {
		// p·min(size, mean)/mean: p ≤ 2^48 and size ≤ 2^16-1, so the
		// product fits in 64 bits.
		s := min(int64(size), pp.meanBytes)
		pe = int64(uint64(pe) * uint64(s) / uint64(pp.meanBytes))
	}
	if pp.derand {
		if c.p == 0 {
			c.accu = 0
		}
		c.accu += pe
		if c.accu < accuLow {
			return false
		}
		if c.accu >= accuHigh {
			return true
		}
	}
	return int64(c.rng.Uint64()>>(64-probShift)) < pe
}

// onDequeue feeds the departure-rate estimator of RFC 8033 §5.2 with a
// packet of size bytes leaving a backlog of backlog bytes (this packet
// included) at now.
func (c *Controller) onDequeue(pp *params, now aqm.Time, size uint32, backlog int) {
	c.forgetFuture(pp, now)
	if c.measuring && now < c.dqStart {
		// The cycle started at a reading in the future: its duration is
		// unknown. Start it again from now.
		c.measuring = false
	}
	if !c.measuring {
		if int64(backlog) < pp.dqThresh {
			return
		}
		c.measuring, c.dqStart, c.dqCount = true, now, 0
	}
	c.dqCount += int64(size)
	if c.dqCount < pp.dqThresh {
		return
	}
	// A cycle took dt to dequeue DQ_THRESHOLD bytes; average it with
	// weight 1/4 (RFC 8033's DQ_THRESHOLD/2^16 at the default threshold).
	// A cycle of maxDelay or more (a stalled link, or readings far apart
	// because one was wrong) is no measurement of the rate: it gives no
	// sample, which would take dozens of cycles to average away.
	c.measuring = false
	a := age(c.dqStart, now)
	if a >= int64(maxDelay) {
		return
	}
	dt := uint64(a) << avgShift
	if now != c.dqEnd {
		c.dqEnd, c.dqPrev = now, c.avgDq
	}
	if c.avgDq == 0 {
		c.avgDq = dt
	} else {
		c.avgDq = (dt + 3*c.avgDq) >> 2
	}
}

// forgetFuture discards the departure-rate samples of the cycles that
// ended at a reading more than TUpdate ahead of now: a later reading that
// far behind shows that one was in the future, and a cycle timed against
// it (up to maxDelay long, or zero) says nothing about the link. The
// average returns to its value before them.
func (c *Controller) forgetFuture(pp *params, now aqm.Time) {
	if c.dqEnd > now && uint64(c.dqEnd)-uint64(now) > uint64(pp.tupdate) {
		c.avgDq, c.dqEnd = c.dqPrev, now
	}
}

// Params are the constants a [Controller] runs on, derived from a
// [Control] and shared by every Controller of a queue.
type Params struct {
	pp  params
	ctl Control
}

// Params returns the [Params] for c with defaults applied. Call
// [Control.Validate] (or the embedding configuration's Validate) first: the
// values are used as they are.
func (c Control) Params() Params {
	d := c.withDefaults()
	return Params{pp: d.derive(), ctl: d}
}

// Control returns the settings p was built from, defaults filled in: the
// settings its controllers run on, as a queue that embeds [Control]
// reports them in its Config.
func (p *Params) Control() Control { return p.ctl }

// Init resets c to a fresh controller whose random draws start from seed.
func (c *Controller) Init(p *Params, seed uint64) { c.init(&p.pp, seed) }

// Update runs the periodic probability updates due at now for a queue
// whose contents have not changed since c's last call: empty, or with its
// oldest packet enqueued at head and backlog bytes queued. Missed periods
// are replayed as a timer would have run them; a schedule left in the
// future by a reading far ahead of now restarts from now. Call it before
// [Controller.Decide] and [Controller.Dequeued]. The common case, no update
// due, is a single compare.
func (c *Controller) Update(p *Params, now aqm.Time, empty bool, head aqm.Time, backlog int) {
	if c.Due(p, now) {
		c.catchUp(&p.pp, now, empty, head, backlog)
	}
}

// Due reports whether [Controller.Update] has work at now: an update is due, or
// the schedule lies further ahead than one TUpdate (a reading far in the
// future left it there). A caller can test it before gathering Update's
// arguments.
func (c *Controller) Due(p *Params, now aqm.Time) bool {
	return uint64(c.next-now-1) >= uint64(p.pp.tupdate)
}

// Reconfigured carries c over from the parameters old to cur, as
// [Queue.Reconfigure] does: the burst allowance is cut to cur's
// MaxBurst, and the departure-rate estimate restarts if the estimator or
// its threshold changed.
func (c *Controller) Reconfigured(old, cur *Params) {
	if cur.pp.rate != old.pp.rate || cur.pp.dqThresh != old.pp.dqThresh {
		c.measuring, c.dqCount, c.avgDq, c.dqEnd = false, 0, 0, minTime
	}
	c.burst = min(c.burst, cur.pp.maxBurst)
}

// Decide is PIE's decision for a packet of size bytes arriving at now, its
// queue holding backlog bytes before it, with ECN codepoint ecn:
// [aqm.Enqueued] (no signal), [aqm.Marked] (queue it with CE set),
// [aqm.DroppedEarly] or, for an ECN-capable packet dropped because the
// probability is at or above ECNThreshold, [aqm.DroppedOverload]. No
// signal is given while the burst allowance lasts. The decision rests on
// the probability of the last [Controller.Update], so now is not read; it
// is taken so that the three per-flow controllers decide alike.
func (c *Controller) Decide(p *Params, now aqm.Time, size uint32, backlog int, ecn aqm.ECN) aqm.Verdict {
	pp := &p.pp
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

// Overflow records that one of c's packets hit a limit at now: the
// derandomization restarts, as on a refusal by [Queue]. PIE's rule needs
// neither p nor now; they are taken so that every per-flow controller is
// told the same way.
func (c *Controller) Overflow(p *Params, now aqm.Time) { c.accu = 0 }

// Empty records that c's queue was found empty at now. PIE learns an empty
// queue from [Controller.Update]'s empty argument, so Empty changes
// nothing; it is here so that every per-flow controller is told the same
// way.
func (c *Controller) Empty(p *Params, now aqm.Time) {}

// Dequeued feeds the departure-rate estimator (used only with
// RateEstimator) with a packet of size bytes leaving at now a backlog of
// backlog bytes, this packet included.
func (c *Controller) Dequeued(p *Params, now aqm.Time, size uint32, backlog int) {
	if p.pp.rate {
		c.onDequeue(&p.pp, now, size, backlog)
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

// State returns a snapshot of c.
func (c *Controller) State() State {
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
