package router

import (
	"context"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// delayLine is a fixed propagation delay: a bounded FIFO of packets, each
// held until an absolute deadline (its departure from the queue plus the
// delay). Deadlines never decrease along the line: one earlier than the
// last is raised to it, so the order is kept and the head is always the
// next packet due. A full line refuses the packet (the caller drops it).
//
// One goroutine pushes (the queue's consumer), one runs the line (run); the
// line's mutex is held only to move entries.
type delayLine[T any] struct {
	mu    sync.Mutex
	ring  []delayEntry[T] // grows by doubling up to limit, then never again
	head  int
	n     int
	limit int
	// sending counts the packets popDue gave out and done has not yet
	// confirmed: still the line's, for len, until their send ends.
	sending int
	last    aqm.Time // the latest deadline pushed
	closed  bool
	wake    chan struct{} // a push into an empty line, or close
}

type delayEntry[T any] struct {
	v   T
	due aqm.Time
}

// newDelayLine returns a line that holds at most limit packets (at least 1).
func newDelayLine[T any](limit int) *delayLine[T] {
	limit = max(limit, 1)
	return &delayLine[T]{ring: make([]delayEntry[T], min(limit, 64)), limit: limit, wake: make(chan struct{}, 1)}
}

// push appends v with deadline due (raised to the last deadline if earlier)
// and reports whether it was taken: false when the line is full or closed.
func (l *delayLine[T]) push(v T, due aqm.Time) bool {
	l.mu.Lock()
	if l.closed || l.n == l.limit {
		l.mu.Unlock()
		return false
	}
	if l.n == len(l.ring) {
		l.grow()
	}
	if due < l.last {
		due = l.last
	}
	l.last = due
	l.ring[(l.head+l.n)%len(l.ring)] = delayEntry[T]{v, due}
	l.n++
	wasEmpty := l.n == 1
	l.mu.Unlock()
	if wasEmpty {
		l.signal()
	}
	return true
}

func (l *delayLine[T]) grow() {
	r := make([]delayEntry[T], min(2*len(l.ring), l.limit))
	for i := range l.n {
		r[i] = l.ring[(l.head+i)%len(l.ring)]
	}
	l.ring, l.head = r, 0
}

func (l *delayLine[T]) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// popDue moves the packets due at now (deadline at or before now) into out,
// at most len(out), oldest first, and returns how many. next is the head's
// deadline when packets remain, zero when the line is empty; closed reports
// whether close was called.
func (l *delayLine[T]) popDue(now aqm.Time, out []T) (n int, next aqm.Time, closed bool) {
	var zero delayEntry[T]
	l.mu.Lock()
	defer l.mu.Unlock()
	for n < len(out) && l.n > 0 && l.ring[l.head].due <= now {
		out[n] = l.ring[l.head].v
		l.ring[l.head] = zero
		l.head = (l.head + 1) % len(l.ring)
		l.n--
		n++
	}
	l.sending += n
	if l.n > 0 {
		next = l.ring[l.head].due
	}
	return n, next, l.closed
}

// len returns the number of packets held.
func (l *delayLine[T]) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// holding returns len plus the packets popped and not yet done: every
// packet that is still the line's.
func (l *delayLine[T]) holding() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n + l.sending
}

// done says that n popped packets have been sent (or dropped) and are no
// longer the line's.
func (l *delayLine[T]) done(n int) {
	l.mu.Lock()
	l.sending -= n
	l.mu.Unlock()
}

// close refuses further pushes; run returns once the packets held have left.
func (l *delayLine[T]) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.signal()
}

// flush removes every packet held, oldest first, handing each to drop, and
// returns how many.
func (l *delayLine[T]) flush(drop func(T)) int {
	var zero delayEntry[T]
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.n
	for ; l.n > 0; l.n-- {
		drop(l.ring[l.head].v)
		l.ring[l.head] = zero
		l.head = (l.head + 1) % len(l.ring)
	}
	return k
}

// run sends the packets of the line to send as they fall due, in batches of
// up to batch, until the line is closed and empty (it returns nil) or ctx
// ends (it returns ctx's error and leaves what is held). It sleeps on one
// reusable timer until the head's deadline, or on the line's wake-up when
// the line is empty: it never spins. send must not keep the slice.
func (l *delayLine[T]) run(ctx context.Context, clk clock.Clock, batch int, send func([]T)) error {
	out := make([]T, max(batch, 1))
	var zero T
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		now := clk.Now()
		n, next, closed := l.popDue(now, out)
		if n > 0 {
			send(out[:n])
			for i := range n {
				out[i] = zero
			}
			continue
		}
		if next == 0 {
			if closed {
				return nil
			}
			select {
			case <-l.wake:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		timer.Reset(next.Sub(now))
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
