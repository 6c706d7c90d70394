package front

import "github.com/aqmkit/aqmkit/aqm"

// The producers' side of a Front: Enqueue and EnqueueBatch, and waking a
// parked consumer. The consumer's side is in consumer.go, the type and its
// configuration in front.go.

// Enqueue offers p to the queue at the clock's current time, read once under
// the lock, and wakes a blocked consumer if the queue was empty. After
// [Front.Close] it refuses p with [aqm.DroppedOverlimit] and [ErrClosed]
// without offering it to the queue; err is nil otherwise, and the verdict
// is the queue's. On a staged front ([Config.Staged]) p is handed over to
// the consumer instead, and the verdict is [aqm.Enqueued].
func (f *Front[T]) Enqueue(p aqm.Packet[T]) (aqm.Verdict, error) {
	if f.st != nil {
		ps := [1]aqm.Packet[T]{p}
		var v [1]aqm.Verdict
		var clk batchClock
		if f.stageRun(ps[:], v[:], &clk) {
			return v[0], nil
		}
	}
	f.mu.Lock()
	if f.closed {
		f.refusedClosed.Add(p.Size)
		f.mu.Unlock()
		return aqm.DroppedOverlimit, ErrClosed
	}
	f.moveStagedLocked()
	wasEmpty := f.q.Len() == 0
	v := f.q.Enqueue(p, f.read(wasEmpty && f.idle()))
	if wasEmpty && v.Accepted() {
		f.wakeLocked()
	}
	f.mu.Unlock()
	return v, nil
}

// EnqueueBatch offers ps[i] for i in [0, n), n = min(len(ps), len(vs)), under
// one lock at one clock reading, with the queue's burst path when it has one
// ([aqm.BatchQueue]), and writes each packet's verdict into vs[i]: exactly
// what n calls of Enqueue at one instant would do. It returns how many were
// accepted. After [Front.Close] it refuses all n with [aqm.DroppedOverlimit]
// and returns 0 and [ErrClosed]. On a staged front ([Config.Staged]) the n
// packets are handed over to the consumer with one arrival instant, and
// each verdict is [aqm.Enqueued].
func (f *Front[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict) (int, error) {
	n := min(len(ps), len(vs))
	if f.st != nil && n > 0 {
		var clk batchClock
		if f.stageRun(ps[:n], vs[:n], &clk) {
			return n, nil
		}
	}
	f.mu.Lock()
	if f.closed {
		for i := range n {
			f.refusedClosed.Add(ps[i].Size)
			vs[i] = aqm.DroppedOverlimit
		}
		f.mu.Unlock()
		return 0, ErrClosed
	}
	if n == 0 {
		f.mu.Unlock()
		return 0, nil
	}
	f.moveStagedLocked()
	wasEmpty := f.q.Len() == 0
	now := f.read(wasEmpty && f.idle())
	acc := f.enqueueLocked(ps[:n], vs[:n], now)
	if wasEmpty && f.q.Len() > 0 {
		f.wakeLocked()
	}
	f.mu.Unlock()
	return acc, nil
}

// idle reports whether no blocking consumer of this front is awake: then
// the Coarse clock may be as old as the consumer's sleep, and a producer
// that finds the queue empty refreshes it. While a consumer is awake it
// refreshes the clock on each look itself.
func (f *Front[T]) idle() bool {
	return f.cs.looking.Load() == 0 && (f.parent == nil || f.parent.looking.Load() == 0)
}

// wakeLocked is signal for an arrival into an empty queue: it wakes only
// consumers that are parked (or about to park), so that a busy consumer
// costs producers nothing. See consumers for why no wake-up is lost. The
// caller holds f.mu, so that a consumer that finds the arrival in its last
// check before parking (grewFrom) also finds its wake-up and can drop it.
func (f *Front[T]) wakeLocked() {
	if f.cs.waiting.Load() > 0 {
		select {
		case f.ready <- struct{}{}:
		default:
		}
	}
	if f.parent != nil && f.parent.waiting.Load() > 0 {
		select {
		case f.notify <- struct{}{}:
		default:
		}
	}
}
