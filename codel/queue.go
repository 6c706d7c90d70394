package codel

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
)

// Queue is a CoDel queue (RFC 8289): a FIFO with a packet limit (and an
// optional byte limit) that drops or marks at dequeue time when the minimum
// sojourn time stays above Target for an Interval. It implements
// [aqm.Queue]. It is not safe for concurrent use.
type Queue[T any] struct {
	ring         ring.Ring[aqm.Packet[T]]
	backlog      int
	limitPackets int
	limitBytes   int // 0: none
	p            Params
	c            Controller
	onDrop       aqm.DropFunc[T]
	stats        aqm.Stats
	ecnMarks     uint64
	ceMarks      uint64
	capHits      uint64
}

var _ aqm.Queue[int] = (*Queue[int])(nil)

// New returns an empty CoDel queue. onDrop receives the packets CoDel drops
// at dequeue time; it may be nil. The error wraps [aqm.ErrInvalidConfig] for
// each bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &Queue[T]{onDrop: onDrop}
	q.apply(cfg)
	q.ring.Init(cfg.LimitPackets)
	return q, nil
}

func (q *Queue[T]) apply(cfg Config) {
	q.p = cfg.ControllerParams()
	q.limitPackets = cfg.LimitPackets
	q.limitBytes = cfg.LimitBytes
}

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets; the CoDel state carries over. A limit below
// the current occupancy keeps the queued packets and refuses arrivals until
// the queue has drained below it. It allocates if LimitPackets grows.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	q.ring.Resize(cfg.LimitPackets) // keeps every queued packet, in order
	q.apply(cfg)
	return nil
}

// Enqueue stamps p with now and appends it, or refuses it with
// [aqm.DroppedOverlimit] if a limit is reached. Refusals do not touch the
// CoDel state.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	q.stats.NoteSize(p.Size)
	if q.ring.Len() >= q.limitPackets ||
		(q.limitBytes > 0 && int64(q.backlog)+int64(p.Size) > int64(q.limitBytes)) {
		q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
		return aqm.DroppedOverlimit
	}
	q.ring.PushBack(p) // room: Len < limitPackets ≤ Cap
	q.backlog += int(p.Size)
	q.stats.Enqueued.Add(p.Size)
	return aqm.Enqueued
}

// Dequeue returns the next packet to send, after dropping (through the
// DropFunc, as [aqm.DroppedEarly]) the packets CoDel's control law drops,
// at most [MaxDropsPerDequeue] per call. A returned packet whose ECN is CE was
// marked by CoDel or by the CE threshold (or arrived CE).
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	drops := 0
	for {
		if p, ok = q.ring.PopFront(); !ok {
			q.c.Empty()
			return p, false
		}
		q.backlog -= int(p.Size)
		act := Deliver
		if drops >= MaxDropsPerDequeue {
			q.c.Resync(&q.p, now)
			q.capHits++
		} else if sojourn := p.Enqueued.Since(now); !q.c.DeliverIfBelowTarget(&q.p, sojourn) {
			act = q.c.Examine(&q.p, now, sojourn, q.backlog, p.ECN)
		}
		switch act {
		case Drop:
			drops++
			q.stats.CountDrop(aqm.DroppedEarly, p.Size, true)
			if q.onDrop != nil {
				q.onDrop(p, aqm.DroppedEarly)
			}
			continue
		case Mark:
			p.ECN = aqm.CE
			q.ecnMarks++
			q.stats.Marked.Add(p.Size)
		case MarkCE:
			p.ECN = aqm.CE
			q.ceMarks++
			q.stats.Marked.Add(p.Size)
		}
		q.stats.Dequeued.Add(p.Size)
		return p, true
	}
}

// Len returns the number of queued packets.
func (q *Queue[T]) Len() int { return q.ring.Len() }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.ring.Len(), q.backlog
	return s
}

// Detail is the CoDel-specific state of a [Queue], the analogue of Linux's
// tc_codel_xstats.
type Detail struct {
	// State is the controller's state.
	State
	// ECNMarks counts packets CoDel marked CE instead of dropping.
	ECNMarks uint64
	// CEMarks counts packets marked CE by the CE threshold.
	CEMarks uint64
	// DropCapHits counts Dequeue calls that reached [MaxDropsPerDequeue].
	DropCapHits uint64
}

// Detail returns a snapshot of the CoDel state and counters.
func (q *Queue[T]) Detail() Detail {
	return Detail{State: q.c.State(), ECNMarks: q.ecnMarks, CEMarks: q.ceMarks, DropCapHits: q.capHits}
}
