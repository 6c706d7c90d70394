package clock

import "github.com/aqmkit/aqmkit/aqm"

// Bound is a queue bound to a clock: its Enqueue and Dequeue read the clock
// once per call, the way rate.Limiter.Allow is AllowN(time.Now(), 1). Hot
// loops should pass time themselves (one reading per batch) through
// [Bound.Queue] or [Cached].
type Bound[T any] struct {
	q aqm.Queue[T]
	c Clock
}

// Wrap binds q to c.
func Wrap[T any](q aqm.Queue[T], c Clock) *Bound[T] { return &Bound[T]{q: q, c: c} }

// Enqueue offers p to the queue at the clock's current time.
func (b *Bound[T]) Enqueue(p aqm.Packet[T]) aqm.Verdict { return b.q.Enqueue(p, b.c.Now()) }

// Dequeue takes the next packet at the clock's current time.
func (b *Bound[T]) Dequeue() (aqm.Packet[T], bool) { return b.q.Dequeue(b.c.Now()) }

// Queue returns the underlying queue, for its counters and for calls at an
// explicit instant.
func (b *Bound[T]) Queue() aqm.Queue[T] { return b.q }
