// Package clock supplies the time that aqmkit's queues take as an argument.
//
// The algorithms never read a clock: every per-packet method takes now. This
// package holds the clocks a caller reads instead: read one once per packet
// or per batch and pass the reading to every call (package front does this
// for a queue on a packet path).
//
//   - [Mono] reads the runtime's monotonic clock; it never returns zero, and
//     every Mono in the process reads the same instant at the same moment.
//   - [Coarse] caches the reading of another clock in one atomic word, so
//     that many goroutines read the time for about a nanosecond, at the
//     resolution of its refreshes.
//   - [Manual] is set and advanced by hand, for tests and simulation.
//
// # Differences and decisions
//
// Clock is the one-method interface Now() aqm.Time (the minimum of the
// k8s PassiveClock), not a wide interface with timers and sleeps: queues
// need instants, never wake-ups. Readings are int64 nanoseconds, not
// time.Time, so that one reading costs a subtraction after the runtime's
// own clock read. A time.Now call costs tens of nanoseconds on a virtual
// machine, as much as a whole AQM decision, so hot loops should read a clock
// once per batch (now := c.Now(), passed to every call of the batch), and
// many concurrent producers should share one [Coarse] clock refreshed by the
// consumer or a ticker.
//
// # Concurrency
//
// Mono and Coarse are safe for concurrent use. Manual is not.
package clock

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Clock tells the time.
type Clock interface {
	// Now returns the current instant; never the zero Time.
	Now() aqm.Time
}

// since is the clock [Since] returns.
type since struct{ start time.Time }

// Now returns Epoch plus the time since start.
func (s since) Now() aqm.Time { return Epoch + aqm.Time(time.Since(s.start)) }

// Epoch is the reading of [Mono] clocks when the process started (when
// package clock was initialised) and the initial reading of a [Manual]
// clock: one second, so that zero (unset) and small negative differences
// never look like real instants.
const Epoch = aqm.Time(time.Second)

// processStart is the instant every Mono counts from.
var processStart = time.Now()

// Mono reads the runtime's monotonic clock. Its readings are nanoseconds
// since the process started, plus [Epoch], so every Mono (and every
// goroutine) reads the same instant at the same moment, and readings taken
// by different components can be compared and subtracted. The zero Mono is
// ready to use.
//
// Inside a testing/synctest bubble, whose fake time starts in the year 2000,
// Mono readings are meaningless (the bubble's clock is behind the process
// start); use a clock that counts from an instant taken inside the bubble,
// such as [Since].
type Mono struct{}

// NewMono returns a monotonic clock. All Mono clocks are equivalent.
func NewMono() *Mono { return &Mono{} }

// Now returns the time since the process started, plus Epoch.
func (*Mono) Now() aqm.Time { return Epoch + aqm.Time(time.Since(processStart)) }

// Since returns a clock that reads Epoch at start and counts time.Since
// from it. Unlike [Mono], its readings are relative to start; it suits
// testing/synctest bubbles (pass time.Now() taken inside the bubble).
func Since(start time.Time) Clock {
	return since{start}
}

// Coarse is a clock for many concurrent readers: it holds the last reading
// of a source clock in one atomic word, so [Coarse.Now] costs about a
// nanosecond (one atomic load) against tens of nanoseconds for a real clock
// read on a virtual machine. It is the user-space analogue of Linux's
// CLOCK_MONOTONIC_COARSE.
//
// Its resolution is the interval between refreshes: Now lags the source by
// at most that much. Refresh it from the goroutine that matters most (a
// front's consumer refreshes it on every batch and a producer that finds
// the queue empty refreshes it, see package front), from a ticker with
// [Coarse.Run], or both. A stale reading makes a packet look older than it
// is, so an AQM that judges sojourn times sees them too long by up to the
// lag: keep the lag well below the AQM's target (CoDel's 5 ms).
//
// Readings never go backwards, even when several goroutines refresh at
// once. A Coarse is safe for concurrent use.
type Coarse struct {
	t   atomic.Int64
	src Clock
}

// NewCoarse returns a coarse clock over src (nil means [Mono]), already
// refreshed once.
func NewCoarse(src Clock) *Coarse {
	if src == nil {
		src = &Mono{}
	}
	c := &Coarse{src: src}
	c.Refresh()
	return c
}

// Now returns the last refreshed reading.
func (c *Coarse) Now() aqm.Time { return aqm.Time(c.t.Load()) }

// Refresh reads the source and publishes its reading, unless another
// goroutine has meanwhile published a later one; it returns the reading now
// published.
func (c *Coarse) Refresh() aqm.Time {
	now := int64(c.src.Now())
	for {
		old := c.t.Load()
		if now <= old {
			return aqm.Time(old)
		}
		if c.t.CompareAndSwap(old, now) {
			return aqm.Time(now)
		}
	}
}

// Run refreshes c every interval until ctx ends, then returns ctx's error.
// It is the ticker that bounds the clock's lag by interval when no consumer
// refreshes it; run it in a goroutine of your own. A non-positive interval
// means 100µs.
func (c *Coarse) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = 100 * time.Microsecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			c.Refresh()
		}
	}
}

// Manual is a clock moved only by its owner: for tests, examples and
// simulation. The zero Manual reads Epoch. It is not safe for concurrent use.
type Manual struct {
	t aqm.Time
}

// NewManual returns a manual clock reading start, or Epoch if start is zero.
func NewManual(start aqm.Time) *Manual { return &Manual{t: start} }

// Now returns the clock's reading.
func (m *Manual) Now() aqm.Time {
	if m.t == 0 {
		m.t = Epoch
	}
	return m.t
}

// Set moves the clock to t, forwards or backwards (queues treat backward time
// as no time passing). Setting zero sets Epoch, since zero means unset.
func (m *Manual) Set(t aqm.Time) { m.t = t }

// Advance moves the clock forward by d (backward if d is negative) and
// returns the new reading.
func (m *Manual) Advance(d time.Duration) aqm.Time {
	m.t = m.Now().Add(d)
	return m.t
}
