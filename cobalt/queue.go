package cobalt

import (
	"iter"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/taildrop"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Queue is a COBALT queue: a FIFO with a packet limit (and an optional byte
// limit) whose head packets pass through one [Controller], as ns-3's
// CobaltQueueDisc. It implements [aqm.BatchQueue]. It is not safe for
// concurrent use.
type Queue[T any] struct {
	ring    ring.Ring[aqm.Packet[T]]
	backlog int
	segs    int // wire packets queued: a super-packet counts its segments
	p       Params
	c       Controller
	cfg     Config // effective: defaults filled in, Seed the one in use
	onDrop  aqm.DropFunc[T]
	stats   aqm.Stats
	codel   uint64 // CoDel-half drops
	blue    uint64 // BLUE drops
	capHits uint64
}

var _ aqm.BatchQueue[int] = (*Queue[int])(nil)

// New returns an empty COBALT queue. onDrop receives the packets dropped at
// dequeue time; it may be nil. The error wraps [aqm.ErrInvalidConfig] for
// each bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &Queue[T]{onDrop: onDrop}
	cfg = cfg.withDefaults()
	cfg.Seed = seedOf(cfg)
	q.apply(cfg)
	q.c.Init(&q.p, cfg.Seed)
	q.ring.Init(cfg.LimitPackets)
	return q, nil
}

func (q *Queue[T]) apply(cfg Config) {
	q.cfg = cfg
	q.p = cfg.Params()
}

// Config returns the configuration in effect, with every default filled in
// and the seed in use (keep it secret if it was drawn).
func (q *Queue[T]) Config() Config { return q.cfg }

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets; the controller's state carries over. A zero
// Seed keeps the current random stream; another seed restarts it. A limit
// below the current occupancy keeps the queued packets and refuses
// arrivals until the queue has drained below it.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	if cfg.Seed == 0 {
		cfg.Seed = q.cfg.Seed
	} else if cfg.Seed != q.cfg.Seed {
		q.c.src.Seed(cfg.Seed)
	}
	q.ring.Resize(cfg.LimitPackets)
	q.apply(cfg)
	return nil
}

// Enqueue stamps p with now and appends it, or refuses it with
// [aqm.DroppedOverlimit] if a limit is reached; a refusal raises BLUE's
// probability and forces the CoDel half to signal.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	tally.NoteSize(&q.stats, p.Size)
	segs := p.SegmentCount()
	if q.segs+segs > q.cfg.LimitPackets ||
		(q.cfg.LimitBytes > 0 && int64(q.backlog)+int64(p.Size) > int64(q.cfg.LimitBytes)) {
		q.c.Overflow(&q.p, now)
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	q.ring.PushBack(p) // room: Len ≤ segs < LimitPackets ≤ Cap
	q.backlog += int(p.Size)
	q.segs += segs
	q.stats.Enqueued.AddMeta(p.Meta)
	return aqm.Enqueued
}

// Dequeue returns the next packet to send, after dropping (through the
// DropFunc) the packets COBALT drops, at most 256 per
// call. CoDel-half drops count as [aqm.DroppedEarly]; BLUE's drops count as
// DroppedEarly for packets that are not ECN-capable and as
// [aqm.DroppedOverload] for those that are (they were dropped although they
// could be marked, and may just have been: see [Controller.Marked]).
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	drops := 0
	for {
		if p, ok = q.ring.PopFront(); !ok {
			q.c.Empty(&q.p, now)
			return p, false
		}
		q.backlog -= int(p.Size)
		q.segs -= p.SegmentCount()
		act := Deliver
		if drops < maxDropsPerDequeue {
			act = q.c.Decide(&q.p, now, p.Enqueued.Since(now), p.ECN)
		} else {
			q.capHits++
		}
		switch act {
		case Mark:
			p.ECN = aqm.CE
			q.stats.Marked.AddMeta(p.Meta)
		case DropCoDel, DropBlue:
			why := aqm.DroppedEarly
			if act == DropBlue {
				q.blue += uint64(p.SegmentCount())
				if p.ECN != aqm.NotECT {
					why = aqm.DroppedOverload
				}
			} else {
				q.codel += uint64(p.SegmentCount())
			}
			drops++
			tally.DropMeta(&q.stats, why, p.Meta, true)
			if q.onDrop != nil {
				q.onDrop(p, why)
			}
			continue
		}
		q.stats.Dequeued.AddMeta(p.Meta)
		return p, true
	}
}

// EnqueueBatch offers ps[i] for i < n = min(len(ps), len(vs)) at now,
// exactly as a loop of Enqueue calls would, writes each verdict into vs[i]
// and returns the number accepted (see [aqm.BatchQueue]). Packets that fit
// are written straight into their ring slots; a packet that meets a full
// limit is refused and the controller told, as Enqueue does.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	return taildrop.EnqueueBatch(taildrop.Queue[T]{Ring: &q.ring, Stats: &q.stats, Segs: &q.segs, Backlog: &q.backlog,
		LimitPackets: q.cfg.LimitPackets, LimitBytes: q.cfg.LimitBytes}, ps, vs, now, func() { q.c.Overflow(&q.p, now) })
}

// DequeueBatch fills buf at now, exactly as a loop of Dequeue calls would.
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	for i := range buf {
		p, ok := q.Dequeue(now)
		if !ok {
			return i
		}
		buf[i] = p
	}
	return len(buf)
}

// Len returns the number of queued wire packets: a GSO super-packet counts
// as its segments.
func (q *Queue[T]) Len() int { return q.segs }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.segs, q.backlog
	return s
}

// Detail is the COBALT-specific state of a [Queue].
type Detail struct {
	// State is the controller's state.
	State
	// DroppedCoDel and DroppedBlue count drops by each half, in wire
	// packets; a packet the CoDel half marked and BLUE then dropped counts
	// in DroppedBlue only.
	DroppedCoDel uint64 `metric:"dropped_codel_packets,counter"`
	DroppedBlue  uint64 `metric:"dropped_blue_packets,counter"`
	// CappedDequeues counts Dequeue calls that reached their bound of 256 drops.
	CappedDequeues uint64 `metric:"capped_dequeues,counter"`
	// MemoryBytes is the memory the queue preallocated for its packet
	// storage: LimitPackets slots (rounded up to a power of two) of one
	// packet each.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// Detail returns a snapshot of the controller and counters.
func (q *Queue[T]) Detail() Detail {
	var zero aqm.Packet[T]
	return Detail{
		State: q.c.State(), DroppedCoDel: q.codel, DroppedBlue: q.blue,
		CappedDequeues: q.capHits,
		MemoryBytes:    q.ring.Cap() * int(sizeofPacket(zero)),
	}
}

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }
