// Package clock supplies the time that aqmkit's queues take as an argument.
//
// The algorithms never read a clock: every per-packet method takes now. This
// package holds the clocks a caller reads instead, and [Wrap], which binds a
// queue to a clock for callers who would rather not pass time around.
//
//   - [Mono] reads the runtime's monotonic clock; it never returns zero.
//   - [Manual] is set and advanced by hand, for tests and simulation.
//   - [Cached] remembers one reading until refreshed, for loops that handle
//     a batch of packets at one instant.
//
// # Differences and decisions
//
// Clock is the one-method interface Now() aqm.Time (the minimum of the
// k8s PassiveClock), not a wide interface with timers and sleeps: queues
// need instants, never wake-ups. Readings are int64 nanoseconds, not
// time.Time, so that one reading costs a subtraction after the runtime's
// own clock read. A time.Now call costs tens of nanoseconds on a virtual
// machine, as much as a whole AQM decision, so hot loops should read a clock
// once per batch ([Cached]), not once per packet.
//
// # Concurrency
//
// Mono is safe for concurrent use. Manual and Cached are not.
package clock

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Clock tells the time.
type Clock interface {
	// Now returns the current instant; never the zero Time.
	Now() aqm.Time
}

// Func adapts a function to [Clock].
type Func func() aqm.Time

// Now calls f.
func (f Func) Now() aqm.Time { return f() }

// Epoch is the first reading of a [Mono] clock created by [NewMono] and the
// initial reading of a [Manual] clock: one second, so that zero (unset) and
// small negative differences never look like real instants.
const Epoch = aqm.Time(time.Second)

// Mono reads the runtime's monotonic clock. Its readings are nanoseconds since
// the clock was created, plus [Epoch]. The zero Mono is not valid; use
// [NewMono].
type Mono struct {
	base time.Time
}

// NewMono returns a monotonic clock that reads Epoch now.
func NewMono() *Mono { return &Mono{base: time.Now()} }

// Now returns the time since the clock was created, plus Epoch.
func (m *Mono) Now() aqm.Time { return Epoch + aqm.Time(time.Since(m.base)) }

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

// Cached holds one reading of another clock until [Cached.Refresh]: a caller
// handling a batch of packets reads the real clock once and hands the same
// instant to every Enqueue and Dequeue of the batch. It is not safe for
// concurrent use.
type Cached struct {
	src Clock
	t   aqm.Time
}

// NewCached returns a cached clock over src, already refreshed once.
func NewCached(src Clock) *Cached {
	c := &Cached{src: src}
	c.Refresh()
	return c
}

// Refresh reads the source clock and returns the new reading.
func (c *Cached) Refresh() aqm.Time {
	c.t = c.src.Now()
	return c.t
}

// Now returns the reading taken by the last Refresh.
func (c *Cached) Now() aqm.Time { return c.t }
