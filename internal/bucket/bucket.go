package front

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// unitsPerByte is the bucket's credit unit: one credit unit is 1e-9 bit, so a
// byte is 8 bits × 1e9 = 8e9 units. With this unit the credit a rate of r
// bits/s earns in e nanoseconds is exactly r × e units (r bits/s = r units/ns),
// so refill and wait are one integer multiply or divide each, with no
// rounding and no drift over any run length.
const unitsPerByte = 8 * 1_000_000_000

// MaxBurstBytes is the largest BurstBytes: 1 GiB. With 8e9 units per byte the
// bucket's capacity is then at most 2^30 × 8e9 ≈ 8.6e18 units, below the
// int64 limit of 9.2e18.
const MaxBurstBytes = 1 << 30

// maxCostBytes caps what one packet costs: a Size above 1 GiB is charged as
// 1 GiB, so the credit never falls below -8.6e18 units and the span from the
// lowest credit to a full bucket (at most 2 × 8.6e18 ≈ 1.72e19) fits a uint64
// (1.84e19).
const maxCostBytes = 1 << 30

// bucket is the token bucket, a pure value type that takes time as an
// argument. credit may be negative: a packet is released whenever credit is
// not negative and then takes its whole size, possibly leaving a debt that
// later refills pay back (gVisor tbf's debt rule). Rate zero means unlimited.
//
// The owner must serialise all calls.
type bucket struct {
	rate     uint64   // bits per second; 0: unlimited
	capacity int64    // burst × unitsPerByte
	credit   int64    // in [-maxCostBytes×unitsPerByte, capacity]
	last     aqm.Time // time of the last refill; 0: never
}

// refill adds the credit earned from last to now. Time that goes backwards
// earns nothing and re-anchors last to now (the time policy of package
// aqm): after one reading far in the future, the next correct reading pulls
// last back instead of leaving the bucket unable to earn until the clock
// catches up.
func (b *bucket) refill(now aqm.Time) {
	if b.last == 0 || now < b.last {
		b.last = now
		return
	}
	if now == b.last {
		return
	}
	// now > last, so the difference is in [1, 2^64) even when the int64
	// subtraction would overflow; uint64 wrap-around arithmetic gets it right.
	elapsed := uint64(now) - uint64(b.last)
	b.last = now
	if b.rate == 0 {
		b.credit = b.capacity
		return
	}
	if b.credit >= b.capacity {
		return
	}
	// need is in (0, 1.72e19]: exact in uint64 modular arithmetic (see
	// maxCostBytes) although the int64 difference may overflow.
	need := uint64(b.capacity) - uint64(b.credit)
	// The bucket fills once rate × elapsed ≥ need, that is once elapsed ≥
	// ceil(need / rate); comparing against the quotient avoids the overflow
	// of the product after a long idle gap.
	if elapsed >= ceilDiv(need, b.rate) {
		b.credit = b.capacity
		return
	}
	// Here rate × elapsed < need ≤ 1.72e19, so the product does not overflow
	// and credit + gain ≤ capacity; the sum is exact modulo 2^64.
	b.credit = int64(uint64(b.credit) + b.rate*elapsed)
}

// ready reports whether a packet may leave now: the credit is not negative.
// It assumes refill(now) was called.
func (b *bucket) ready() bool { return b.rate == 0 || b.credit >= 0 }

// wait returns how long after the last refill the credit becomes
// non-negative: zero if it already is.
func (b *bucket) wait() time.Duration {
	if b.ready() {
		return 0
	}
	// credit ≥ -8.6e18, so its negation fits, and the quotient (at most
	// 8.6e18 ns, with rate ≥ 1) fits a Duration.
	return time.Duration(ceilDiv(uint64(-b.credit), b.rate))
}

// charge takes a packet of size bytes from the bucket. The caller has checked
// ready, so credit ≥ 0 and the result is ≥ -maxCostBytes × unitsPerByte.
func (b *bucket) charge(size uint32) {
	if b.rate == 0 {
		return
	}
	cost := int64(min(size, maxCostBytes)) * unitsPerByte
	b.credit -= cost
}

// setRate applies a new rate and capacity at now: the credit earned so far is
// settled at the old rate first, and a credit above the new capacity is cut
// to it. A debt is kept and is repaid at the new rate.
func (b *bucket) setRate(now aqm.Time, rate uint64, burstBytes int) {
	b.refill(now)
	b.rate = rate
	b.capacity = int64(burstBytes) * unitsPerByte
	if b.credit > b.capacity || rate == 0 {
		b.credit = b.capacity
	}
}

// creditBytes returns the credit in whole bytes, rounded toward minus
// infinity.
func (b *bucket) creditBytes() int64 {
	q := b.credit / unitsPerByte
	if b.credit%unitsPerByte < 0 {
		q--
	}
	return q
}

// ceilDiv returns ceil(a / d) for d > 0 without overflow.
func ceilDiv(a, d uint64) uint64 {
	q := a / d
	if a%d != 0 {
		q++
	}
	return q
}
