package front

import (
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/internal/bucket"
	"github.com/aqmkit/aqmkit/internal/metrics"
)

// ErrClosed is returned by Enqueue and EnqueueBatch after [Front.Close]
// (with a refusing verdict, so that code that only checks
// [aqm.Verdict.Accepted] keeps the packet), and by the blocking dequeues
// once the front is closed and its queue is empty.
var ErrClosed = errors.New("front: closed")

// errNilQueue is returned by [New] and [NewSharded] for a nil queue.
var errNilQueue = errors.New("front: the queue is nil")

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
	b      bucket.Bucket // the rate, unless shared is set
	shared *sharedRate   // the bucket of a Sharded front, or nil
	// split is the split rate of a Sharded front (ShardedConfig.SplitRate),
	// or nil; slot is this shard's index in it, splitEpoch the epoch of
	// the share b runs at (split.go).
	split      *splitRate
	slot       int
	splitEpoch uint64
	closed     bool
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

// sharedRate is one token bucket shared by the shards of a Sharded front.
// Lock order: a shard's mu, then this mu.
type sharedRate struct {
	mu  sync.Mutex
	cfg Config
	b   bucket.Bucket
}

// Detail is a snapshot of the front's own state, beside the queue's
// [aqm.Stats].
type Detail struct {
	// Rate is the current rate; zero means unlimited.
	Rate aqm.Rate `metric:"rate_bits_per_second,gauge"`
	// BurstBytes is the effective bucket depth in bytes.
	BurstBytes int `metric:"burst_bytes,gauge"`
	// CreditBytes is the credit in the bucket at the last refill, in whole
	// bytes (rounded down); negative while a sent packet's debt is being
	// repaid.
	CreditBytes int64 `metric:"credit_bytes,gauge"`
	// Wakeups counts the consumer's looks at the queue: one lock and one
	// clock reading each, whatever the number of packets taken.
	Wakeups uint64 `metric:"wakeups,counter"`
	// WakeSlack is the wake slack in effect at the current rate (see
	// [Config.WakeSlack]).
	WakeSlack time.Duration `metric:"wake_slack_seconds,gauge"`
	// Closed reports whether Close was called.
	Closed bool `metric:"closed,gauge"`
	// RefusedClosed counts the packets Enqueue and EnqueueBatch refused
	// because the front was closed; the queue never saw them.
	RefusedClosed aqm.Count `metric:"refused_closed,counter"`
	// Flushed counts the packets [Front.Flush] took out of the queue (the
	// queue's Stats count them as dequeued).
	Flushed aqm.Count `metric:"flushed,counter"`
	// Staged is the number of packets a staged front ([Config.Staged])
	// holds handed over and not yet moved into its queue.
	Staged int `metric:"staged_packets,gauge"`
}

var detailMetrics = metrics.Declare[Detail]("front_")

// New returns a front over q that reads time from c and releases packets at
// cfg's rate (none if cfg.Rate is zero); its bucket starts full. A nil c
// means a new [clock.Coarse] over [clock.Mono], which the front refreshes
// itself (see the package doc, Time). c must be safe for concurrent use.
// New returns an error if q is nil or holds a nil pointer (found by
// calling q.Len once), and cfg's validation error if cfg is invalid.
func New[T any](q aqm.Queue[T], c clock.Clock, cfg Config) (*Front[T], error) {
	if unusable(q) {
		return nil, errNilQueue
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
	f.b.SetRate(0, uint64(cfg.Rate), cfg.burstBytes())
	f.b.Fill()
	if cfg.Staged {
		f.st, f.stg = newStage[T]()
	}
	return f, nil
}

// unusable reports whether q is nil or cannot answer Len, as a nil pointer
// in a non-nil interface cannot: the probe finds a typed nil of any queue
// type without reflection, at the cost of one Len call when a front is made.
func unusable[T any](q aqm.Queue[T]) (bad bool) {
	if q == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			bad = true
		}
	}()
	q.Len()
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
func (f *Front[T]) bucketLocked() *bucket.Bucket {
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

// SetRate changes the rate at the clock's current time, from any goroutine,
// as often as the link changes (an LTE or satellite rate controller may call
// it tens of times a second). The credit earned up to now is settled at the
// old rate; a debt left by the last packet is repaid at the new rate; a
// default burst follows the new rate. A sleeping consumer wakes up to
// recompute its wait. Queued packets are not touched. On a shard of a
// [Sharded] front it changes the rate all shards share; prefer
// [Sharded.SetRate], which also wakes the other shards' consumers.
//
// A Front accepts every rate and returns nil; the error gives every front
// and cake.Queue one SetRate shape (an autorate.Setter), and [IP.SetRate]
// uses it to refuse a rate in front of a queue that paces itself.
func (f *Front[T]) SetRate(r aqm.Rate) error {
	f.mu.Lock()
	f.applyLocked(func(c *Config) { c.Rate = r })
	f.mu.Unlock()
	f.signal()
	return nil
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
	if f.split != nil {
		f.splitApplyLocked(now, fn)
		return
	}
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
	b.SetRate(now, uint64(cfg.Rate), cfg.burstBytes())
}

// Config returns the effective configuration: the current rate, and the
// burst in use (the derived default when BurstBytes was zero). Pass a Config
// with BurstBytes zero to Reconfigure to keep the burst following the rate.
// On a shard of a [Sharded] front with a split rate it is the total rate
// the shards share, not this shard's share ([Detail.Rate] says that).
func (f *Front[T]) Config() Config {
	if f.split != nil {
		return f.split.config()
	}
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
		WakeSlack:     cfg.wakeSlack(b.Rate, b.Capacity),
		Rate:          aqm.Rate(b.Rate),
		BurstBytes:    int(b.Capacity / bucket.UnitsPerByte),
		CreditBytes:   b.CreditBytes(),
		Wakeups:       f.wakeups,
		Closed:        f.closed,
		RefusedClosed: f.refusedClosed,
		Flushed:       f.flushed,
	}
	f.unlockBucket()
	d.Staged, _ = f.stagedLen()
	return d
}

// Metrics lists the queue's metrics (its [aqm.Stats], then its Detail's,
// when it is an [aqm.MetricSource], as every queue of this module is; its
// Stats' otherwise) followed by the front's [Detail] metrics, whose names
// all begin "front_" so that they never meet the queue's:
// front_rate_bits_per_second, front_burst_bytes, front_credit_bytes
// (gauges), front_wakeups (counter), front_wake_slack_seconds (gauge),
// front_closed (gauge, 0 or 1), front_refused_closed and front_flushed in
// packets and bytes (counters), and front_staged_packets (gauge). It takes one
// snapshot under the front's lock, so it is safe to call from any
// goroutine (an exporter's HTTP handler, say) while producers and the
// consumer run; the queue's Metrics is called under that lock and must
// take its snapshot when called. It makes a *Front an [aqm.MetricSource].
func (f *Front[T]) Metrics() iter.Seq[aqm.Metric] {
	f.mu.Lock()
	qm, d := queueMetrics(f.q), f.detailLocked()
	f.mu.Unlock()
	return concat(qm, detailMetrics.Of(d))
}

// queueMetrics returns q's metrics: all of them when q is an
// [aqm.MetricSource], its Stats' otherwise. The caller holds the lock that
// guards q.
func queueMetrics[T any](q aqm.Queue[T]) iter.Seq[aqm.Metric] {
	if ms, ok := q.(aqm.MetricSource); ok {
		return ms.Metrics()
	}
	return q.Stats().Metrics()
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
