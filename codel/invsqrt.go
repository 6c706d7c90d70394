package codel

import (
	"math"
	"math/bits"
)

// The control law spaces signals interval/sqrt(count) apart. Like Linux, the
// Controller keeps 1/sqrt(count) cached as a fixed-point fraction and updates
// it with Newton's method when count changes, so no signal needs a square
// root or a division. Unlike Linux it keeps 32 fraction bits (Q0.32, Linux
// keeps 16), iterates Newton to its fixed point instead of taking one step per
// count (one step from 1.0 gives 0.5 for count 2 where 0.707 is right), and
// reseeds from a safe guess whenever count jumps by more than one (one step
// from a stale value after a jump leaves Newton's basin: Linux's fq_codel
// bulk dropper can do this, see Controller.AddCount).

// one is 1.0 in Q0.32, rounded down to the largest representable fraction
// (2^32-1)/2^32, as Linux stores 1.0 as ~0 in its Q0.16 field.
const one = 1<<32 - 1

// invSqrt1 is 1/sqrt(2) in Q0.32: floor(2^32/sqrt(2)) = 3037000499.
const invSqrt1 = 3037000499

// newtonIters bounds the Newton iterations per update. From the seed (at
// least 0.707 of the target, see seedInvSqrt) the relative error e shrinks as
// e' = 1.5e^2: 0.29, 0.12, 0.02, 6e-4, 5e-7, 4e-13, which is below 2^-32
// after six steps; from the previous count's value (above the target by a
// factor sqrt(n/(n-1))) the first step lands below and the same sequence
// follows. Ten leaves margin for the rounding of the last bits.
const newtonIters = 10

// newtonStep applies one Newton-Raphson step for 1/sqrt(n) to the Q0.32
// estimate y: y' = y*(3 - n*y^2)/2. It reports false if y is outside the
// basin where the step converges (n*y^2 >= 3). The products are kept exact in
// 128 bits (Linux truncates y^2 to 32 bits first, which at count n costs about
// sqrt(n)/2 units of the result), so the only rounding is the final shift.
func newtonStep(y uint64, n uint32) (uint64, bool) {
	yy := y * y                         // y^2 at scale 2^64; y < 2^32 so it fits
	nh, nl := bits.Mul64(yy, uint64(n)) // n*y^2 at scale 2^64, 128 bits
	if nh >= 3 {                        // n*y^2 >= 3: no convergence
		return 0, false
	}
	th, tl := 3-nh, uint64(0)      // 3 at scale 2^64 is (3, 0)
	tl, b := bits.Sub64(tl, nl, 0) // t = 3 - n*y^2, 128 bits, below 2^66
	th -= b
	ph, _ := bits.Mul64(y, tl) // y*t at scale 2^96: high word
	ph += y * th               // y*th < 2^34, no overflow
	// y*t/2 back at scale 2^32 is (y*t) >> 65, the high word shifted once.
	r := ph >> 1
	if r > one {
		r = one
	}
	return r, true
}

// seedInvSqrt returns a Q0.32 guess within [1/sqrt(2), 1] of 1/sqrt(n), from
// the bit length L of n: n is in [2^(L-1), 2^L), so 2^(-L/2) is at most
// 1/sqrt(n) and at least 1/sqrt(2) of it. For odd L the half power of two is
// the constant 1/sqrt(2).
func seedInvSqrt(n uint32) uint64 {
	l := uint(bits.Len32(n))
	if l&1 == 0 {
		return 1 << (32 - l/2)
	}
	return invSqrt1 >> (l / 2)
}

// invSqrt returns 1/sqrt(n) in Q0.32 (n ≥ 1): the fixed point that
// invSqrtNewton reaches, computed without iterating in all but rare cases.
//
// Let r = 2^32/sqrt(n) and F = floor(r). The Newton map N(y) =
// floor(y*(3 - n*y^2/2^64)/2) never exceeds r, and for y = r-d below the
// root it adds y*(1-(y/r)^2)/2 = d*(1-d/r)*(1-d/(2r)) before the floor. So F
// is a fixed point (d = frac(r) < 1 adds less than one), every y ≤ F-2 that
// the iteration can visit (d ≥ 2, and y ≥ the seed ≥ 0.7r) moves up, and
// F-1 (d = 1+frac(r)) is a fixed point only if frac(r) < 6/r roughly, that
// is below 6/2^17 = 4.6e-5 for n ≤ maxCount. From any start the iteration
// reaches a fixed point in at most 8 of its 10 steps (see newtonIters: at
// most one restart at the seed, then six steps to within one unit and one
// to see the fixed point), so it returns F whenever frac(r) is at least
// that. The float64 quotient below is within 2^32*2^-52*1.01 < 2^-19 of r
// (two correctly rounded operations), so a computed fraction in
// (2^-10, 1-2^-10) means F is its integer part and frac(r) > 2^-10 -
// 2^-19, far above 4.6e-5: F is the answer. Anything else (r within 2^-10
// of an integer, about one count in 500) takes the iteration itself, so
// the result equals invSqrtNewton(n, prev) for every n and prev
// (TestInvSqrtFastMatchesNewton checks it over millions of counts and
// starting values). This replaces two or three 128-bit Newton steps per
// count change by a division and a square root.
func invSqrt(n uint32, prev uint32) uint32 {
	if n <= 1 {
		return one
	}
	if n <= maxCount {
		r := 4294967296 / math.Sqrt(float64(n))
		f := uint64(r)
		if fr := r - float64(f); fr > 1.0/1024 && fr < 1-1.0/1024 {
			return uint32(f)
		}
	}
	return invSqrtNewton(n, prev)
}

// invSqrtNewton returns 1/sqrt(n) in Q0.32 (n ≥ 2) by Newton's method,
// starting from the estimate prev if it is usable (it should be the value
// for a nearby count), else from seedInvSqrt, and iterating to a fixed
// point.
func invSqrtNewton(n uint32, prev uint32) uint32 {
	if n <= 1 {
		return one
	}
	y := uint64(prev)
	if y == 0 {
		y = seedInvSqrt(n)
	}
	seed := seedInvSqrt(n)
	y = max(y, seed) // the seed is below the root: never start lower
	for range newtonIters {
		z, ok := newtonStep(y, n)
		if !ok { // outside the basin: restart from the safe seed
			z = seed
		}
		// A start far above the root lands far below it; the seed is a
		// better point to continue from.
		z = max(z, seed)
		if z == y {
			break
		}
		y = z
	}
	return uint32(y)
}

// lawStep returns floor(interval/sqrt(n)) in nanoseconds, at least 1, from
// the cached Q0.32 estimate y of 1/sqrt(n). The multiply-shift interval*y>>32
// (Linux's reciprocal_scale) is within e = 4*interval/2^32 + 4 of the floor
// when y is within 2 units of 1/sqrt(n) (TestInvSqrt*), which is a few
// nanoseconds for intervals below a few seconds. A binary search over
// [s-e, s+e] on the exact test x^2*n <= interval^2 (128-bit products) then
// makes it the exact floor, so the schedule equals the RFC's real-valued
// interval/sqrt(count) truncated to whole nanoseconds. interval is at most
// maxInterval (< 2^42) so every product fits in 128 bits.
func lawStep(interval int64, n uint32, y uint32) int64 {
	iv := uint64(interval)
	if n <= 1 {
		return interval
	}
	hi, lo := bits.Mul64(iv, uint64(y))
	s := hi<<32 | lo>>32
	i2hi, i2lo := bits.Mul64(iv, iv)
	// Fast path: the estimate is almost always the floor or one above it.
	// Two exact tests settle those cases; the floor is unique, so the
	// result is the same as the search's below.
	if s >= 2 && s < iv {
		if sqTimesNLE(s, n, i2hi, i2lo) {
			if !sqTimesNLE(s+1, n, i2hi, i2lo) {
				return int64(s)
			}
		} else if sqTimesNLE(s-1, n, i2hi, i2lo) {
			return int64(s - 1)
		}
	}
	e := iv>>30 + 4
	a, b := uint64(0), s+e // invariant: a satisfies, b+1 does not
	if s > e {
		a = s - e
	}
	if !sqTimesNLE(a, n, i2hi, i2lo) { // estimate too far off: search from 0
		a = 0
	}
	if sqTimesNLE(b+1, n, i2hi, i2lo) { // cannot happen with a sane y; stay exact
		b = iv
	}
	for a < b {
		m := a + (b-a+1)/2
		if sqTimesNLE(m, n, i2hi, i2lo) {
			a = m
		} else {
			b = m - 1
		}
	}
	if a == 0 {
		a = 1 // a step of zero would stall the schedule (Linux's 2026 fix)
	}
	return int64(a)
}

// lawStepCached is lawStep for the Controller's own cached estimate y =
// invSqrt(n), which is floor(2^32/sqrt(n)) or one less (invSqrt), so
// r-2 < y ≤ r for r = 2^32/sqrt(n). Then the exact spacing t =
// interval/sqrt(n) = interval*r/2^32 satisfies interval*y ≤ t*2^32 <
// interval*y + 2*interval. Write interval*y = s*2^32 + f: if f +
// 2*interval ≤ 2^32, then s ≤ t < s+1 and s is the floor, with no further
// test. That holds for all but a fraction 2*interval/2^32 of the estimates
// (5% at the default 100 ms, never for intervals above about 2.1 s); the
// rest take lawStep's exact search. TestLawStepCachedExact compares it with
// lawStep over millions of intervals and counts.
func lawStepCached(interval int64, n uint32, y uint32) int64 {
	if n > 1 {
		hi, lo := bits.Mul64(uint64(interval), uint64(y))
		if lo&(1<<32-1)+2*uint64(interval) <= 1<<32 {
			if s := hi<<32 | lo>>32; s >= 1 {
				return int64(s)
			}
		}
	}
	return lawStep(interval, n, y)
}

// sqTimesNLE reports whether s*s*n <= (hi,lo) as unsigned 128-bit values,
// for s <= 2^42+1.
func sqTimesNLE(s uint64, n uint32, hi, lo uint64) bool {
	h, l := bits.Mul64(s, s) // s < 2^43, so h < 2^22
	// (h,l)*n: n < 2^32, so the high word stays below 2^54.
	lh, ll := bits.Mul64(l, uint64(n))
	h = h*uint64(n) + lh
	if h != hi {
		return h < hi
	}
	return ll <= lo
}
