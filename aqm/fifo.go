package aqm

import (
	"errors"

	"github.com/aqmkit/aqmkit/internal/ring"
)

// DefaultFIFOLimitPackets is the FIFO's packet limit when FIFOConfig leaves
// it zero: 1000, Linux's default txqueuelen and pfifo limit.
const DefaultFIFOLimitPackets = 1000

// FIFOConfig configures a drop-tail (or drop-head) FIFO.
type FIFOConfig struct {
	// LimitPackets is the most packets the queue holds. Zero means
	// [DefaultFIFOLimitPackets]. Storage for this many packets is allocated
	// by NewFIFO, so it must be at most 1<<24.
	LimitPackets int
	// LimitBytes is the most bytes the queue holds (the sum of Size). Zero
	// means no byte limit: the packet limit alone applies (pfifo); set it for
	// a bfifo.
	LimitBytes int
	// HeadDrop makes a full queue drop its oldest packets to admit the new
	// one (Linux pfifo_head_drop) instead of refusing the arrival.
	HeadDrop bool
}

func (c *FIFOConfig) validate() error {
	var errs []error
	if c.LimitPackets < 0 || c.LimitPackets > 1<<24 {
		errs = append(errs, &ConfigError{"aqm", "LimitPackets", c.LimitPackets, "must be in [0, 16777216]"})
	}
	if c.LimitBytes < 0 {
		errs = append(errs, &ConfigError{"aqm", "LimitBytes", c.LimitBytes, "must not be negative"})
	}
	if c.LimitPackets == 0 {
		c.LimitPackets = DefaultFIFOLimitPackets
	}
	return errors.Join(errs...)
}

// FIFO is the drop-tail baseline the AQM literature compares against: Linux
// pfifo (packet limit), bfifo (byte limit) and pfifo_head_drop (HeadDrop). It
// never drops early and never marks. It is also the reference implementation
// of the [Queue] contract.
type FIFO[T any] struct {
	ring         ring.Ring[Packet[T]] // capacity ≥ limitPackets, and ≥ Len after a shrinking Reconfigure
	backlog      int
	limitPackets int
	limitBytes   int // 0: none
	headDrop     bool
	onDrop       DropFunc[T]
	stats        Stats
}

var _ Queue[int] = (*FIFO[int])(nil)

// NewFIFO returns an empty FIFO. onDrop receives the packets that HeadDrop
// evicts; it may be nil. The error wraps [ErrInvalidConfig] for each bad
// field.
func NewFIFO[T any](cfg FIFOConfig, onDrop DropFunc[T]) (*FIFO[T], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &FIFO[T]{onDrop: onDrop}
	q.ring.Init(cfg.LimitPackets)
	q.apply(cfg)
	return q, nil
}

func (q *FIFO[T]) apply(cfg FIFOConfig) {
	q.limitPackets, q.limitBytes, q.headDrop = cfg.LimitPackets, cfg.LimitBytes, cfg.HeadDrop
}

// Reconfigure validates cfg and applies it to the queue as it stands: no
// queued packet is dropped, moved or reordered. If the new limits are below
// what is queued now, the packets stay; later arrivals are refused (or, with
// HeadDrop, evict the oldest packets as usual) until the queue is within
// the limits. It allocates when the packet limit grows; call it off the hot
// path. On error the queue is unchanged.
func (q *FIFO[T]) Reconfigure(cfg FIFOConfig) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	q.ring.Resize(cfg.LimitPackets) // keeps every queued packet, in order
	q.apply(cfg)
	return nil
}

func (q *FIFO[T]) full(size int) bool {
	return q.ring.Len() >= q.limitPackets || (q.limitBytes > 0 && q.backlog+size > q.limitBytes)
}

// makeRoom is Enqueue's cold path when the queue is full for a packet of
// size bytes: it reports whether room was made, evicting from the head with
// HeadDrop.
func (q *FIFO[T]) makeRoom(size int) bool {
	if q.limitBytes > 0 && size > q.limitBytes {
		return false
	}
	for q.full(size) {
		if !q.headDrop || q.ring.Len() == 0 {
			return false
		}
		old, _ := q.ring.PopFront()
		q.backlog -= int(old.Size)
		q.stats.CountDrop(DroppedOverlimit, old.Size, true)
		if q.onDrop != nil {
			q.onDrop(old, DroppedOverlimit)
		}
	}
	return true
}

// Enqueue accepts p at the tail, or refuses it with [DroppedOverlimit] if
// the queue is full (or p alone exceeds LimitBytes). With HeadDrop, a full
// queue instead evicts packets from its head, through the DropFunc, until p
// fits.
func (q *FIFO[T]) Enqueue(p Packet[T], now Time) Verdict {
	q.stats.NoteSize(p.Size)
	size := int(p.Size)
	if q.full(size) && !q.makeRoom(size) {
		q.stats.CountDrop(DroppedOverlimit, p.Size, false)
		return DroppedOverlimit
	}
	p.ECN &= ECNMask
	p.Enqueued = now
	q.ring.PushBack(p) // room: Len < limitPackets ≤ Cap
	q.backlog += size
	q.stats.Enqueued.Add(p.Size)
	return Enqueued
}

// Dequeue returns the oldest packet.
func (q *FIFO[T]) Dequeue(now Time) (p Packet[T], ok bool) {
	if p, ok = q.ring.PopFront(); !ok {
		return p, false
	}
	q.backlog -= int(p.Size)
	q.stats.Dequeued.Add(p.Size)
	return p, true
}

// Len returns the number of queued packets.
func (q *FIFO[T]) Len() int { return q.ring.Len() }

// Backlog returns the number of queued bytes.
func (q *FIFO[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *FIFO[T]) Stats() Stats {
	s := q.stats
	s.Len, s.Backlog = q.ring.Len(), q.backlog
	return s
}
