package shaper

import (
	"context"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// runBatch is the most packets [Shaper.Run] takes from the queue under one
// lock and one clock reading before it sends them: 64, enough that a
// 10 Gbit/s link with a 2 ms burst (about 1700 full-size frames) needs only
// a few dozen lock round trips per burst, small enough that producers never
// wait long for the lock.
const runBatch = 64

// Shaper releases the packets of an [aqm.Queue] at a configured rate through
// a token bucket. It owns the queue: once a queue is given to [New], use it
// only through the Shaper (or [Shaper.WithQueue]).
//
// All methods are safe for concurrent use. Packets are normally taken out by
// one consumer: either one goroutine in [Shaper.Run], or an event loop that
// calls [Shaper.Next]. Several consumers are safe but share the rate and
// race for the packets.
type Shaper[T any] struct {
	mu      sync.Mutex
	q       aqm.Queue[T]
	clk     clock.Clock
	cfg     Config
	b       bucket
	wakeups uint64
	// wake holds at most one pending wake-up for Run: an arrival into an
	// empty queue, or a new rate.
	wake chan struct{}
}

// Detail is a snapshot of the shaper's own state.
type Detail struct {
	// RateBitsPerSec is the current rate; zero means unlimited.
	RateBitsPerSec uint64
	// BurstBytes is the effective bucket depth in bytes.
	BurstBytes int
	// CreditBytes is the credit in the bucket at the last refill, in whole
	// bytes (rounded down); negative while a sent packet's debt is being
	// repaid.
	CreditBytes int64
	// Wakeups counts the times Run read the clock and looked at the queue.
	Wakeups uint64
}

// New returns a shaper that drives q at cfg's rate, reading time from c (a
// nil c means a new [clock.Mono]). Its bucket starts full. c must be safe for
// concurrent use if the shaper is (clock.Mono is).
func New[T any](q aqm.Queue[T], c clock.Clock, cfg Config) (*Shaper[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if c == nil {
		c = clock.NewMono()
	}
	s := &Shaper[T]{q: q, clk: c, cfg: cfg, wake: make(chan struct{}, 1)}
	s.b.setRate(0, cfg.RateBitsPerSec, cfg.burstBytes())
	s.b.credit = s.b.capacity
	return s, nil
}

// Enqueue offers p to the queue at the clock's current time, read once.
func (s *Shaper[T]) Enqueue(p aqm.Packet[T]) aqm.Verdict {
	s.mu.Lock()
	v := s.enqueueLocked(p, s.clk.Now())
	s.mu.Unlock()
	return v
}

// EnqueueAt is Enqueue at an explicit instant, for callers that read the
// clock once for a batch.
func (s *Shaper[T]) EnqueueAt(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	s.mu.Lock()
	v := s.enqueueLocked(p, now)
	s.mu.Unlock()
	return v
}

func (s *Shaper[T]) enqueueLocked(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	wasEmpty := s.q.Len() == 0
	v := s.q.Enqueue(p, now)
	if wasEmpty && v.Accepted() {
		s.signal()
	}
	return v
}

// signal leaves a wake-up for Run without blocking.
func (s *Shaper[T]) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next is the pull API for event loops. At now it returns the next packet if
// the bucket allows one to leave (ok true, wait zero); the packet is charged
// to the bucket. Otherwise ok is false and wait says how long to wait before
// calling again: positive while the bucket refills (whether or not packets
// are queued), zero when the bucket has credit but the queue is empty (wait
// for the next Enqueue). Call Next until ok is false, then sleep
// for wait; oversleeping costs nothing as long as the lateness stays within
// the burst, since the credit keeps accruing.
//
// The packet comes from the queue's Dequeue at now, so an AQM that decides at
// dequeue time (CoDel, PIE) judges it at the moment it leaves.
func (s *Shaper[T]) Next(now aqm.Time) (p aqm.Packet[T], ok bool, wait time.Duration) {
	s.mu.Lock()
	p, ok, wait = s.nextLocked(now)
	s.mu.Unlock()
	return p, ok, wait
}

func (s *Shaper[T]) nextLocked(now aqm.Time) (aqm.Packet[T], bool, time.Duration) {
	s.b.refill(now)
	if !s.b.ready() {
		return aqm.Packet[T]{}, false, s.b.wait()
	}
	p, ok := s.q.Dequeue(now)
	if !ok {
		return p, false, 0
	}
	s.b.charge(p.Size)
	return p, true, 0
}

// Run sends the queue's packets through send at the configured rate until ctx
// is done, then returns ctx's error. It reads the clock once per wake-up,
// takes every packet that is due at that instant (up to a batch of 64) under
// one lock, and calls send for each outside the lock, in order, so that a
// slow send never blocks producers. Between batches it sleeps on one timer,
// reused for the whole run, until the bucket has credit again, or until an
// arrival into an empty queue or a rate change wakes it. It never spins.
//
// Packets still queued when Run returns stay in the queue. send must not call
// Run or Next; it may call Enqueue or SetRate.
func (s *Shaper[T]) Run(ctx context.Context, send func(aqm.Packet[T])) error {
	batch := make([]aqm.Packet[T], 0, runBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var wait time.Duration
		batch, wait = s.pull(batch[:0])
		for i := range batch {
			send(batch[i])
			batch[i] = aqm.Packet[T]{} // let the payload go
		}
		switch {
		case len(batch) == cap(batch):
			continue // more may be due at once
		case wait == 0:
			// The queue is empty: sleep until an arrival.
			select {
			case <-s.wake:
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
			// Go 1.23 timers: Reset needs no drain and Stop leaves no
			// stale value in the channel.
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-s.wake:
				timer.Stop()
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// pull takes the packets due at one clock reading. wait is the time until
// the bucket allows the next one, or zero if the queue ran empty.
func (s *Shaper[T]) pull(batch []aqm.Packet[T]) ([]aqm.Packet[T], time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	s.wakeups++
	for len(batch) < cap(batch) {
		p, ok, wait := s.nextLocked(now)
		if !ok {
			return batch, wait
		}
		batch = append(batch, p)
	}
	return batch, 0
}

// SetRate changes the rate at the clock's current time; see [Shaper.SetRateAt].
func (s *Shaper[T]) SetRate(bitsPerSec uint64) {
	s.mu.Lock()
	s.setRateLocked(bitsPerSec, s.clk.Now())
	s.mu.Unlock()
}

// SetRateAt changes the rate at now, from any goroutine, as often as the link
// changes (an LTE or satellite rate controller may call it tens of times a
// second). The credit earned up to now is settled at the old rate; a debt
// left by the last packet is repaid at the new rate; a default burst follows
// the new rate. A sleeping Run wakes up to recompute its wait. Queued packets
// are not touched.
func (s *Shaper[T]) SetRateAt(bitsPerSec uint64, now aqm.Time) {
	s.mu.Lock()
	s.setRateLocked(bitsPerSec, now)
	s.mu.Unlock()
}

func (s *Shaper[T]) setRateLocked(rate uint64, now aqm.Time) {
	s.cfg.RateBitsPerSec = rate
	s.b.setRate(now, rate, s.cfg.burstBytes())
	s.signal()
}

// Reconfigure validates cfg and applies its rate and burst at the clock's
// current time, as SetRate does. On error nothing changes.
func (s *Shaper[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	s.cfg = cfg
	s.setRateLocked(cfg.RateBitsPerSec, s.clk.Now())
	s.mu.Unlock()
	return nil
}

// Config returns the current configuration (BurstBytes as configured, zero
// if derived; see [Detail] for the effective value).
func (s *Shaper[T]) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Detail returns a snapshot of the bucket.
func (s *Shaper[T]) Detail() Detail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Detail{
		RateBitsPerSec: s.b.rate,
		BurstBytes:     int(s.b.capacity / unitsPerByte),
		CreditBytes:    s.b.creditBytes(),
		Wakeups:        s.wakeups,
	}
}

// WithQueue calls fn with the queue while holding the shaper's lock, for
// anything the queue offers beyond [aqm.Queue] (an algorithm's Reconfigure
// or Detail). fn must not keep the queue or call the shaper.
func (s *Shaper[T]) WithQueue(fn func(q aqm.Queue[T])) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wasEmpty := s.q.Len() == 0
	fn(s.q)
	if wasEmpty && s.q.Len() > 0 {
		s.signal()
	}
}

// Len returns the number of queued packets.
func (s *Shaper[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.Len()
}

// Backlog returns the number of queued bytes.
func (s *Shaper[T]) Backlog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.Backlog()
}

// Stats returns the queue's counters. Dequeued counts the packets the shaper
// released.
func (s *Shaper[T]) Stats() aqm.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.Stats()
}
