package shaper

import (
	"errors"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// DefaultBurstTime is how much sending time the default burst covers: 2 ms of
// the configured rate. The burst is also what lets the shaper catch up when
// its goroutine wakes late: Go timers fire tens of microseconds to about a
// millisecond late on a loaded machine, and credit beyond the burst is lost,
// so a burst shorter than the typical oversleep makes the shaper send below
// its rate.
const DefaultBurstTime = 2 * time.Millisecond

// DefaultMinBurstBytes is the smallest default burst: 3028 bytes, two
// full-size Ethernet frames (2 × 1514), so that at low rates the shaper can
// still send a full frame right after another one left.
const DefaultMinBurstBytes = 3028

// Config configures a [Shaper].
type Config struct {
	// RateBitsPerSec is the rate at which packets leave, in bits per second
	// of [aqm.Packet.Size] (count any per-packet framing overhead in Size).
	// Zero means unlimited: every queued packet may leave at once, the
	// convention of CAKE's "unlimited" and of tc rate 0.
	RateBitsPerSec uint64
	// BurstBytes is the bucket's depth in bytes: how many bytes may leave
	// back to back, at line speed, after an idle period, on top of the one
	// packet that may always start when the bucket is not in debt. Zero means
	// the bytes the rate sends in [DefaultBurstTime], and at least
	// [DefaultMinBurstBytes]; that default follows the rate when it changes.
	// It must be at most [MaxBurstBytes].
	BurstBytes int
}

// Validate reports every bad field, each as an [aqm.ConfigError] wrapping
// [aqm.ErrInvalidConfig], joined with errors.Join.
func (c Config) Validate() error {
	var errs []error
	if c.BurstBytes < 0 || c.BurstBytes > MaxBurstBytes {
		errs = append(errs, &aqm.ConfigError{Pkg: "shaper", Field: "BurstBytes", Value: c.BurstBytes, Rule: "must be in [0, 1073741824]"})
	}
	return errors.Join(errs...)
}

// burstBytes returns the effective burst: BurstBytes, or the default derived
// from the rate. The config must be valid.
func (c Config) burstBytes() int {
	if c.BurstBytes > 0 {
		return c.BurstBytes
	}
	return defaultBurst(c.RateBitsPerSec)
}

// defaultBurst returns max(DefaultMinBurstBytes, rate × DefaultBurstTime / 8
// bits per byte), capped at MaxBurstBytes. The bytes in 2 ms are
// rate / 8 / 500 = rate / 4000, computed by division so that it cannot
// overflow.
func defaultBurst(rate uint64) int {
	const perSecond = uint64(time.Second / DefaultBurstTime) // 500 bursts per second
	b := rate / 8 / perSecond
	if b > MaxBurstBytes {
		b = MaxBurstBytes
	}
	return max(int(b), DefaultMinBurstBytes)
}
