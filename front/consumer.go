package front

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// The consumer's side of a Front: taking what the rate or a paced queue
// lets leave, parking and waking with the wake slack, Run and Flush. The
// producers' side is in producer.go.

// RunBatch is the most packets [Front.Run] hands to its send function at
// once: 64, enough that a 10 Gbit/s link with a 5 ms burst (about 4100
// full-size frames) needs only about 65 lock round trips per burst, small
// enough that producers never wait long for the lock.
const RunBatch = 64

// consumers counts the blocking consumers of a front by state, so that
// producers wake one only when it sleeps. A consumer counts itself in
// looking while it is inside a blocking dequeue and awake, and moves to
// waiting before it parks; after counting itself in waiting it checks the
// queue once more under the lock before it sleeps. A producer adds its
// packets under the lock and then reads waiting: either the consumer's
// check sees the packets, or the producer sees the consumer waiting and
// wakes it, so no arrival is missed, and a busy consumer is never woken.
//
// A consumer that parks until a departure the rate or a paced queue allows
// (its queue holds packets) also counts itself in timed: an arrival need not
// wake it, and on a staged front, where producers cannot see the queue, the
// hand-over wakes only consumers that wait for an arrival.
type consumers struct {
	waiting atomic.Int32
	looking atomic.Int32
	timed   atomic.Int32
}

// park counts a consumer going to sleep, timed if it waits for a departure.
// timed is counted first, so that a producer that sees the consumer in
// waiting also sees it in timed.
func (c *consumers) park(timed bool) {
	if timed {
		c.timed.Add(1)
	}
	c.waiting.Add(1)
	c.looking.Add(-1)
}

// unpark undoes park.
func (c *consumers) unpark(timed bool) {
	c.looking.Add(1)
	c.waiting.Add(-1)
	if timed {
		c.timed.Add(-1)
	}
}

// awaitArrival reports whether a consumer sleeps until an arrival.
func (c *consumers) awaitArrival() bool {
	return c.waiting.Load() > c.timed.Load()
}

// waitTimer is a reusable timer for blocked consumers: the consumer that
// holds busy uses it; a second concurrent consumer makes its own.
type waitTimer struct {
	timer *time.Timer
	busy  atomic.Bool
}

func (w *waitTimer) init() {
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
}

// sleep waits for a wake-up on ready, for wait if it is positive, for done,
// or for the end of ctx (then it returns ctx's error).
func (w *waitTimer) sleep(ctx context.Context, wait time.Duration, ready, done <-chan struct{}) error {
	if wait <= 0 {
		select {
		case <-ready:
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	t := w.timer
	owned := w.busy.CompareAndSwap(false, true)
	if owned {
		t.Reset(wait) // Go 1.23 timers: no drain needed
	} else {
		t = time.NewTimer(wait)
	}
	var err error
	select {
	case <-t.C:
	case <-ready:
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	t.Stop()
	if owned {
		w.busy.Store(false)
	}
	return err
}

// takeLocked moves up to len(buf) packets that may leave at now into buf and
// returns how many. wait is positive when it stopped because the rate
// allows no more yet while packets wait (the time until it does), zero when
// the queue ran empty or buf is full. The caller holds f.mu.
func (f *Front[T]) takeLocked(buf []aqm.Packet[T], now aqm.Time) (n int, wait time.Duration) {
	f.wakeups++
	f.moveStagedLocked()
	if f.split != nil {
		f.splitLocked(now)
	}
	if f.pq != nil {
		// A paced queue that holds its packets back: learn the wait
		// without a Dequeue that would refuse.
		if w := f.pacedHoldLocked(now); w > 0 {
			return 0, w
		}
	}
	b := f.bucketLocked()
	b.Refill(now)
	if b.Rate == 0 {
		f.unlockBucket()
		if f.bq != nil {
			n = f.bq.DequeueBatch(buf, now)
		} else {
			n = aqm.DequeueLoop(f.q, buf, now)
		}
		if n < len(buf) {
			wait = f.pacedWaitLocked(now)
		}
		return n, wait
	}
	for n < len(buf) {
		if !b.Ready() {
			if f.q.Len() > 0 {
				wait = b.Wait()
			}
			break
		}
		p, ok := f.q.Dequeue(now)
		if !ok {
			wait = f.pacedWaitLocked(now)
			break
		}
		b.Charge(p.Size)
		buf[n] = p
		n++
	}
	f.unlockBucket()
	return n, wait
}

// minPacedWait is the shortest wait for a paced queue that refused a
// packet while saying one may leave now (a contradiction a correct queue
// never shows): the consumer looks again after it instead of spinning.
const minPacedWait = 10 * time.Microsecond

// pacedHoldLocked returns how long a paced queue holds its packets back
// at now: zero if it is empty or a packet may leave. The caller holds
// f.mu and has checked that f.pq is not nil.
func (f *Front[T]) pacedHoldLocked(now aqm.Time) time.Duration {
	if f.q.Len() == 0 {
		return 0
	}
	if next := f.pq.NextDeparture(now); next.After(now) {
		return next.Sub(now)
	}
	return 0
}

// pacedWaitLocked returns how long to wait for a queue that paces its own
// output ([aqm.Paced]) and has just refused to give a packet at now: the
// time until its NextDeparture while it holds packets back, zero if it is
// empty or does not pace. The caller holds f.mu.
func (f *Front[T]) pacedWaitLocked(now aqm.Time) time.Duration {
	if f.pq == nil || f.q.Len() == 0 {
		return 0
	}
	next := f.pq.NextDeparture(now)
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), minPacedWait)
}

// takeOneLocked is takeLocked for one packet, without a slice that would
// escape through the queue's interface.
func (f *Front[T]) takeOneLocked(now aqm.Time) (p aqm.Packet[T], ok bool, wait time.Duration) {
	f.wakeups++
	f.moveStagedLocked()
	if f.split != nil {
		f.splitLocked(now)
	}
	if f.pq != nil {
		if w := f.pacedHoldLocked(now); w > 0 {
			return p, false, w
		}
	}
	b := f.bucketLocked()
	b.Refill(now)
	if !b.Ready() {
		if f.q.Len() > 0 {
			wait = b.Wait()
		}
		f.unlockBucket()
		return p, false, wait
	}
	p, ok = f.q.Dequeue(now)
	if ok {
		b.Charge(p.Size)
	} else {
		wait = f.pacedWaitLocked(now)
	}
	f.unlockBucket()
	return p, ok, wait
}

// tryTake is one look at the queue: take what may leave, report why it
// stopped (with the wake slack a blocking consumer adds to a positive
// wait), and pass the turn on to another consumer if packets are left
// that may leave now.
func (f *Front[T]) tryTake(buf []aqm.Packet[T]) (n int, wait, slack time.Duration, closed bool, left int) {
	f.mu.Lock()
	n, wait = f.takeLocked(buf, f.read(true))
	if wait > 0 {
		slack = f.slackLocked()
	}
	closed = f.closed
	left = f.lenLocked()
	f.mu.Unlock()
	if n > 0 && wait == 0 && left > 0 {
		f.passTurn()
	}
	return n, wait, slack, closed, left
}

// slackLocked returns the wake slack ([Config.WakeSlack]) at the current
// rate of the bucket that governs this front. The caller holds f.mu.
func (f *Front[T]) slackLocked() time.Duration {
	if f.shared != nil {
		f.shared.mu.Lock()
		defer f.shared.mu.Unlock()
		return f.shared.cfg.wakeSlack(f.shared.b.Rate, f.shared.b.Capacity)
	}
	return f.cfg.wakeSlack(f.b.Rate, f.b.Capacity)
}

// passTurn wakes another parked consumer, if any, when packets are left
// that may leave now.
func (f *Front[T]) passTurn() {
	if f.cs.waiting.Load() > 0 {
		select {
		case f.ready <- struct{}{}:
		default:
		}
	}
}

// spinYields is how many times a blocking consumer that found the queue
// empty yields to other goroutines, checking the queue after each, before
// it parks. A yield costs well under a microsecond when nothing else runs.
const spinYields = 3

// park waits, as a blocking consumer whose last look found nothing to take
// and left queued packets, for a wake-up (see sleep). It first counts the
// consumer as waiting and checks once more that nothing arrived since the
// look, and returns at once if something did.
func (f *Front[T]) park(ctx context.Context, wait time.Duration, closed bool, left int) error {
	if wait == 0 {
		// Yield a few times before parking: a producer about to add
		// more then finds the consumer awake and needs no wake-up, and
		// the consumer skips a park and unpark.
		for range spinYields {
			runtime.Gosched()
			if f.grewFrom(left) {
				return nil
			}
		}
	}
	f.cs.park(wait > 0)
	var err error
	if wait > 0 || !f.grewFrom(left) {
		err = f.sleep(ctx, wait, closed)
	}
	f.cs.unpark(wait > 0)
	return err
}

// grewFrom reports whether the queue holds more than left packets. If it
// does, the consumer will look again instead of parking, so it drops the
// wake-up a producer may have left for it (under the lock, where producers
// leave them): a stale wake-up would cut its next sleep short.
func (f *Front[T]) grewFrom(left int) bool {
	f.mu.Lock()
	grew := f.lenLocked() > left
	if grew {
		select {
		case <-f.ready:
		default:
		}
	}
	f.mu.Unlock()
	return grew
}

// TryDequeueBatch is the non-blocking consumer, for event loops: it fills
// buf with up to len(buf) packets that may leave now, under one lock at one
// clock reading, and returns how many. When it returns fewer than len(buf),
// wait says what to do next: positive, packets are queued and the rate
// allows the next one after wait, or a queue that paces its own output
// ([aqm.Paced]) holds its packets back until then (call again then;
// oversleeping costs nothing while the lateness stays within the burst,
// since credit keeps accruing); zero, the queue is empty (wait for an
// Enqueue).
//
// Each packet comes from the queue's Dequeue at the moment it leaves, so an
// AQM that decides at dequeue time (CoDel, PIE) judges its whole sojourn.
func (f *Front[T]) TryDequeueBatch(buf []aqm.Packet[T]) (n int, wait time.Duration) {
	n, wait, _, _, _ = f.tryTake(buf)
	return n, wait
}

// DequeueBatch blocks until at least one packet may leave, then fills buf
// with up to len(buf) packets that may leave at that instant, under one lock
// at one clock reading, and returns how many. With a rate set, or a queue
// that paces its own output ([aqm.Paced]), it sleeps until the next
// departure the rate or the queue allows plus the wake slack
// ([Config.WakeSlack]), on one reusable timer, and never spins; an arrival
// into an empty queue, a rate change, Close or the end of ctx wakes it. It returns 0 and ctx's error if ctx ends first, and 0 and
// [ErrClosed] once the front is closed and its queue empty: packets queued
// before Close are still returned, at the rate. An empty buf returns 0 at
// once.
func (f *Front[T]) DequeueBatch(ctx context.Context, buf []aqm.Packet[T]) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	f.cs.looking.Add(1)
	defer f.cs.looking.Add(-1)
	for {
		n, wait, slack, closed, left := f.tryTake(buf)
		if n > 0 {
			return n, nil
		}
		if closed && wait == 0 {
			return 0, ErrClosed
		}
		if err := f.park(ctx, wait+slack, closed, left); err != nil {
			return 0, err
		}
	}
}

// dequeue is DequeueBatch for one packet.
func (f *Front[T]) dequeue(ctx context.Context) (aqm.Packet[T], error) {
	f.cs.looking.Add(1)
	defer f.cs.looking.Add(-1)
	for {
		f.mu.Lock()
		p, ok, wait := f.takeOneLocked(f.read(true))
		if wait > 0 {
			wait += f.slackLocked()
		}
		closed := f.closed
		left := f.lenLocked()
		f.mu.Unlock()
		if ok && left > 0 {
			f.passTurn()
		}
		if ok {
			return p, nil
		}
		if closed && wait == 0 {
			return p, ErrClosed
		}
		if err := f.park(ctx, wait, closed, left); err != nil {
			return p, err
		}
	}
}

// sleep waits for a wake-up, for wait if it is positive, for Close unless
// closed, or for the end of ctx (then it returns ctx's error).
func (f *Front[T]) sleep(ctx context.Context, wait time.Duration, closed bool) error {
	var done <-chan struct{}
	if !closed {
		done = f.done
	}
	return f.wt.sleep(ctx, wait, f.ready, done)
}

// Run hands the queue's packets to send, in batches of up to [RunBatch]
// taken at one clock reading, at the configured rate, until ctx ends (it
// returns ctx's error) or the front is closed and drained (it returns nil).
// send runs outside the lock, so a slow send never blocks producers; it
// must not keep the slice, which Run reuses, and may call Enqueue, SetRate
// or Close. Packets still queued when ctx ends stay in the queue.
func (f *Front[T]) Run(ctx context.Context, send func([]aqm.Packet[T])) error {
	buf := make([]aqm.Packet[T], RunBatch)
	for {
		n, err := f.DequeueBatch(ctx, buf)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil
			}
			return err
		}
		send(buf[:n])
		clear(buf[:n]) // let the payloads go
	}
}

// Flush takes every queued packet out now, ignoring the rate, and hands each
// to drop (with [aqm.DroppedOverlimit]) unless the queue itself drops it on
// the way out, in which case the queue's DropFunc gets it as usual; so every
// packet still leaves exactly once. It returns how many drop received (a
// nil drop discards them). Flush takes drop, rather than sending the
// packets to the queue's DropFunc, because only the caller knows how to
// release a payload it still holds elsewhere; every front flushes this
// way ([IP.Flush]'s nil drop returns buffers to its pool). drop runs under
// the front's lock and must not call the front; pass the same function you
// gave the queue, to release buffers in one place. Flush after
// Close is the "discard" shutdown; the queue's Stats count flushed packets
// as dequeued, and [Detail.Flushed] counts them apart. A queue that paces
// its own output ([aqm.Paced]) is asked for its held-back packets at the
// instants it names, so it sees time run ahead of the clock; by the time
// policy of package aqm it takes the clock's next, earlier reading as no
// time elapsed.
func (f *Front[T]) Flush(drop aqm.DropFunc[T]) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moveStagedLocked()
	now := f.read(true)
	n := 0
	for refused := 0; ; {
		p, ok := f.q.Dequeue(now)
		if !ok {
			// A paced queue holds packets back until its next
			// departure: ask for them at that instant (a bounded number
			// of times in a row, against a queue that keeps refusing).
			if f.pq == nil || f.q.Len() == 0 || refused == maxFlushRefusals {
				return n
			}
			next := f.pq.NextDeparture(now)
			if !next.After(now) {
				return n
			}
			now = next
			refused++
			continue
		}
		refused = 0
		n++
		f.flushed.Add(p.Size)
		if drop != nil {
			drop(p, aqm.DroppedOverlimit)
		}
	}
}

// maxFlushRefusals bounds how often in a row Flush asks a paced queue at
// its next departure: one ask suffices for a queue that keeps its word.
const maxFlushRefusals = 64
