package front

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/internal/bucket"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Sharded spreads packets over N shards by flow hash, each a [Front] with
// its own queue and lock, the way Linux runs one qdisc per transmit queue
// under mq and gVisor's fifo qdisc runs one dispatcher per core. Producers
// on different cores then rarely meet on a lock, and each flow's state
// stays in one shard's memory. Every packet of a flow (the same
// [aqm.Packet.Hash]) goes to the same shard, so its order is kept; fairness
// and the AQM's view hold within a shard, not across shards.
//
// Consume it either per shard, with one goroutine on each [Sharded.Shard]
// (the gVisor and mq shape), or from one goroutine with
// [Sharded.DequeueBatch] or [Sharded.Run], which visit the shards in turn.
// With a fair queue in each shard, set [Config.Staged] and use per-shard
// consumers: each shard's queue then works on its consumer's core (see the
// package doc, Staged hand-over).
//
// # Shared rate
//
// With a Rate, one token bucket serves all shards: the sum of what leaves
// all shards follows the rate and burst exactly as one [Front] would. The
// budget goes to whichever consumer asks first while the bucket is not in
// debt. The round-robin consumer visits the shards in turn, starting one
// shard further each time, and takes at most ceil(len(buf)/N) packets from
// each per turn, so backlogged shards share the rate about equally by
// packet count (not bytes), whatever their number of flows. Per-shard
// consumers share it in the order they wake. A Sharded without a rate has
// no shared state at all.
//
// # Split rate
//
// With [ShardedConfig.SplitRate], each shard has a bucket of its own at a
// share of the rate, and a consumer's look locks only its shard: no lock is
// shared per packet. The shares follow the bytes offered to each shard (an
// average over the last few periods), so that on a saturated link a shard
// offered three times another's load gets three times its share, as one
// queue at the link would give it. They are recomputed every
// [ShardedConfig.SplitPeriod] (2 ms by default) of the clock by whichever
// consumer's look finds the period over, and always sum to the rate. A
// shard with packets queued never gets a zero share (it asks for at least
// an eighth of its backlog per period and 1/(8 N) of the total), and one
// that wakes up with packets on the smallest share rebalances at once; an
// idle shard's share goes to the busy ones. Each shard's bucket depth is
// the burst in proportion to its share, at least one 1514-byte frame, so
// with N shards the bytes released in any interval t are at most
//
//	B + N·(1514 + M) + r·t
//
// and the rate in the long run. The shared bucket stays the default: it
// is exact, with the bound of one [Front].
//
// All methods are safe for concurrent use.
type Sharded[T any] struct {
	cfg       ShardedConfig // the fixed fields in effect; Config from shard 0
	shards    []*Front[T]
	shared    *sharedRate
	split     *splitRate // with ShardedConfig.SplitRate, instead of shared
	clk       clock.Clock
	coarse    *clock.Coarse
	key       uint64
	n         uint64
	next      atomic.Uint32 // the round-robin start
	ready     chan struct{}
	cs        consumers // the round-robin consumers'
	done      chan struct{}
	closed    atomic.Bool
	closeOnce sync.Once
	// scratch holds the per-shard runs of EnqueueBatch; they are handed
	// to the queues' burst paths, so they cannot live on the stack.
	scratch sync.Pool
	wt      waitTimer
}

type scratch[T any] struct {
	pkts [shardChunk]aqm.Packet[T]
	vts  [shardChunk]aqm.Verdict
}

// NewSharded returns a sharded front of cfg.Shards shards (zero means
// runtime.GOMAXPROCS(0)); shard i's queue is newQueue(i). The clock c is
// shared by all shards (nil means one [clock.Coarse] they all refresh).
// It returns newQueue's first error, an error if newQueue returns a nil
// queue, or cfg's validation error.
func NewSharded[T any](newQueue func(shard int) (aqm.Queue[T], error), c clock.Clock, cfg ShardedConfig) (*Sharded[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if newQueue == nil {
		return nil, errNilQueue
	}
	n := cfg.Shards
	if n == 0 {
		n = min(runtime.GOMAXPROCS(0), maxShards)
	}
	if c == nil {
		c = clock.NewCoarse(nil)
	}
	s := &Sharded[T]{
		shards: make([]*Front[T], n),
		clk:    c,
		key:    rng.SeedOrRandom(cfg.Seed),
		n:      uint64(n),
		ready:  make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	s.cfg = ShardedConfig{Shards: n, SplitRate: cfg.SplitRate, Seed: s.key}
	if cfg.SplitRate {
		s.cfg.SplitPeriod = cmp.Or(cfg.SplitPeriod, defaultSplitPeriod)
	}
	s.coarse, _ = c.(*clock.Coarse)
	s.scratch.New = func() any { return new(scratch[T]) }
	s.wt.init()
	s.shared = &sharedRate{cfg: cfg.Config}
	s.shared.b.SetRate(0, uint64(cfg.Rate), cfg.Config.burstBytes())
	s.shared.b.Fill()
	if cfg.SplitRate {
		s.split = newSplitRate(n, cfg.Config, cfg.SplitPeriod)
	}
	for i := range n {
		q, err := newQueue(i)
		if err != nil {
			return nil, err
		}
		f, err := New(q, c, Config{Staged: cfg.Staged, WakeSlack: cfg.WakeSlack})
		if err != nil {
			return nil, err
		}
		if sp := s.split; sp != nil {
			sl := &sp.slots[i]
			f.split, f.slot, f.splitEpoch = sp, i, sp.epoch.Load()
			f.b.SetRate(0, sl.share.Load(), int(sl.depth.Load()))
			f.b.Fill()
			sl.wake = f.signal
		} else {
			f.shared = s.shared
		}
		f.notify = s.ready
		f.parent = &s.cs
		s.shards[i] = f
	}
	return s, nil
}

// Shard returns shard i, a [Front] over shard i's queue, for a per-shard
// consumer or for its own Stats and WithQueue, and false if i is not in
// [0, Config().Shards).
func (s *Sharded[T]) Shard(i int) (*Front[T], bool) {
	if i < 0 || i >= len(s.shards) {
		return nil, false
	}
	return s.shards[i], true
}

// shardOf returns the shard a packet with this Hash goes to. The mapping is
// keyed by the configuration's Seed and mixes all 32 bits of the hash, so
// it does not favour the bits a queue's own bucket mapping uses.
func (s *Sharded[T]) shardOf(hash uint32) int {
	// A 64-bit multiplicative mix of the keyed hash (odd constant: 2^64/φ),
	// then Lemire's multiply-shift range reduction of its top 32 bits.
	x := (uint64(hash) ^ s.key) * 0x9e3779b97f4a7c15
	x ^= x >> 29
	return int((x >> 32) * s.n >> 32)
}

// Enqueue offers p to its shard; see [Front.Enqueue].
func (s *Sharded[T]) Enqueue(p aqm.Packet[T]) (aqm.Verdict, error) {
	return s.shards[s.shardOf(p.Hash)].Enqueue(p)
}

// shardChunk is how many packets EnqueueBatch sorts by shard at a time, on
// the stack.
const shardChunk = 128

// EnqueueBatch offers ps[i] for i in [0, n), n = min(len(ps), len(vs)), each
// to its shard, with one lock and the shard queue's burst path per shard
// touched and one clock reading for the whole call, writing each packet's
// verdict into vs[i]. Each shard sees its packets in their order in ps, so
// the outcome is exactly that of n calls of Enqueue at one instant. It
// returns how many were accepted; after Close it refuses all with
// [aqm.DroppedOverlimit] and returns [ErrClosed].
func (s *Sharded[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict) (int, error) {
	n := min(len(ps), len(vs))
	var (
		idx    [shardChunk]uint8
		order  [shardChunk]uint8
		count  [maxShards + 1]uint16
		acc    int
		clk    batchClock
		closed bool
	)
	if n == 0 {
		return 0, nil
	}
	sc := s.scratch.Get().(*scratch[T])
	defer s.scratch.Put(sc)
	pkts, vts := sc.pkts[:], sc.vts[:]
	for base := 0; base < n; base += shardChunk {
		m := min(n-base, shardChunk)
		chunk := ps[base : base+m]
		// Counting sort of the chunk's positions by shard, stable.
		clear(count[:s.n+1])
		for i := range chunk {
			k := s.shardOf(chunk[i].Hash)
			idx[i] = uint8(k)
			count[k+1]++
		}
		for k := 1; k <= int(s.n); k++ {
			count[k] += count[k-1]
		}
		for i := range m {
			k := idx[i]
			order[count[k]] = uint8(i)
			count[k]++
		}
		// count[k] is now the end of shard k's run in order.
		start := 0
		for k := 0; k < int(s.n); k++ {
			end := int(count[k])
			if end == start {
				continue
			}
			run := order[start:end]
			for j, i := range run {
				pkts[j] = chunk[i]
			}
			f := s.shards[k]
			if f.st != nil && f.stageRun(pkts[:len(run)], vts[:len(run)], &clk) {
				acc += len(run)
			} else if f.mu.Lock(); f.closed {
				for j, i := range run {
					f.refusedClosed.Add(chunk[i].Size)
					vts[j] = aqm.DroppedOverlimit
				}
				closed = true
				f.mu.Unlock()
			} else {
				// One clock reading per call; it is refreshed (once) if
				// any shard it lands in was empty, as Front.Enqueue does.
				f.moveStagedLocked()
				wasEmpty := f.q.Len() == 0
				now := clk.at(wasEmpty && f.idle(), s.read)
				acc += f.enqueueLocked(pkts[:len(run)], vts[:len(run)], now)
				if wasEmpty && f.q.Len() > 0 {
					f.wakeLocked()
				}
				f.mu.Unlock()
			}
			for j, i := range run {
				vs[base+int(i)] = vts[j]
			}
			clear(pkts[:len(run)])
			start = end
		}
	}
	if closed {
		return acc, ErrClosed
	}
	return acc, nil
}

// read reads the shared clock; refresh asks a Coarse clock for a fresh
// reading.
func (s *Sharded[T]) read(refresh bool) aqm.Time {
	if s.coarse != nil {
		if refresh {
			return s.coarse.Refresh()
		}
		return s.coarse.Now()
	}
	return s.clk.Now()
}

// TryDequeueBatch is the round-robin, non-blocking consumer: it visits the
// shards in turn at one clock reading (see [Sharded] for the order) and
// fills buf with up to len(buf) packets that may leave now. When it returns
// fewer than len(buf), wait is positive if the rate allows the next packet
// after wait, zero if every shard is empty.
func (s *Sharded[T]) TryDequeueBatch(buf []aqm.Packet[T]) (n int, wait time.Duration) {
	n, wait, _, _ = s.tryTake(buf)
	return n, wait
}

// tryTake is one look of the round-robin consumer; left is the number of
// packets the shards held after it.
func (s *Sharded[T]) tryTake(buf []aqm.Packet[T]) (n int, wait time.Duration, closedEmpty bool, left int) {
	if len(buf) == 0 {
		return 0, 0, false, 0
	}
	now := s.read(true)
	quota := (len(buf) + int(s.n) - 1) / int(s.n)
	start := int(s.next.Load())
	last := -1 // the last shard that gave a packet
	closedEmpty = true
	for full := false; !full; {
		progress := false
		left = 0
		for k := range int(s.n) {
			if n == len(buf) {
				full = true
				break
			}
			i := (start + k) % int(s.n)
			f := s.shards[i]
			f.mu.Lock()
			m, w := f.takeLocked(buf[n:min(n+quota, len(buf))], now)
			l := f.lenLocked()
			left += l
			if !f.closed || l > 0 {
				closedEmpty = false
			}
			f.mu.Unlock()
			n += m
			if m > 0 {
				last = i
			}
			if m == quota {
				progress = true
			}
			if w > 0 && (wait == 0 || w < wait) {
				wait = w // the earliest: a shared bucket's, or a paced shard's
			}
		}
		if !progress || wait > 0 {
			break
		}
	}
	// The next look starts after the last shard that gave a packet, so
	// that the shard served first takes turns however many looks find
	// nothing.
	if last >= 0 {
		s.next.Store(uint32((last + 1) % int(s.n)))
	}
	if n == len(buf) {
		wait = 0
	}
	return n, wait, closedEmpty && n == 0 && wait == 0, left
}

// DequeueBatch is the round-robin, blocking consumer: [Front.DequeueBatch]
// over all shards. It returns [ErrClosed] once the front is closed and
// every shard is empty.
func (s *Sharded[T]) DequeueBatch(ctx context.Context, buf []aqm.Packet[T]) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	s.cs.looking.Add(1)
	defer s.cs.looking.Add(-1)
	for {
		// Loaded before the look: once it is true, every shard was closed
		// before the look, so closedEmpty is final; while it is false,
		// the wait below includes done, which Close closes after it.
		closed := s.closed.Load()
		n, wait, closedEmpty, left := s.tryTake(buf)
		if n > 0 {
			return n, nil
		}
		if closed && closedEmpty {
			return 0, ErrClosed
		}
		var done <-chan struct{}
		if !closed {
			done = s.done
		}
		if wait > 0 {
			wait += s.slack()
		}
		if err := s.park(ctx, wait, done, left); err != nil {
			return 0, err
		}
	}
}

// slack returns the wake slack ([Config.WakeSlack]) at the shared rate.
func (s *Sharded[T]) slack() time.Duration {
	if sp := s.split; sp != nil {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		return sp.cfg.wakeSlack(sp.rate, int64(sp.burst)*bucket.UnitsPerByte)
	}
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	return s.shared.cfg.wakeSlack(s.shared.b.Rate, s.shared.b.Capacity)
}

// park is [Front.park] for the round-robin consumer, over all shards.
func (s *Sharded[T]) park(ctx context.Context, wait time.Duration, done <-chan struct{}, left int) error {
	if wait == 0 {
		for range spinYields {
			runtime.Gosched()
			if s.Len() > left {
				return nil
			}
		}
	}
	s.cs.park(wait > 0)
	var err error
	if wait > 0 || s.Len() <= left {
		err = s.wt.sleep(ctx, wait, s.ready, done)
	} else {
		select {
		case <-s.ready:
		default:
		}
	}
	s.cs.unpark(wait > 0)
	return err
}

// Run is [Front.Run] over all shards with the round-robin consumer.
func (s *Sharded[T]) Run(ctx context.Context, send func([]aqm.Packet[T])) error {
	buf := make([]aqm.Packet[T], RunBatch)
	for {
		n, err := s.DequeueBatch(ctx, buf)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil
			}
			return err
		}
		send(buf[:n])
		clear(buf[:n])
	}
}

// Close closes every shard (see [Front.Close]) and wakes the round-robin
// consumer. It is idempotent.
func (s *Sharded[T]) Close() {
	s.closeOnce.Do(func() {
		for _, f := range s.shards {
			f.Close()
		}
		s.closed.Store(true)
		close(s.done)
	})
}

// OnRefused sets the refusal function of every shard of a staged sharded
// front (see [Front.OnRefused]).
func (s *Sharded[T]) OnRefused(fn aqm.DropFunc[T]) {
	for _, f := range s.shards {
		f.OnRefused(fn)
	}
}

// Flush flushes every shard (see [Front.Flush]) and returns the total.
func (s *Sharded[T]) Flush(drop aqm.DropFunc[T]) int {
	n := 0
	for _, f := range s.shards {
		n += f.Flush(drop)
	}
	return n
}

// SetRate changes the shared rate (see [Front.SetRate]) and wakes every
// consumer. Like Front.SetRate it accepts every rate and returns nil.
func (s *Sharded[T]) SetRate(r aqm.Rate) error {
	if err := s.shards[0].SetRate(r); err != nil {
		return err
	}
	s.wakeAll()
	return nil
}

// Reconfigure validates cfg and applies its rate, burst and wake slack to
// all shards, as [Front.Reconfigure] does. Shards, SplitRate, SplitPeriod,
// Seed and Staged are fixed when the front is made: a zero Shards,
// SplitPeriod or Seed keeps the value in effect, and any other change is
// refused with an [aqm.ConfigError] naming the field. On error nothing
// changes.
func (s *Sharded[T]) Reconfigure(cfg ShardedConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	var errs []error
	fixed := func(field string, v any, changed bool) {
		if changed {
			errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: field, Value: v, Rule: "is fixed when the front is made"})
		}
	}
	fixed("Shards", cfg.Shards, cfg.Shards != 0 && cfg.Shards != s.cfg.Shards)
	fixed("SplitRate", cfg.SplitRate, cfg.SplitRate != s.cfg.SplitRate)
	fixed("SplitPeriod", cfg.SplitPeriod, cfg.SplitPeriod != 0 && cfg.SplitPeriod != s.cfg.SplitPeriod)
	fixed("Seed", cfg.Seed, cfg.Seed != 0 && cfg.Seed != s.cfg.Seed)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := s.shards[0].Reconfigure(cfg.Config); err != nil {
		return err
	}
	s.wakeAll()
	return nil
}

// Config returns the configuration in effect: the shared rate
// configuration (see [Front.Config]), the number of shards, and the split
// period and seed, defaults filled in.
func (s *Sharded[T]) Config() ShardedConfig {
	c := s.cfg
	c.Config = s.shards[0].Config()
	return c
}

func (s *Sharded[T]) wakeAll() {
	for _, f := range s.shards {
		f.signal()
	}
}

// Len returns the number of packets queued in all shards.
func (s *Sharded[T]) Len() int {
	n := 0
	for _, f := range s.shards {
		n += f.Len()
	}
	return n
}

// Stats returns the sum of the shards' counters (MaxSize: the largest). The
// shards are read one after the other, each under its lock, so while
// packets move the sum mixes instants a few microseconds apart.
func (s *Sharded[T]) Stats() aqm.Stats {
	var t aqm.Stats
	for _, f := range s.shards {
		t = tally.Sum(t, f.Stats())
	}
	return t
}

// Detail returns the shared bucket's state and the sum of the shards'
// counters; with a split rate, the total rate and burst and the sum of the
// shards' credit.
func (s *Sharded[T]) Detail() Detail {
	var t Detail
	for i, f := range s.shards {
		d := f.Detail()
		if i == 0 {
			t = d
			continue
		}
		t.Wakeups += d.Wakeups
		t.CreditBytes += d.CreditBytes
		t.RefusedClosed = t.RefusedClosed.Plus(d.RefusedClosed)
		t.Flushed = t.Flushed.Plus(d.Flushed)
		t.Staged += d.Staged
	}
	t.Closed = s.closed.Load()
	if sp := s.split; sp != nil {
		// The totals: the rate and burst split, and the credit of all
		// the shards' buckets.
		c := s.Config()
		t.Rate, t.BurstBytes, t.WakeSlack = c.Rate, c.BurstBytes, s.slack()
	} else {
		t.CreditBytes = s.shards[0].Detail().CreditBytes
	}
	return t
}

// Metrics lists the shards' Stats metrics summed, then the Detail metrics
// (see [Sharded.Detail]); safe to call from any goroutine. The queues' own
// Detail metrics are per shard and do not add up (a probability, a
// controller's state): the Metrics of the [Front] [Sharded.Shard] returns
// for i list shard i's.
func (s *Sharded[T]) Metrics() iter.Seq[aqm.Metric] {
	st, d := s.Stats(), s.Detail()
	return concat(st.Metrics(), detailMetrics.Of(d))
}
