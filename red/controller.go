package red

import (
	"math"
	"math/bits"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Fixed-point scales and guards.
const (
	// one is probability 1 in Q0.32: a probability p is carried as the
	// integer p·2^32, so max_p = 1 is representable (1<<32 needs 33 bits,
	// which is why probabilities are uint64, not uint32 as in Linux, whose
	// Q0.32 max_P of 1.0 wraps to 0).
	one = 1 << 32
	// maxCount caps count so that count·p (p ≤ 2^32 + 1 after rounding,
	// see prob) stays below 2^63 and cannot wrap. A count this large needs
	// 2^31 arrivals at a probability that rounds to zero; the cap changes no
	// decision (the next non-zero probability signals at once either way).
	maxCount = 1 << 31
	// tinyAvg: after an idle decay an average below this is set to zero,
	// so that repeated decays never produce subnormal floats (which cost
	// ~100 cycles per operation on x86). Thresholds are at least 1 packet or
	// 1 byte, so no decision can depend on the difference.
	tinyAvg = 1e-12
	// maxAdaptSteps bounds one catch-up of Adaptive RED. Each pass either
	// changes max_p or ends or skips the catch-up (see adapt); max_p can
	// grow from 0.01 to 0.5 in at most 53 additive steps (7 steps of ×1.25
	// up to 0.04, then 46 of +0.01) and shrink from 0.5 to 0.01 in at most
	// 38 steps of ×0.9, so 53 + 38 + a few skips is far below this bound,
	// which is a safety net only.
	maxAdaptSteps = 512
	// unstarted marks nextTick before the first arrival.
	unstarted = aqm.Time(math.MinInt64)
)

// controller is RED's state machine: the average queue, the count and R of
// Figure 17, max_p and Adaptive RED's clock, and the signal counters. It
// holds no packets. Its owner reports each arrival (endIdle for one to an
// empty queue, update for the rest, then below and signal) and each instant
// with Adaptive RED work (adaptDue, adapt), and turns the verdict into
// action. Every decision RED makes is in this file.
type controller struct {
	// Per-packet state, kept together.
	avg      float64 // average queue, packets or bytes
	count    int64   // arrivals since the last early signal in the band; -1 outside it
	r        uint64  // R·2^32 with R uniform in (0, 1] (times MeanPacketBytes in byte mode)
	slope    float64 // p·2^32 per unit of average above min_th: max_p·2^32/(max_th−min_th)
	gBase    float64 // gentle region: p·2^32 = gBase + (avg−max_th)·gSlope
	gSlope   float64
	lastProb uint64 // p_b·2^32 of the last arrival in the band or above it
	p        params
	rng      rng.Source

	maxP      float64  // current max_p
	idleStart aqm.Time // when the queue last became empty (valid while it is)
	nextTick  aqm.Time // Adaptive RED: the next adaptation instant

	cnt counters
}

// counters are the signals the controller decided, by kind, and Adaptive
// RED's changes to max_p.
type counters struct {
	probDrops, probMarks, forcedDrops, forcedMarks, adaptations uint64
}

// reset puts c in its initial state for the parameters p with the random
// stream of seed: no average, no count, max_p from p, Adaptive RED's clock
// not started.
func (c *controller) reset(p params, seed uint64) {
	*c = controller{
		p:         p,
		count:     -1,
		maxP:      p.maxP,
		idleStart: math.MinInt64,
		nextTick:  unstarted,
		rng:       rng.New(seed),
	}
	c.setSlopes()
}

// setSlopes recomputes the probability constants from max_p. They are
// float64 multipliers that yield the Q0.32 probability directly, so the hot
// path does one multiply and one conversion per packet.
func (c *controller) setSlopes() {
	c.slope = c.maxP * one / (c.p.maxTh - c.p.minTh)
	c.gBase = c.maxP * one
	c.gSlope = (1 - c.maxP) * one / c.p.maxTh
}

// reconfigure moves c to the parameters p with a queue of pkts packets and
// bytes bytes (see Queue.Reconfigure): the average carries over, reset to
// the current queue if ByteMode changes its unit; the count carries over
// unless R was scaled for another mode or mean size; an adapted max_p
// carries over only from Adaptive to Adaptive RED; Adaptive RED's clock
// starts afresh when it is switched on. With reseed the random stream
// restarts from seed.
func (c *controller) reconfigure(p params, reseed bool, seed uint64, pkts int, bytes uint64) {
	old := c.p
	if p.byteMode != old.byteMode {
		c.avg = float64(pkts)
		if p.byteMode {
			c.avg = float64(bytes)
		}
	}
	if !(old.adaptive && p.adaptive) {
		c.maxP = p.maxP
	}
	if p.adaptive && !old.adaptive {
		c.nextTick = unstarted
	}
	if reseed {
		c.rng.Seed(seed)
	}
	c.p = p
	if p.byteMode != old.byteMode || p.meanBytes != old.meanBytes {
		c.count = -1 // R was scaled for the old mode: draw a fresh one on re-entry
	}
	c.setSlopes()
}

// The common arrival, in two forms. Queue.Enqueue calls update and below on
// c's own average and count, then signal. A burst run (EnqueueBatch) keeps
// the average and count in registers and calls ewma, belowMin and
// quietInBand on them, which decide an arrival in the band that is not
// signalled without the call of signal; it hands them back with settle
// before it calls signal or Enqueue and takes them again with held. The
// float64 average thus stays out of memory for a whole run
// (docs/design/0001-red-float-average.md). Enqueue does not call
// quietInBand: inlined there it saves a fifth of the instructions of an
// arrival in the band but adds 3–12 % to every signalled one.

// update moves the average to an arrival that finds cur packets (bytes in
// ByteMode) queued, cur > 0. An arrival to the empty queue calls endIdle
// instead.
func (c *controller) update(cur float64) { c.avg = ewma(c.avg, cur, c.p.w, c.p.omw) }

// ewma returns the average a moved to an arrival that finds cur queued,
// with w = w_q and omw = 1 − w_q: a·(1 − w_q) + w_q·cur, the reference
// model's form. A burst run calls it on operands it holds in registers.
func ewma(a, cur, w, omw float64) float64 { return a*omw + w*cur }

// below decides an arrival whose average is below min_th: it reports true
// and sets the count to −1 (the arrival is accepted), or false, and signal
// decides the arrival.
func (c *controller) below() bool {
	if c.belowMin(c.avg) {
		c.count = -1
		return true
	}
	return false
}

// belowMin reports whether the average a is below min_th, where an arrival
// is accepted and the count is −1.
func (c *controller) belowMin(a float64) bool { return a < c.p.minTh }

// quietInBand reports whether an arrival at average a ≥ min_th with count n
// is decided without a signal: packet mode without Wait, a below max_th,
// and count·p_b < R for the arrival's count n+1, which is signal's outcome
// for it. It then records p_b; the caller counts the arrival. Otherwise
// signal decides it.
func (c *controller) quietInBand(a float64, n int64) bool {
	if a >= c.p.quietTh || uint64(n) >= maxCount { // quietTh is 0 with Wait or ByteMode; n < 0 wraps above maxCount
		return false
	}
	pb := uint64(int64((a - c.p.minTh) * c.slope))
	if uint64(n+1)*pb >= c.r {
		return false
	}
	c.lastProb = pb
	return true
}

// settle stores the average and count a burst run held, before a call that
// reads them (signal, or Queue.Enqueue for a rare arrival).
func (c *controller) settle(a float64, n int64) { c.avg, c.count = a, n }

// held returns the average and count, for a burst run to hold.
func (c *controller) held() (float64, int64) { return c.avg, c.count }

// signal runs RED's decision for an arrival with the average at or above
// min_th (Floyd and Jacobson 1993, Figure 17): count the arrival, and signal
// it if count·p_b ≥ R, where R is uniform in (0, 1] and drawn afresh
// whenever count is 0. With a constant p_b this spaces signals uniformly
// over 1..1/p_b arrivals, the same distribution as marking each packet with
// p_a = p_b/(1 − (count−1)·p_b), but with one random draw per signal
// instead of one per packet and no division. With Wait the test is
// waitHit's, on the same count and R.
func (c *controller) signal(size uint32, ecn aqm.ECN) aqm.Verdict {
	a := c.avg
	if a >= c.p.forcedTh {
		c.count = -1
		c.lastProb = one
		return c.act(ecn, true)
	}
	pb := c.prob(a)
	c.lastProb = pb
	if c.count < maxCount {
		c.count++
	}
	if c.count > 0 {
		var hit bool
		switch {
		case c.p.wait:
			hit = c.waitHit(uint64(c.count), pb, size)
		case c.p.byteMode:
			// count·p_b·Size/MeanPacketBytes ≥ R  ⇔  count·pb·Size ≥ R·2^32·Mean.
			hi, lo := bits.Mul64(uint64(c.count)*pb, uint64(size))
			hit = hi != 0 || lo >= c.r
		default:
			hit = uint64(c.count)*pb >= c.r
		}
		if !hit {
			return aqm.Enqueued
		}
		c.count = 0
		c.drawR()
		return c.act(ecn, false)
	}
	c.drawR() // first arrival in the band: choose R, do not signal
	return aqm.Enqueued
}

// waitHit is the count test of the Wait option (ns-2's wait_, ns-3's
// Wait): whether the n-th arrival since the last signal (n ≥ 1) is
// signalled, for the probability p = P/U, where U is probability 1 in the
// units of R (2^32, or 2^32·MeanPacketBytes in byte mode) and P = p_b·U in
// packet mode, min(p_b·Size/MeanPacketBytes, 1)·U in byte mode.
//
// ns marks the n-th arrival with probability 0 while n·p < 1, then
// p/(2 − n·p) while n·p < 2, then 1. With c0 = ⌈1/p⌉, the first n with
// n·p ≥ 1, the chance of no signal up to n telescopes to
//
//	S(n) = 1                                 n < c0
//	S(n) = max(0, (2 − (n+1)·p)/(2 − c0·p))  n ≥ c0
//
// and with d = c0·p − 1 ∈ [0, p) and m = n + 1 − c0 ≥ 1 that is
// 1 − m·p/(1 − d): from c0 on, Figure 17's test with the probability
// p/(1 − d). The arrival is therefore signalled iff n·p ≥ 1 and
// m·p ≥ R·(1 − d), i.e. in integers
//
//	n·P ≥ U  and  m·P·U ≥ r·(U − D),  D = c0·P − U ∈ [0, P)
//
// which, with R uniform in (0, 1] drawn after each signal, gives every
// arrival exactly ns's probability when p_b is constant (as Figure 17 gives
// Figure 2's), with no random draw per packet. For a constant p the gap X
// between signals has P(X = n) = p/(1 − d) for c0 ≤ n up to about 2/p: for
// 1/p = K an integer it is uniform on K..2K−1, mean (3K−1)/2, rate
// 2·p/(3 − p).
//
// The exact test needs c0, a division; it is needed only in a window of
// width 2P around r. With e = n·P − U = D + (m−1)·P, the left side m·P =
// e − D + P lies in [e+1, e+P] (integers, D < P) and r·(U−D) in
// (r·U − r·P, r·U]: e + 1 ≥ r signals for certain, e + 2·P ≤ r (r ≤ U)
// certainly not. All arithmetic is exact: U ≤ 2^56 and, in the window,
// e < r ≤ U, so m·P < 2^57, and the two products are 128-bit. The only
// error is P's own (see Fixed point and precision).
func (c *controller) waitHit(n, pb uint64, size uint32) bool {
	u, P := uint64(one), min(pb, one)
	if c.p.byteMode {
		u = one * c.p.meanBytes // ≤ 2^56
		hi, lo := bits.Mul64(pb, uint64(size))
		P = lo
		if hi != 0 || lo > u {
			P = u
		}
	}
	hi, lo := bits.Mul64(n, P)
	switch {
	case hi != 0:
		return true // n·p ≥ 2^64/U ≥ 2^8: past 2/p, S = 0
	case lo < u:
		return false // n·p < 1: ns waits
	}
	e := lo - u
	switch {
	case e+1 >= c.r:
		return true
	case e+2*P <= c.r:
		return false
	}
	c0 := (u + P - 1) / P // P > 0 since n·P ≥ U
	d := c0*P - u
	lh, ll := bits.Mul64((n+1-c0)*P, u)
	rh, rl := bits.Mul64(c.r, u-d)
	return lh > rh || (lh == rh && ll >= rl)
}

// prob returns p_b·2^32 for an average min_th ≤ a < forcedTh: the linear
// region below max_th, the gentle ramp above it. Both are one multiply-add
// in float64 and a truncating conversion; see the package doc for the error
// bound. The conversion goes through int64 (one instruction on amd64); the
// value is below 2^33, so it is exact.
func (c *controller) prob(a float64) uint64 {
	if a < c.p.maxTh {
		return uint64(int64((a - c.p.minTh) * c.slope))
	}
	return uint64(int64(c.gBase + (a-c.p.maxTh)*c.gSlope))
}

// drawR draws R uniform in (0, 1] as R·2^32 ∈ [1, 2^32]. Excluding zero
// means a zero probability never signals (the paper's R/p_b is then
// infinite).
func (c *controller) drawR() {
	c.r = uint64(c.rng.Uint32()) + 1
	if c.p.byteMode {
		c.r *= c.p.meanBytes // ≤ 2^32·2^24, no overflow
	}
}

// act turns a congestion signal into a verdict.
func (c *controller) act(ecn aqm.ECN, forced bool) aqm.Verdict {
	if c.p.ecn && ecn.Capable() {
		if !forced {
			c.cnt.probMarks++
			return aqm.Marked
		}
		if !c.p.hardDrop {
			c.cnt.forcedMarks++
			return aqm.Marked
		}
		c.cnt.forcedDrops++
		return aqm.DroppedOverload
	}
	if forced {
		c.cnt.forcedDrops++
	} else {
		c.cnt.probDrops++
	}
	return aqm.DroppedEarly
}

// elapsedNs returns to−from in nanoseconds as a float64, for to > from,
// exact in uint64 even when the int64 difference would overflow.
func elapsedNs(from, to aqm.Time) float64 { return float64(uint64(to) - uint64(from)) }

// decay returns (1−w_q)^(d/s) for an idle time of d nanoseconds (d > 0).
func (c *controller) decay(d float64) float64 { return math.Exp(d * c.p.decayPerNs) }

// endIdle applies the idle decay at an arrival to the empty queue: the
// average decays as if m = idle/s mean-sized packets had left an empty
// queue, avg·(1−w_q)^m, in closed form whatever the idle time.
func (c *controller) endIdle(now aqm.Time) {
	if now <= c.idleStart {
		// No time, or time went backwards: no decay, and the idle period
		// restarts now, so that a start left in the future by a wrong
		// reading cannot stop later arrivals from decaying the average.
		c.idleStart = now
		return
	}
	if c.avg > 0 {
		c.avg *= c.decay(elapsedNs(c.idleStart, now))
		if c.avg < tinyAvg {
			c.avg = 0
		}
	}
	// The average is now current as of now; if p is refused the queue
	// stays empty and the next arrival decays from here, not again from
	// the old start.
	c.idleStart = now
}

// adapt catches Adaptive RED up with every adaptation instant up to now;
// idle says whether the queue is empty (its average then decays).
// The average between arrivals is constant while the queue is busy, and
// decays as avg·(1−w_q)^(t/s) while it is empty, so the average at each
// missed instant is known in closed form. Because it is constant or
// decreasing, the missed instants fall into runs of increases, no-ops and
// decreases; a run of no-ops is skipped in one step (see maxAdaptSteps).
func (c *controller) adapt(now aqm.Time, idle bool) {
	I := uint64(c.p.interval)
	if c.nextTick == unstarted || now < c.nextTick {
		// The first arrival starts the clock; an instant further ahead
		// than one interval (left there by a reading in the future) is
		// re-anchored to now.
		c.nextTick = satAdd(now, I)
		return
	}
	n := (uint64(now)-uint64(c.nextTick))/I + 1 // instants nextTick + j·I ≤ now
	changed := false
	steps := 0
	for j := uint64(0); j < n && steps < maxAdaptSteps; steps++ {
		t := aqm.Time(uint64(c.nextTick) + j*I) // ≤ now, no overflow
		a := c.avg
		if idle && t > c.idleStart {
			a *= c.decay(elapsedNs(c.idleStart, t))
		}
		switch {
		case a > c.p.tgtHi && c.maxP < maxAdaptiveMaxP:
			c.maxP = min(c.maxP+min(adaptiveAlpha, c.maxP/4), maxAdaptiveMaxP)
			changed = true
			c.cnt.adaptations++
			j++
		case a < c.p.tgtLo && c.maxP > minAdaptiveMaxP:
			c.maxP = max(c.maxP*adaptiveBeta, minAdaptiveMaxP)
			changed = true
			c.cnt.adaptations++
			j++
		case !idle || a < c.p.tgtLo:
			// A no-op with a constant average, or below the band with
			// max_p at its floor: every later instant is a no-op too.
			j = n
		default:
			// Idle, at or above the band, max_p at its ceiling or in the
			// band: nothing happens until the decaying average falls below
			// tgtLo. Jump to the first instant after that crossing.
			cross := math.Log(c.p.tgtLo/c.avg) / c.p.decayPerNs // ns after idleStart, ≥ 0
			off := float64(c.idleStart) - float64(c.nextTick) + cross
			jf := math.Ceil(off / float64(I))
			switch {
			case !(jf < float64(n)): // also NaN
				j = n
			case jf > float64(j+1):
				j = uint64(jf)
			default:
				j++
			}
		}
	}
	c.nextTick = satAdd(c.nextTick, n*I)
	if changed {
		c.setSlopes()
	}
}

// adaptDue reports whether Adaptive RED has work at now: an adaptation
// instant has passed (now ≥ nextTick), or the next instant is more than one
// interval ahead and must be re-anchored. The difference is taken modulo
// 2^64, which is exact when nextTick > now.
func (c *controller) adaptDue(now aqm.Time) bool {
	return now >= c.nextTick || uint64(c.nextTick)-uint64(now) > uint64(c.p.interval)
}

// satAdd returns t+d, saturating at the largest Time. The headroom
// MaxInt64−t is computed modulo 2^64, which is exact for every int64 t.
func satAdd(t aqm.Time, d uint64) aqm.Time {
	if d > uint64(math.MaxInt64)-uint64(t) {
		return math.MaxInt64
	}
	return aqm.Time(uint64(t) + d)
}
