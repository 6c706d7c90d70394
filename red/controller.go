package red

import (
	"math"
	"math/bits"

	"github.com/aqmkit/aqmkit/aqm"
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

// setSlopes recomputes the probability constants from max_p. They are
// float64 multipliers that yield the Q0.32 probability directly, so the hot
// path does one multiply and one conversion per packet.
func (q *Queue[T]) setSlopes() {
	q.slope = q.maxP * one / (q.p.maxTh - q.p.minTh)
	q.gBase = q.maxP * one
	q.gSlope = (1 - q.maxP) * one / q.p.maxTh
}

// signal runs RED's decision for an arrival with the average at or above
// min_th (Floyd and Jacobson 1993, Figure 17): count the arrival, and signal
// it if count·p_b ≥ R, where R is uniform in (0, 1] and drawn afresh
// whenever count is 0. With a constant p_b this spaces signals uniformly
// over 1..1/p_b arrivals, the same distribution as marking each packet with
// p_a = p_b/(1 − (count−1)·p_b), but with one random draw per signal
// instead of one per packet and no division. With Wait the test is
// waitHit's, on the same count and R.
func (q *Queue[T]) signal(size uint32, ecn aqm.ECN) aqm.Verdict {
	a := q.avg
	if a >= q.p.forcedTh {
		q.count = -1
		q.lastProb = one
		return q.act(ecn, true)
	}
	pb := q.prob(a)
	q.lastProb = pb
	if q.count < maxCount {
		q.count++
	}
	if q.count > 0 {
		var hit bool
		switch {
		case q.p.wait:
			hit = q.waitHit(uint64(q.count), pb, size)
		case q.p.byteMode:
			// count·p_b·Size/MeanPacketBytes ≥ R  ⇔  count·pb·Size ≥ R·2^32·Mean.
			hi, lo := bits.Mul64(uint64(q.count)*pb, uint64(size))
			hit = hi != 0 || lo >= q.r
		default:
			hit = uint64(q.count)*pb >= q.r
		}
		if !hit {
			return aqm.Enqueued
		}
		q.count = 0
		q.drawR()
		return q.act(ecn, false)
	}
	q.drawR() // first arrival in the band: choose R, do not signal
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
func (q *Queue[T]) waitHit(n, pb uint64, size uint32) bool {
	u, P := uint64(one), min(pb, one)
	if q.p.byteMode {
		u = one * q.p.meanBytes // ≤ 2^56
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
	case e+1 >= q.r:
		return true
	case e+2*P <= q.r:
		return false
	}
	c0 := (u + P - 1) / P // P > 0 since n·P ≥ U
	d := c0*P - u
	lh, ll := bits.Mul64((n+1-c0)*P, u)
	rh, rl := bits.Mul64(q.r, u-d)
	return lh > rh || (lh == rh && ll >= rl)
}

// prob returns p_b·2^32 for an average min_th ≤ a < forcedTh: the linear
// region below max_th, the gentle ramp above it. Both are one multiply-add
// in float64 and a truncating conversion; see the package doc for the error
// bound. The conversion goes through int64 (one instruction on amd64); the
// value is below 2^33, so it is exact.
func (q *Queue[T]) prob(a float64) uint64 {
	if a < q.p.maxTh {
		return uint64(int64((a - q.p.minTh) * q.slope))
	}
	return uint64(int64(q.gBase + (a-q.p.maxTh)*q.gSlope))
}

// drawR draws R uniform in (0, 1] as R·2^32 ∈ [1, 2^32]. Excluding zero
// means a zero probability never signals (the paper's R/p_b is then
// infinite).
func (q *Queue[T]) drawR() {
	q.r = uint64(q.rng.Uint32()) + 1
	if q.p.byteMode {
		q.r *= q.p.meanBytes // ≤ 2^32·2^24, no overflow
	}
}

// act turns a congestion signal into a verdict.
func (q *Queue[T]) act(ecn aqm.ECN, forced bool) aqm.Verdict {
	if q.p.ecn && ecn.Capable() {
		if !forced {
			q.cnt.probMarks++
			return aqm.Marked
		}
		if !q.p.hardDrop {
			q.cnt.forcedMarks++
			return aqm.Marked
		}
		q.cnt.forcedDrops++
		return aqm.DroppedOverload
	}
	if forced {
		q.cnt.forcedDrops++
	} else {
		q.cnt.probDrops++
	}
	return aqm.DroppedEarly
}

// elapsedNs returns to−from in nanoseconds as a float64, for to > from,
// exact in uint64 even when the int64 difference would overflow.
func elapsedNs(from, to aqm.Time) float64 { return float64(uint64(to) - uint64(from)) }

// decay returns (1−w_q)^(d/s) for an idle time of d nanoseconds (d > 0).
func (q *Queue[T]) decay(d float64) float64 { return math.Exp(d * q.p.decayPerNs) }

// endIdle applies the idle decay at an arrival to the empty queue: the
// average decays as if m = idle/s mean-sized packets had left an empty
// queue, avg·(1−w_q)^m, in closed form whatever the idle time.
func (q *Queue[T]) endIdle(now aqm.Time) {
	if now <= q.idleStart {
		// No time, or time went backwards: no decay, and the idle period
		// restarts now, so that a start left in the future by a wrong
		// reading cannot stop later arrivals from decaying the average.
		q.idleStart = now
		return
	}
	if q.avg > 0 {
		q.avg *= q.decay(elapsedNs(q.idleStart, now))
		if q.avg < tinyAvg {
			q.avg = 0
		}
	}
	// The average is now current as of now; if p is refused the queue
	// stays empty and the next arrival decays from here, not again from
	// the old start.
	q.idleStart = now
}

// adapt catches Adaptive RED up with every adaptation instant up to now.
// The average between arrivals is constant while the queue is busy, and
// decays as avg·(1−w_q)^(t/s) while it is empty, so the average at each
// missed instant is known in closed form. Because it is constant or
// decreasing, the missed instants fall into runs of increases, no-ops and
// decreases; a run of no-ops is skipped in one step (see maxAdaptSteps).
func (q *Queue[T]) adapt(now aqm.Time) {
	I := uint64(q.p.interval)
	if q.nextTick == unstarted || now < q.nextTick {
		// The first arrival starts the clock; an instant further ahead
		// than one interval (left there by a reading in the future) is
		// re-anchored to now.
		q.nextTick = satAdd(now, I)
		return
	}
	n := (uint64(now)-uint64(q.nextTick))/I + 1 // instants nextTick + j·I ≤ now
	idle := q.ring.Len() == 0
	changed := false
	steps := 0
	for j := uint64(0); j < n && steps < maxAdaptSteps; steps++ {
		t := aqm.Time(uint64(q.nextTick) + j*I) // ≤ now, no overflow
		a := q.avg
		if idle && t > q.idleStart {
			a *= q.decay(elapsedNs(q.idleStart, t))
		}
		switch {
		case a > q.p.tgtHi && q.maxP < MaxAdaptiveMaxP:
			q.maxP = min(q.maxP+min(AdaptiveAlpha, q.maxP/4), MaxAdaptiveMaxP)
			changed = true
			q.cnt.adaptations++
			j++
		case a < q.p.tgtLo && q.maxP > MinAdaptiveMaxP:
			q.maxP = max(q.maxP*AdaptiveBeta, MinAdaptiveMaxP)
			changed = true
			q.cnt.adaptations++
			j++
		case !idle || a < q.p.tgtLo:
			// A no-op with a constant average, or below the band with
			// max_p at its floor: every later instant is a no-op too.
			j = n
		default:
			// Idle, at or above the band, max_p at its ceiling or in the
			// band: nothing happens until the decaying average falls below
			// tgtLo. Jump to the first instant after that crossing.
			cross := math.Log(q.p.tgtLo/q.avg) / q.p.decayPerNs // ns after idleStart, ≥ 0
			off := float64(q.idleStart) - float64(q.nextTick) + cross
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
	q.nextTick = satAdd(q.nextTick, n*I)
	if changed {
		q.setSlopes()
	}
}

// adaptDue reports whether Adaptive RED has work at now: an adaptation
// instant has passed (now ≥ nextTick), or the next instant is more than one
// interval ahead and must be re-anchored. The difference is taken modulo
// 2^64, which is exact when nextTick > now.
func (q *Queue[T]) adaptDue(now aqm.Time) bool {
	return now >= q.nextTick || uint64(q.nextTick)-uint64(now) > uint64(q.p.interval)
}

// satAdd returns t+d, saturating at the largest Time. The headroom
// MaxInt64−t is computed modulo 2^64, which is exact for every int64 t.
func satAdd(t aqm.Time, d uint64) aqm.Time {
	if d > uint64(math.MaxInt64)-uint64(t) {
		return math.MaxInt64
	}
	return aqm.Time(uint64(t) + d)
}
