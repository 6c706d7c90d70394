package front

import (
	"context"
	"errors"
	"sync"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// ErrClosed is returned by the blocking dequeues once the front is closed and
// its queue is empty.
var ErrClosed = errors.New("front: closed")

// Front serialises access to one [aqm.Queue] for concurrent producers and a
// blocking consumer. Once a queue is given to [New], use it only through the
// Front (or [Front.WithQueue]).
type Front[T any] struct {
	mu     sync.Mutex
	q      aqm.Queue[T]
	clk    clock.Clock
	closed bool
	// ready holds at most one pending wake-up for a blocked consumer.
	ready chan struct{}
	// done is closed by Close.
	done chan struct{}
}

// New returns a front over q that reads time from c (a nil c means a new
// [clock.Mono]).
func New[T any](q aqm.Queue[T], c clock.Clock) *Front[T] {
	if c == nil {
		c = clock.NewMono()
	}
	return &Front[T]{q: q, clk: c, ready: make(chan struct{}, 1), done: make(chan struct{})}
}

// Enqueue offers p to the queue at the clock's current time, read once under
// the lock, and wakes a blocked consumer if the queue was empty. After Close
// it refuses every packet with [aqm.DroppedOverlimit] without offering it to
// the queue (so the queue's counters do not see it).
func (f *Front[T]) Enqueue(p aqm.Packet[T]) aqm.Verdict {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return aqm.DroppedOverlimit
	}
	wasEmpty := f.q.Len() == 0
	v := f.q.Enqueue(p, f.clk.Now())
	f.mu.Unlock()
	if wasEmpty && v.Accepted() {
		f.signal()
	}
	return v
}

func (f *Front[T]) signal() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// TryDequeue takes the next packet without blocking; ok is false if the
// queue is empty (after any drops the queue made at dequeue time).
func (f *Front[T]) TryDequeue() (p aqm.Packet[T], ok bool) {
	f.mu.Lock()
	p, ok = f.q.Dequeue(f.clk.Now())
	more := ok && f.q.Len() > 0
	f.mu.Unlock()
	if more {
		f.signal() // pass the turn on to another consumer, if any
	}
	return p, ok
}

// Dequeue takes the next packet, blocking until there is one. It returns
// ctx's error if ctx ends first, and [ErrClosed] once the front is closed and
// empty; packets queued before Close are still returned.
func (f *Front[T]) Dequeue(ctx context.Context) (aqm.Packet[T], error) {
	for {
		p, ok := f.TryDequeue()
		if ok {
			return p, nil
		}
		if err := f.wait(ctx); err != nil {
			return p, err
		}
	}
}

// DequeueBatch blocks like Dequeue until at least one packet is ready, then
// fills buf with up to len(buf) packets taken under one lock at one clock
// reading, and returns how many it took. It returns 0 and an error on the
// same conditions as Dequeue; an empty buf returns 0 at once.
func (f *Front[T]) DequeueBatch(ctx context.Context, buf []aqm.Packet[T]) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	for {
		f.mu.Lock()
		now := f.clk.Now()
		n := 0
		for n < len(buf) {
			p, ok := f.q.Dequeue(now)
			if !ok {
				break
			}
			buf[n] = p
			n++
		}
		more := n > 0 && f.q.Len() > 0
		f.mu.Unlock()
		if more {
			f.signal()
		}
		if n > 0 {
			return n, nil
		}
		if err := f.wait(ctx); err != nil {
			return 0, err
		}
	}
}

// wait blocks until a wake-up, returning an error if ctx ends or the front
// is closed and empty first.
func (f *Front[T]) wait(ctx context.Context) error {
	select {
	case <-f.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-f.done:
		f.mu.Lock()
		empty := f.q.Len() == 0
		f.mu.Unlock()
		if empty {
			return ErrClosed
		}
		return nil
	}
}

// Close refuses further packets and wakes every blocked consumer; they drain
// what is queued and then get [ErrClosed]. Close is idempotent.
func (f *Front[T]) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.done)
	}
}

// WithQueue calls fn with the queue while holding the front's lock, for
// anything the queue offers beyond [aqm.Queue] (an algorithm's Reconfigure or
// Detail). fn must not keep the queue or call the front. A consumer is woken
// if fn left packets in a queue that was empty.
func (f *Front[T]) WithQueue(fn func(q aqm.Queue[T])) {
	f.mu.Lock()
	wasEmpty := f.q.Len() == 0
	fn(f.q)
	wake := wasEmpty && f.q.Len() > 0
	f.mu.Unlock()
	if wake {
		f.signal()
	}
}

// Len returns the number of queued packets.
func (f *Front[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.q.Len()
}

// Backlog returns the number of queued bytes.
func (f *Front[T]) Backlog() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.q.Backlog()
}

// Stats returns a snapshot of the queue's counters.
func (f *Front[T]) Stats() aqm.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.q.Stats()
}
