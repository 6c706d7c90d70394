package red

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Queue is a RED, Gentle RED or Adaptive RED queue of packets with payload
// type T. Create it with [New]. It implements [aqm.Queue] and is not safe
// for concurrent use.
type Queue[T any] struct {
	backlog uint64
	ring    ring.Ring[aqm.Packet[T]]
	segs    int // wire packets queued: a super-packet counts its segments

	controller // RED's decisions and state (controller.go)

	onDrop aqm.DropFunc[T]
	stats  aqm.Stats
	cfg    Config
}

var (
	_ aqm.Queue[int]      = (*Queue[int])(nil)
	_ aqm.BatchQueue[int] = (*Queue[int])(nil)
)

// New returns an empty queue configured by cfg. onDrop may be nil: a RED
// queue decides everything at enqueue and never drops a packet it has
// accepted, so it never calls onDrop; the parameter keeps the constructor
// shape of the other queues. The error wraps [aqm.ErrInvalidConfig] once per
// bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	eff, p, err := cfg.derive()
	if err != nil {
		return nil, err
	}
	eff.Seed = rng.SeedOrRandom(cfg.Seed)
	q := &Queue[T]{cfg: eff, onDrop: onDrop}
	q.reset(p, eff.Seed)
	q.ring.Init(p.limitPackets)
	return q, nil
}

// Enqueue offers p at time now. RED updates its average queue, then
// accepts p ([aqm.Enqueued]), marks it CE ([aqm.Marked], ECN-capable
// packets only), or refuses it: [aqm.DroppedEarly] for RED's congestion
// drops, [aqm.DroppedOverload] for an ECN-capable packet dropped where RED's
// signal is forced (see DisableHardDrop), [aqm.DroppedOverlimit] when a hard
// limit is full or p alone exceeds LimitBytes.
//
// Its common case, an arrival to a busy queue with room, is written out
// again as the run of EnqueueBatch (batch.go); a change to one belongs in
// the other.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	ecn := p.ECN & aqm.ECNMask
	tally.NoteSize(&q.stats, p.Size)
	size := uint64(p.Size)
	if size > q.p.limitBytes {
		// Refused before RED sees it: it could never be queued.
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	n, segs := q.segs, p.SegmentCount() // wire packets: the packet-mode average counts segments
	if q.p.adaptive && q.adaptDue(now) {
		q.adapt(now, n == 0)
	}
	if n == 0 {
		q.endIdle(now)
	} else {
		cur := float64(n)
		if q.p.byteMode {
			cur = float64(q.backlog)
		}
		q.update(cur)
	}
	v := aqm.Enqueued
	if !q.below() {
		v = q.signal(p.Size, ecn)
		if !v.Accepted() {
			tally.DropMeta(&q.stats, v, p.Meta, false)
			return v
		}
	}
	if n+segs > q.p.limitPackets || q.backlog+size > q.p.limitBytes {
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	if v == aqm.Marked {
		ecn = aqm.CE
		q.stats.Marked.AddMeta(p.Meta)
	}
	p.ECN, p.Enqueued = ecn, now
	q.ring.PushBack(p) // room: Len ≤ n < limitPackets ≤ Cap
	q.backlog += size
	q.segs += segs
	q.stats.Enqueued.AddMeta(p.Meta)
	return v
}

// Dequeue returns the oldest packet. When it empties the queue, the idle
// period that the next arrival's decay is measured from starts at now.
// DequeueBatch (batch.go) does the same for whole runs; a change to one
// belongs in the other.
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if p, ok = q.ring.PopFront(); !ok {
		return p, false
	}
	q.backlog -= uint64(p.Size)
	q.segs -= p.SegmentCount()
	q.stats.Dequeued.AddMeta(p.Meta)
	if q.ring.Len() == 0 {
		q.idleStart = now
	}
	return p, true
}

// Len returns the number of queued wire packets: a GSO super-packet counts
// as its segments.
func (q *Queue[T]) Len() int { return q.segs }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return int(q.backlog) }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.segs, int(q.backlog)
	return s
}

// Config returns the configuration in use, with every default filled in.
func (q *Queue[T]) Config() Config { return q.cfg }

// Reconfigure validates cfg and applies it while packets are queued: none
// is lost, duplicated or reordered. RED's state carries over: the average
// (reset to the current queue size if ByteMode changes, since its unit
// does), the count, and, if both the old and new configurations are
// Adaptive, the adapted max_p (Linux's red_change discards it). A new Seed
// reseeds the random source. A packet limit below the current length keeps
// the queued packets and refuses arrivals until the queue is below it. A
// zero Seed keeps the current random stream. It may allocate.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	eff, p, err := cfg.derive()
	if err != nil {
		return err
	}
	if cfg.Seed == 0 {
		eff.Seed = q.cfg.Seed // keep the current stream
	}
	q.reconfigure(p, cfg.Seed != 0 && cfg.Seed != q.cfg.Seed, cfg.Seed, q.segs, q.backlog)
	q.ring.Resize(p.limitPackets) // keeps every queued packet, in order
	q.cfg = eff
	return nil
}
