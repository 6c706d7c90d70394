package aqm

import (
	"math"
	"time"
)

// Time is an instant on a monotonic clock, in nanoseconds from an arbitrary
// epoch. The zero Time means "unset"; clocks never return it.
type Time int64

// Add returns t+d.
func (t Time) Add(d time.Duration) Time { return t + Time(d) }

// Sub returns the duration t-u, which is negative when t is before u.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Before reports whether t is before u.
func (t Time) Before(u Time) bool { return t < u }

// After reports whether t is after u.
func (t Time) After(u Time) bool { return t > u }

// IsZero reports whether t is the unset zero Time.
func (t Time) IsZero() bool { return t == 0 }

// Since returns now-t clamped to [0, MaxInt64]: time that went backwards
// counts as no time at all, and a span wider than int64 (from near the
// smallest Time to near the largest) saturates instead of wrapping negative.
func (t Time) Since(now Time) time.Duration {
	if now <= t {
		return 0
	}
	d := uint64(now) - uint64(t) // exact: now > t, so the difference is in (0, 2^64)
	if d > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}
