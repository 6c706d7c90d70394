package front

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// ErrClosed is returned by Enqueue and EnqueueBatch after [Front.Close]
// (with a refusing verdict, so that code that only checks
// [aqm.Verdict.Accepted] keeps the packet), and by the blocking dequeues
// once the front is closed and its queue is empty.
var ErrClosed = errors.New("front: closed")

// ErrNilQueue is returned by [New] and [NewSharded] for a nil queue.
var ErrNilQueue = errors.New("front: the queue is nil")

// RunBatch is the most packets [Front.Run] hands to its send function at
// once: 64, enough that a 10 Gbit/s link with a 2 ms burst (about 1700
// full-size frames) needs only a few dozen lock round trips per burst, small
// enough that producers never wait long for the lock.
const RunBatch = 64

// Front serialises access to one [aqm.Queue] for concurrent producers and a
// blocking consumer, and optionally releases the packets at a rate. Once a
// queue is given to [New], use it only through the Front (or
// [Front.WithQueue]).
//
// All methods are safe for concurrent use.
type Front[T any] struct {
	mu     sync.Mutex
	q      aqm.Queue[T]
	bq     aqm.BatchQueue[T] // q's burst path, or nil
	pq     aqm.Paced         // q, when it paces its own output, or nil
	clk    clock.Clock
	coarse *clock.Coarse // clk, when it is a Coarse clock
	cfg    Config        // as configured: BurstBytes zero when derived
	b      bucket        // the rate, unless shared is set
	shared *sharedRate   // the bucket of a Sharded front, or nil
	closed bool
	// st and stg are the hand-over of a staged front (Config.Staged):
	// the producers' side and the consumer's. Both nil otherwise.
	st  *stage[T]
	stg *staging[T]

	wakeups       uint64
	refusedClosed aqm.Count
	flushed       aqm.Count

	// ready holds at most one pending wake-up for a blocked consumer: an
	// arrival into an empty queue, a rate change, or a turn passed on.
	ready chan struct{}
	// cs tells producers whether a blocking consumer of this front is
	// parked (so an arrival must wake it) or busy (so it needs no wake-up
	// and keeps the clock fresh).
	cs consumers
	// notify is the ready channel of the Sharded front this front is a
	// shard of, or nil; parent is that front's consumer state.
	notify chan struct{}
	parent *consumers
	// done is closed by Close.
	done chan struct{}
	wt   waitTimer
}

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

// sharedRate is one token bucket shared by the shards of a Sharded front.
// Lock order: a shard's mu, then this mu.
type sharedRate struct {
	mu  sync.Mutex
	cfg Config
	b   bucket
}

// Detail is a snapshot of the front's own state, beside the queue's
// [aqm.Stats].
type Detail struct {
	// Rate is the current rate; zero means unlimited.
	Rate aqm.Rate
	// BurstBytes is the effective bucket depth in bytes.
	BurstBytes int
	// CreditBytes is the credit in the bucket at the last refill, in whole
	// bytes (rounded down); negative while a sent packet's debt is being
	// repaid.
	CreditBytes int64
	// Wakeups counts the consumer's looks at the queue: one lock and one
	// clock reading each, whatever the number of packets taken.
	Wakeups uint64
	// WakeSlack is the wake slack in effect at the current rate (see
	// [Config.WakeSlack]).
	WakeSlack time.Duration
	// Closed reports whether Close was called.
	Closed bool
	// RefusedClosed counts the packets Enqueue and EnqueueBatch refused
	// because the front was closed; the queue never saw them.
	RefusedClosed aqm.Count
	// Flushed counts the packets [Front.Flush] took out of the queue (the
	// queue's Stats count them as dequeued).
	Flushed aqm.Count
	// Staged is the number of packets a staged front ([Config.Staged])
	// holds handed over and not yet moved into its queue.
	Staged int
}

// Metrics lists the Detail's values: rate_bits_per_second, burst_bytes,
// credit_bytes (gauges), wakeups (counter), wake_slack_seconds (gauge),
// closed (gauge, 0 or 1), and
// refused_closed and flushed in packets and bytes (counters), and
// staged_packets (gauge).
func (d Detail) Metrics() iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		closed := 0.0
		if d.Closed {
			closed = 1
		}
		ms := [...]aqm.Metric{
			{Name: "rate_bits_per_second", Kind: aqm.Gauge, Value: float64(d.Rate)},
			{Name: "burst_bytes", Kind: aqm.Gauge, Value: float64(d.BurstBytes)},
			{Name: "credit_bytes", Kind: aqm.Gauge, Value: float64(d.CreditBytes)},
			{Name: "wakeups", Kind: aqm.Counter, Value: float64(d.Wakeups)},
			{Name: "wake_slack_seconds", Kind: aqm.Gauge, Value: d.WakeSlack.Seconds()},
			{Name: "closed", Kind: aqm.Gauge, Value: closed},
			{Name: "refused_closed_packets", Kind: aqm.Counter, Value: float64(d.RefusedClosed.Packets)},
			{Name: "refused_closed_bytes", Kind: aqm.Counter, Value: float64(d.RefusedClosed.Bytes)},
			{Name: "flushed_packets", Kind: aqm.Counter, Value: float64(d.Flushed.Packets)},
			{Name: "flushed_bytes", Kind: aqm.Counter, Value: float64(d.Flushed.Bytes)},
			{Name: "staged_packets", Kind: aqm.Gauge, Value: float64(d.Staged)},
		}
		for _, m := range ms {
			if !yield(m) {
				return
			}
		}
	}
}

// New returns a front over q that reads time from c and releases packets at
// cfg's rate (none if cfg.Rate is zero); its bucket starts full. A nil c
// means a new [clock.Coarse] over [clock.Mono], which the front refreshes
// itself (see the package doc, Time). c must be safe for concurrent use.
// New returns [ErrNilQueue] if q is nil and cfg's validation error if cfg is
// invalid.
func New[T any](q aqm.Queue[T], c clock.Clock, cfg Config) (*Front[T], error) {
	if isNil(q) {
		return nil, ErrNilQueue
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if c == nil {
		c = clock.NewCoarse(nil)
	}
	f := &Front[T]{q: q, clk: c, cfg: cfg, ready: make(chan struct{}, 1), done: make(chan struct{})}
	f.bq, _ = q.(aqm.BatchQueue[T])
	f.pq, _ = q.(aqm.Paced)
	f.coarse, _ = c.(*clock.Coarse)
	f.wt.init()
	f.b.setRate(0, uint64(cfg.Rate), cfg.burstBytes())
	f.b.credit = f.b.capacity
	if cfg.Staged {
		f.st, f.stg = newStage[T]()
	}
	return f, nil
}

// isNil reports whether q is nil or a nil pointer in an interface.
func isNil(q any) bool {
	if q == nil {
		return true
	}
	v := reflect.ValueOf(q)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// read reads the clock; refresh asks a Coarse clock for a fresh reading.
func (f *Front[T]) read(refresh bool) aqm.Time {
	if f.coarse != nil {
		if refresh {
			return f.coarse.Refresh()
		}
		return f.coarse.Now()
	}
	return f.clk.Now()
}

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

// signal leaves a wake-up for a blocked consumer without blocking.
func (f *Front[T]) signal() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
	if f.notify != nil {
		select {
		case f.notify <- struct{}{}:
		default:
		}
	}
}

// bucketLocked returns the bucket that governs this front, locking the
// shared one if there is one; unlock with unlockBucket.
func (f *Front[T]) bucketLocked() *bucket {
	if f.shared != nil {
		f.shared.mu.Lock()
		return &f.shared.b
	}
	return &f.b
}

func (f *Front[T]) unlockBucket() {
	if f.shared != nil {
		f.shared.mu.Unlock()
	}
}

// takeLocked moves up to len(buf) packets that may leave at now into buf and
// returns how many. wait is positive when it stopped because the rate
// allows no more yet while packets wait (the time until it does), zero when
// the queue ran empty or buf is full. The caller holds f.mu.
func (f *Front[T]) takeLocked(buf []aqm.Packet[T], now aqm.Time) (n int, wait time.Duration) {
	f.wakeups++
	f.moveStagedLocked()
	if f.pq != nil {
		// A paced queue that holds its packets back: learn the wait
		// without a Dequeue that would refuse.
		if w := f.pacedHoldLocked(now); w > 0 {
			return 0, w
		}
	}
	b := f.bucketLocked()
	b.refill(now)
	if b.rate == 0 {
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
		if !b.ready() {
			if f.q.Len() > 0 {
				wait = b.wait()
			}
			break
		}
		p, ok := f.q.Dequeue(now)
		if !ok {
			wait = f.pacedWaitLocked(now)
			break
		}
		b.charge(p.Size)
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
	if f.pq != nil {
		if w := f.pacedHoldLocked(now); w > 0 {
			return p, false, w
		}
	}
	b := f.bucketLocked()
	b.refill(now)
	if !b.ready() {
		if f.q.Len() > 0 {
			wait = b.wait()
		}
		f.unlockBucket()
		return p, false, wait
	}
	p, ok = f.q.Dequeue(now)
	if ok {
		b.charge(p.Size)
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
		return f.shared.cfg.wakeSlack(f.shared.b.rate, f.shared.b.capacity)
	}
	return f.cfg.wakeSlack(f.b.rate, f.b.capacity)
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

// Dequeue is DequeueBatch for one packet.
func (f *Front[T]) Dequeue(ctx context.Context) (aqm.Packet[T], error) {
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

// Close refuses further packets (Enqueue returns [ErrClosed]) and wakes
// every blocked consumer. Consumers keep taking what is queued, at the
// rate, and then get ErrClosed; to discard the rest instead, call
// [Front.Flush] after Close. Close is idempotent.
func (f *Front[T]) Close() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		if f.st != nil {
			f.st.mu.Lock()
			f.st.closed = true
			f.st.mu.Unlock()
		}
		close(f.done)
	}
	f.mu.Unlock()
}

// Closed reports whether Close was called.
func (f *Front[T]) Closed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Flush takes every queued packet out now, ignoring the rate, and hands each
// to drop (with [aqm.DroppedOverlimit]) unless the queue itself drops it on
// the way out, in which case the queue's DropFunc gets it as usual; so every
// packet still leaves exactly once. It returns how many drop received (a
// nil drop discards them). drop runs under the front's lock and must not
// call the front; pass the same
// function you gave the queue, to release buffers in one place. Flush after
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

// SetRate changes the rate at the clock's current time, from any goroutine,
// as often as the link changes (an LTE or satellite rate controller may call
// it tens of times a second). The credit earned up to now is settled at the
// old rate; a debt left by the last packet is repaid at the new rate; a
// default burst follows the new rate. A sleeping consumer wakes up to
// recompute its wait. Queued packets are not touched. On a shard of a
// [Sharded] front it changes the rate all shards share; prefer
// [Sharded.SetRate], which also wakes the other shards' consumers.
func (f *Front[T]) SetRate(r aqm.Rate) {
	f.mu.Lock()
	f.applyLocked(func(c *Config) { c.Rate = r })
	f.mu.Unlock()
	f.signal()
}

// Reconfigure validates cfg and applies its rate and burst at the clock's
// current time, as SetRate does. On error nothing changes.
func (f *Front[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Staged != (f.st != nil) {
		return &aqm.ConfigError{Pkg: "front", Field: "Staged", Value: cfg.Staged, Rule: "is fixed when the front is made"}
	}
	f.mu.Lock()
	f.applyLocked(func(c *Config) { *c = cfg })
	f.mu.Unlock()
	f.signal()
	return nil
}

// applyLocked changes the configuration with fn and settles the bucket.
func (f *Front[T]) applyLocked(fn func(*Config)) {
	now := f.read(true)
	cfg := &f.cfg
	if f.shared != nil {
		f.shared.mu.Lock()
		defer f.shared.mu.Unlock()
		cfg = &f.shared.cfg
	}
	fn(cfg)
	b := &f.b
	if f.shared != nil {
		b = &f.shared.b
	}
	b.setRate(now, uint64(cfg.Rate), cfg.burstBytes())
}

// Config returns the effective configuration: the current rate, and the
// burst in use (the derived default when BurstBytes was zero). Pass a Config
// with BurstBytes zero to Reconfigure to keep the burst following the rate.
func (f *Front[T]) Config() Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shared != nil {
		f.shared.mu.Lock()
		defer f.shared.mu.Unlock()
		return f.shared.cfg.withDefaults()
	}
	return f.cfg.withDefaults()
}

// Detail returns a snapshot of the front's own state.
func (f *Front[T]) Detail() Detail {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.detailLocked()
}

func (f *Front[T]) detailLocked() Detail {
	b := f.bucketLocked()
	cfg := &f.cfg
	if f.shared != nil {
		cfg = &f.shared.cfg
	}
	d := Detail{
		WakeSlack:     cfg.wakeSlack(b.rate, b.capacity),
		Rate:          aqm.Rate(b.rate),
		BurstBytes:    int(b.capacity / unitsPerByte),
		CreditBytes:   b.creditBytes(),
		Wakeups:       f.wakeups,
		Closed:        f.closed,
		RefusedClosed: f.refusedClosed,
		Flushed:       f.flushed,
	}
	f.unlockBucket()
	d.Staged, _ = f.stagedLen()
	return d
}

// Metrics lists the queue's [aqm.Stats] metrics followed by the front's
// [Detail] metrics, from one snapshot taken under the front's lock, so it
// is safe to call from any goroutine (an exporter's HTTP handler, say)
// while producers and the consumer run. It makes a *Front an
// [aqm.MetricSource].
func (f *Front[T]) Metrics() iter.Seq[aqm.Metric] {
	f.mu.Lock()
	st, d := f.q.Stats(), f.detailLocked()
	f.mu.Unlock()
	return concat(st.Metrics(), d.Metrics())
}

func concat(seqs ...iter.Seq[aqm.Metric]) iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		for _, s := range seqs {
			for m := range s {
				if !yield(m) {
					return
				}
			}
		}
	}
}

// WithQueue calls fn with the queue while holding the front's lock, for
// anything the queue offers beyond [aqm.Queue] (an algorithm's Reconfigure or
// Detail). fn must not keep the queue or call the front. A consumer is woken
// if fn left packets in a queue that was empty.
func (f *Front[T]) WithQueue(fn func(q aqm.Queue[T])) {
	f.mu.Lock()
	f.moveStagedLocked()
	wasEmpty := f.q.Len() == 0
	fn(f.q)
	if wasEmpty && f.q.Len() > 0 {
		f.wakeLocked()
	}
	f.mu.Unlock()
}

// Len returns the number of queued packets, including those handed over to
// a staged front's consumer and not yet in the queue.
func (f *Front[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lenLocked()
}

// Backlog returns the number of queued bytes, including those handed over
// to a staged front's consumer and not yet in the queue.
func (f *Front[T]) Backlog() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, b := f.stagedLen()
	return f.q.Backlog() + b
}

// Stats returns a snapshot of the queue's counters. Dequeued counts the
// packets the front released (and any it flushed). On a staged front,
// packets handed over and not yet moved into the queue are not in Stats
// yet; [Detail.Staged] counts them.
func (f *Front[T]) Stats() aqm.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.q.Stats()
}
