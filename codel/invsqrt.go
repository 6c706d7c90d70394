package codel

import "math/bits"

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

// invSqrt returns 1/sqrt(n) in Q0.32 (n ≥ 1), starting from the estimate
// prev if it is usable (it should be the value for a nearby count), else from
// seedInvSqrt.
func invSqrt(n uint32, prev uint32) uint32 {
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
// MaxInterval (< 2^42) so every product fits in 128 bits.
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
