// Package bucket is the token bucket that package front and package keyed
// shape with: a value type that takes the time as an argument, exact in
// integer arithmetic, with the debt rule (a packet leaves whenever the
// credit is not negative and takes its whole size).
//
// Its fields are exported so that an owner can settle, scale or inspect the
// credit; the owner must serialise all calls.
package bucket

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// UnitsPerByte is the bucket's credit unit: one credit unit is 1e-9 bit, so a
// byte is 8 bits × 1e9 = 8e9 units. With this unit the credit a rate of r
// bits/s earns in e nanoseconds is exactly r × e units (r bits/s = r units/ns),
// so Refill and Wait are one integer multiply or divide each, with no
// rounding and no drift over any run length.
const UnitsPerByte = 8 * 1_000_000_000

// MaxBytes is the largest bucket depth: 1 GiB. With 8e9 units per byte the
// bucket's capacity is then at most 2^30 × 8e9 ≈ 8.6e18 units, below the
// int64 limit of 9.2e18.
const MaxBytes = 1 << 30

// MaxCostBytes caps what one packet costs: a Size above 1 GiB is charged as
// 1 GiB, so the credit never falls below -8.6e18 units and the span from the
// lowest credit to a full bucket (at most 2 × 8.6e18 ≈ 1.72e19) fits a uint64
// (1.84e19).
const MaxCostBytes = 1 << 30

// Bucket is the token bucket, a pure value type that takes time as an
// argument. credit may be negative: a packet is released whenever credit is
// not negative and then takes its whole size, possibly leaving a debt that
// later refills pay back (gVisor tbf's debt rule). Rate zero means unlimited.
//
// The owner must serialise all calls.
type Bucket struct {
	Rate     uint64   // bits per second; 0: unlimited
	Capacity int64    // burst × UnitsPerByte
	Credit   int64    // in [-MaxCostBytes×UnitsPerByte, Capacity]
	Last     aqm.Time // time of the last refill; 0: never
}

// Refill adds the credit earned from last to now. Time that goes backwards
// earns nothing and re-anchors last to now (the time policy of package
// aqm): after one reading far in the future, the next correct reading pulls
// last back instead of leaving the bucket unable to earn until the clock
// catches up.
func (b *Bucket) Refill(now aqm.Time) {
	if b.Last == 0 || now < b.Last {
		b.Last = now
		return
	}
	if now == b.Last {
		return
	}
	// now > last, so the difference is in [1, 2^64) even when the int64
	// subtraction would overflow; uint64 wrap-around arithmetic gets it right.
	elapsed := uint64(now) - uint64(b.Last)
	b.Last = now
	if b.Rate == 0 {
		b.Credit = b.Capacity
		return
	}
	if b.Credit >= b.Capacity {
		return
	}
	// need is in (0, 1.72e19]: exact in uint64 modular arithmetic (see
	// MaxCostBytes) although the int64 difference may overflow.
	need := uint64(b.Capacity) - uint64(b.Credit)
	// The bucket fills once rate × elapsed ≥ need, that is once elapsed ≥
	// ceil(need / rate); comparing against the quotient avoids the overflow
	// of the product after a long idle gap.
	if elapsed >= CeilDiv(need, b.Rate) {
		b.Credit = b.Capacity
		return
	}
	// Here rate × elapsed < need ≤ 1.72e19, so the product does not overflow
	// and credit + gain ≤ capacity; the sum is exact modulo 2^64.
	b.Credit = int64(uint64(b.Credit) + b.Rate*elapsed)
}

// Ready reports whether a packet may leave now: the credit is not negative.
// It assumes Refill(now) was called.
func (b *Bucket) Ready() bool { return b.Rate == 0 || b.Credit >= 0 }

// Wait returns how long after the last refill the credit becomes
// non-negative: zero if it already is.
func (b *Bucket) Wait() time.Duration {
	if b.Ready() {
		return 0
	}
	// credit ≥ -8.6e18, so its negation fits, and the quotient (at most
	// 8.6e18 ns, with rate ≥ 1) fits a Duration.
	return time.Duration(CeilDiv(uint64(-b.Credit), b.Rate))
}

// Charge takes a packet of size bytes from the bucket. The caller has checked
// Ready, so credit ≥ 0 and the result is ≥ -MaxCostBytes × UnitsPerByte.
func (b *Bucket) Charge(size uint32) {
	if b.Rate == 0 {
		return
	}
	cost := int64(min(size, MaxCostBytes)) * UnitsPerByte
	b.Credit -= cost
}

// SetRate applies a new rate and capacity at now: the credit earned so far is
// settled at the old rate first, and a credit above the new capacity is cut
// to it. A debt is kept and is repaid at the new rate.
func (b *Bucket) SetRate(now aqm.Time, rate uint64, burstBytes int) {
	b.Refill(now)
	b.Rate = rate
	b.Capacity = int64(burstBytes) * UnitsPerByte
	if b.Credit > b.Capacity || rate == 0 {
		b.Credit = b.Capacity
	}
}

// CreditBytes returns the credit in whole bytes, rounded toward minus
// infinity.
func (b *Bucket) CreditBytes() int64 {
	q := b.Credit / UnitsPerByte
	if b.Credit%UnitsPerByte < 0 {
		q--
	}
	return q
}

// Fill sets the credit to the capacity: a bucket that starts full.
func (b *Bucket) Fill() { b.Credit = b.Capacity }

// CeilDiv returns ceil(a / d) for d > 0 without overflow.
func CeilDiv(a, d uint64) uint64 {
	q := a / d
	if a%d != 0 {
		q++
	}
	return q
}

// DefaultTime is how much sending time a default depth covers: 5 ms of the
// rate. The burst is also what lets a consumer catch up when it wakes late,
// and credit beyond the burst is lost, so a burst shorter than the typical
// oversleep makes the front send below its rate. Go's runtime on Linux
// sleeps in whole milliseconds: a blocking consumer that waits for a
// departure plus its 1 ms wake slack often wakes 2 ms after the bucket
// emptied, and later on a busy machine, which a 2 ms bucket cannot absorb
// (it delivered 97 % of 200 Mbit/s in a model of those timers, and cost a
// TUN router 11 points of goodput on a loaded host). The price of the
// larger bucket: after an idle period up to 5 ms of the rate may leave
// back to back.
const DefaultTime = 5 * time.Millisecond

// DefaultMinBytes is the smallest default depth: 3028 bytes, two full-size
// Ethernet frames (2 × 1514).
const DefaultMinBytes = 3028

// DefaultBurst returns max(DefaultMinBytes, rate × DefaultTime / 8 bits per
// byte), capped at MaxBytes. The bytes in 5 ms are rate / 8 / 200 = rate /
// 1600, computed by division so that it cannot overflow.
func DefaultBurst(rate uint64) int {
	const perSecond = uint64(time.Second / DefaultTime) // 200 bursts per second
	b := rate / 8 / perSecond
	if b > MaxBytes {
		b = MaxBytes
	}
	return max(int(b), DefaultMinBytes)
}
