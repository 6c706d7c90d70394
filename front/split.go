package front

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// The split rate of a Sharded front (ShardedConfig.SplitRate): each shard
// has a bucket of its own at a share of the rate, and the shares follow
// the shards' demand, rebalanced once per period by whichever shard's
// consumer finds the period over. A shard's consumer touches only its own
// shard's lock and bucket per packet; what the shards share is read and
// written once per period, through atomics.

// defaultSplitPeriod is the default [ShardedConfig.SplitPeriod]: 2 ms, the
// default burst's time, so that a share follows a change in demand within
// about the time the bucket smooths over anyway.
const defaultSplitPeriod = 2 * time.Millisecond

// minSplitPeriod and maxSplitPeriod bound [ShardedConfig.SplitPeriod].
const (
	minSplitPeriod = 100 * time.Microsecond
	maxSplitPeriod = 100 * time.Millisecond
)

// splitBacklogPeriods is how many periods a shard's backlog is spread
// over when it counts as demand: a shard with packets queued and no new
// arrivals asks for an eighth of its backlog per period.
const splitBacklogPeriods = 8

// splitFloorShare is the least share of the demand a shard with packets
// queued counts for: 1/(8 N) of the total, so that a shard that wakes up
// beside busy ones sends a full frame within a few periods.
const splitFloorShare = 8

// splitRate is the shared part of a split rate. Its mutex serialises
// rebalancing and rate changes; the shards read their shares through the
// slots' atomics. Lock order: a shard's mu, then this mu.
type splitRate struct {
	mu     sync.Mutex
	cfg    Config // the total rate and burst, as configured
	rate   uint64 // bits/s, the total
	burst  int    // bytes, the total
	period time.Duration
	last   aqm.Time // the last rebalance; 0: never
	next   atomic.Int64
	at     atomic.Int64 // the instant of the last rebalance, for the shards
	epoch  atomic.Uint64
	slots  []splitSlot
}

// splitSlot is one shard's part, on its own cache lines.
type splitSlot struct {
	// Published by the shard under its lock at each look of its
	// consumer: the bytes offered to its queue so far and the bytes
	// queued.
	offered atomic.Uint64
	backlog atomic.Int64
	// Written by the rebalancer: the shard's rate in bits/s and bucket
	// depth in bytes.
	share atomic.Uint64
	depth atomic.Int64
	// The shard's own, under its lock: what it last published, and when
	// it next publishes the offered bytes.
	pubBacklog int64
	pubAt      aqm.Time
	// The rebalancer's own, under splitRate.mu.
	seen   uint64 // offered at the last rebalance
	demand uint64 // bytes per period, smoothed
	wake   func()
	_      [64]byte
}

// newSplitRate returns the split state for n shards at cfg's rate, each
// with an equal share until the first rebalance. cfg.Rate is not zero.
func newSplitRate(n int, cfg Config, period time.Duration) *splitRate {
	if period == 0 {
		period = defaultSplitPeriod
	}
	sp := &splitRate{cfg: cfg, period: period, slots: make([]splitSlot, n)}
	sp.rate, sp.burst = uint64(cfg.Rate), cfg.burstBytes()
	shares := make([]uint64, n)
	sp.even(shares)
	sp.publish(shares)
	return sp
}

// even splits the rate evenly into shares.
func (sp *splitRate) even(shares []uint64) {
	n := uint64(len(shares))
	if sp.rate == 0 {
		clear(shares)
		return
	}
	for i := range shares {
		shares[i] = sp.rate / n
	}
	shares[0] += sp.rate % n
	sp.lift(shares)
}

// lift gives every zero share 1 bit/s, taken from the largest, because a
// bucket at rate zero would be unlimited: the shares still sum to the rate
// unless it is below the number of shards. The rate is not zero.
func (sp *splitRate) lift(shares []uint64) {
	big := 0
	for i, s := range shares {
		if s > shares[big] {
			big = i
		}
	}
	for i := range shares {
		if shares[i] == 0 {
			shares[i] = 1
			if shares[big] > 1 {
				shares[big]--
			}
		}
	}
}

// publish stores the shares and the depths that go with them and starts a
// new epoch. The caller holds sp.mu or owns sp.
func (sp *splitRate) publish(shares []uint64) {
	for i := range sp.slots {
		sl := &sp.slots[i]
		sl.depth.Store(splitDepth(sp.burst, shares[i], sp.rate))
		sl.share.Store(shares[i])
	}
	sp.epoch.Add(1)
}

// splitDepth is a shard's bucket depth: the total burst in proportion to
// its share, at least a full frame or the whole burst if that is smaller,
// so that a shard with a small share still sends full frames back to back.
func splitDepth(burst int, share, rate uint64) int64 {
	if rate == 0 {
		return int64(burst)
	}
	d := int64(float64(burst) * float64(share) / float64(rate))
	return max(d, int64(min(burst, wakeFrameBytes)))
}

// rebalance recomputes the shares from the slots' demand at now, if the
// period is over or force is set, publishes them, and wakes the shards
// whose share grew while they hold packets (a consumer asleep until a
// departure its old share allowed).
func (sp *splitRate) rebalance(now aqm.Time, force bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.rate == 0 || !force && int64(now) < sp.next.Load() {
		return
	}
	elapsed := sp.period
	if sp.last != 0 && now.After(sp.last) {
		elapsed = now.Sub(sp.last)
	}
	sp.last = now
	sp.next.Store(int64(now.Add(sp.period)))
	var buf [maxShards]float64
	w := buf[:len(sp.slots)]
	var total float64
	for i := range sp.slots {
		sl := &sp.slots[i]
		off := sl.offered.Load()
		d := uint64(0)
		if off > sl.seen {
			d = off - sl.seen
		}
		sl.seen = off
		// Bytes per period, halfway between the last estimate and this
		// one: shares follow a change within a few periods.
		per := uint64(float64(d) * float64(sp.period) / float64(elapsed))
		sl.demand = (sl.demand + per) / 2
		w[i] = float64(sl.demand)
		if bl := sl.backlog.Load(); bl > 0 {
			w[i] = max(w[i], float64(bl)/splitBacklogPeriods, 1)
		}
		total += w[i]
	}
	floor := total / float64(splitFloorShare*len(sp.slots))
	total = 0
	for i := range sp.slots {
		if sp.slots[i].backlog.Load() > 0 {
			w[i] = max(w[i], floor)
		}
		total += w[i]
	}
	var sbuf [maxShards]uint64
	shares := sbuf[:len(sp.slots)]
	if total == 0 {
		sp.even(shares)
	} else {
		var sum uint64
		big := 0
		for i := range shares {
			shares[i] = uint64(float64(sp.rate) * (w[i] / total))
			shares[i] = min(shares[i], sp.rate)
			sum += shares[i]
			if w[i] > w[big] {
				big = i
			}
		}
		// Rounding down leaves a remainder (or float error an excess):
		// the largest demand absorbs it, so the shares sum to the rate.
		if sum <= sp.rate {
			shares[big] += sp.rate - sum
		} else {
			shares[big] -= min(shares[big], sum-sp.rate)
		}
		sp.lift(shares)
	}
	for i := range sp.slots {
		sl := &sp.slots[i]
		grew := shares[i] > sl.share.Load()
		sl.depth.Store(splitDepth(sp.burst, shares[i], sp.rate))
		sl.share.Store(shares[i])
		if grew && sl.backlog.Load() > 0 && sl.wake != nil {
			sl.wake()
		}
	}
	sp.at.Store(int64(now))
	sp.epoch.Add(1)
}

// setConfig applies a new total rate and burst at now: the shares keep
// their proportions.
func (sp *splitRate) setConfig(cfg Config) {
	sp.mu.Lock()
	old := sp.rate
	sp.cfg = cfg
	sp.rate, sp.burst = uint64(cfg.Rate), cfg.burstBytes()
	var sbuf [maxShards]uint64
	shares := sbuf[:len(sp.slots)]
	var sum uint64
	for i := range shares {
		if old != 0 {
			shares[i] = uint64(float64(sp.rate) * float64(sp.slots[i].share.Load()) / float64(old))
		}
		sum += shares[i]
	}
	if old == 0 || sp.rate == 0 || sum > sp.rate {
		sp.even(shares)
	} else {
		shares[0] += sp.rate - sum
		sp.lift(shares)
	}
	sp.publish(shares)
	sp.mu.Unlock()
}

// splitLocked is a split shard's part of each look of its consumer, before
// it uses its bucket: it publishes the shard's demand, rebalances when the
// period is over (or at once when the shard holds packets on the smallest
// share, as after an idle spell), and applies the latest share to the
// shard's bucket. The caller holds f.mu.
func (f *Front[T]) splitLocked(now aqm.Time) {
	sp := f.split
	sl := &sp.slots[f.slot]
	bl := int64(f.q.Backlog())
	if bl != sl.pubBacklog {
		sl.backlog.Store(bl)
		sl.pubBacklog = bl
	}
	if !now.Before(sl.pubAt) {
		// The offered bytes, at most a quarter period old: the
		// rebalancer takes differences of this running total, so its
		// lag shifts demand by that much and loses none.
		sl.offered.Store(f.q.Stats().Offered().Bytes)
		sl.pubAt = now.Add(sp.period / 4)
	}
	starved := bl > 0 && sl.share.Load() <= 1
	if starved || int64(now) >= sp.next.Load() {
		sp.rebalance(now, starved)
	}
	if e := sp.epoch.Load(); e != f.splitEpoch {
		f.splitEpoch = e
		// The share runs from the rebalance on, not from this look: a
		// busy shard's old share must not overlap the others' new ones.
		at := min(max(aqm.Time(sp.at.Load()), f.b.Last), now)
		old, share := f.b.Rate, sl.share.Load()
		f.b.SetRate(at, share, int(sl.depth.Load()))
		if share < old && f.b.Credit > 0 {
			// Credit saved at a larger share is not kept whole: the
			// share it came from now goes to other shards, and a shard
			// that idled on it would otherwise spend it on top of
			// theirs when it wakes.
			f.b.Credit = int64(float64(f.b.Credit) * float64(share) / float64(old))
		}
	}
}

// splitApplyLocked is applyLocked for a split shard: fn changes the total
// rate and burst, which every shard's share follows from its next look.
// The caller holds f.mu.
func (f *Front[T]) splitApplyLocked(now aqm.Time, fn func(*Config)) {
	sp := f.split
	sp.mu.Lock()
	cfg := sp.cfg
	sp.mu.Unlock()
	fn(&cfg)
	sp.setConfig(cfg)
	f.splitEpoch = 0
	f.splitLocked(now)
}

// config returns the total rate's configuration, defaults filled in.
func (sp *splitRate) config() Config {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.cfg.withDefaults()
}
