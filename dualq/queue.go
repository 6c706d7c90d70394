package dualq

import (
	"math"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Queue is a DualQ Coupled AQM with a PI2 base (DualPI2): an L4S queue and
// a Classic queue sharing one link, one buffer limit and one PI controller.
// Build it with [New]. It implements [aqm.Queue]. It is not safe for
// concurrent use.
type Queue[T any] struct {
	// Hot state first.
	l, c   ring.Ring[aqm.Packet[T]] // the L4S and Classic queues
	bytesL int                      // bytes queued in l
	bytesC int                      // bytes queued in c
	segsL  int                      // wire packets queued in l: a super-packet counts its segments
	segsC  int                      // wire packets queued in c
	credit int64                    // WRR credit: > 0 means Classic is served next
	ctl    controller               // the PI2 controller (pi2.go)
	par    params
	onDrop aqm.DropFunc[T]
	stats  aqm.Stats

	// Detail-only state.
	lastNow    aqm.Time // the instant of the latest call
	cfg        Config   // effective: defaults filled in, the seed in use
	memBytes   int      // bytes of the two rings
	stepMarks  uint64
	maxLen     int
	maxBacklog int
	drain      bool     // a Reconfigure lowered a limit below what is queued
	drainFloor aqm.Time // the controller's updFloor while drain holds it at MaxInt64
}

var _ aqm.BatchQueue[int] = (*Queue[int])(nil)

// New returns an empty queue configured by cfg. onDrop receives the accepted
// packets that the AQM drops at dequeue; it may be nil. The error joins one
// error wrapping [aqm.ErrInvalidConfig] per bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	cfg.Seed = rng.SeedOrRandom(cfg.Seed)
	par, err := cfg.derive()
	if err != nil {
		return nil, err
	}
	// Before the first packet operation nextUpd is the earliest Time, so
	// that advance's fast path (updFloor ≤ now < nextUpd) is never taken.
	q := &Queue[T]{par: par, onDrop: onDrop, credit: par.creditInit,
		lastNow: math.MinInt64, cfg: cfg.withDefaults()}
	q.ctl.nextUpd, q.ctl.updFloor = math.MinInt64, math.MinInt64
	q.ctl.par = &q.par
	q.l.Init(par.limitPkts)
	q.c.Init(par.limitPkts)
	q.setMem()
	q.ctl.rnd.Seed(par.seed)
	q.ctl.derive(&q.par)
	return q, nil
}

// setMem records the memory the two rings hold.
func (q *Queue[T]) setMem() {
	var p aqm.Packet[T]
	q.memBytes = (q.l.Cap() + q.c.Cap()) * int(unsafe.Sizeof(p))
}

// Config returns the configuration in effect: the one given to [New] or
// the last successful [Queue.Reconfigure], with every default filled in
// and Seed set to the seed in use (the one drawn from crypto/rand if the
// configuration gave zero).
func (q *Queue[T]) Config() Config { return q.cfg }

// isL4S reports whether ECN codepoint e (already masked) goes to the L4S
// queue: ECT(1) and CE by default (the low bit is set: RFC 9331), any
// ECN-capable codepoint with AnyECTToL4S.
func (q *Queue[T]) isL4S(e aqm.ECN) bool {
	if q.par.anyECT {
		return e != aqm.NotECT
	}
	return e&aqm.ECT1 != 0
}

// noStep is a bit of Packet.ECN, outside the two ECN bits, that marks a
// queued L4S packet which found fewer than StepMinQueuePackets ahead of
// it: the native AQM passes it by. Dequeue clears it.
const noStep aqm.ECN = 0x80

// markedIn is a bit of Packet.ECN that marks a packet this queue set to CE
// at enqueue (DropEnqueue), so that a second mark at dequeue is not
// counted twice. Dequeue clears it.
const markedIn aqm.ECN = 0x40

// Enqueue classifies p by its ECN field and appends it to the L4S or the
// Classic queue, or refuses it with [aqm.DroppedOverlimit] if the shared
// packet or byte limit is full. With DropEnqueue the coupled and Classic
// AQM act here: the packet may be accepted as [aqm.Marked] or refused with
// [aqm.DroppedEarly] or [aqm.DroppedOverload]; otherwise they act at
// dequeue. Pending PI updates up to now run first. Enqueue, EnqueueDSCP
// and [Queue.EnqueueBatch] share one body, enqueueTo.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	q.advance(now)
	return q.enqueueTo(p, q.isL4S(p.ECN&aqm.ECNMask), now)
}

// EnqueueDSCP is Enqueue for a packet whose DSCP the caller read (the six
// high bits of the IPv4 TOS or IPv6 Traffic Class byte, as
// package iphdr's Flow.DSCP gives it): with NQBToL4S, a packet with DSCP
// [aqm.DSCPNQB] (45) goes to the L4S queue whatever its ECN field; every other
// packet is classified as Enqueue does.
func (q *Queue[T]) EnqueueDSCP(p aqm.Packet[T], dscp uint8, now aqm.Time) aqm.Verdict {
	q.advance(now)
	toL := q.isL4S(p.ECN&aqm.ECNMask) || q.par.nqb && dscp == aqm.DSCPNQB
	return q.enqueueTo(p, toL, now)
}

// enqueueTo is the body of Enqueue once the PI updates due by now have
// run and the packet's queue is chosen (toL: the L4S queue).
func (q *Queue[T]) enqueueTo(p aqm.Packet[T], toL bool, now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	tally.NoteSize(&q.stats, p.Size)
	size, segs := int(p.Size), p.SegmentCount()
	backlog := q.bytesL + q.bytesC
	n := q.segsL + q.segsC
	if n+segs > q.par.limitPkts || size > q.par.limitBytes-backlog {
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	v := aqm.Enqueued
	if q.par.dropEnq && (backlog >= q.par.minBacklog || n >= q.par.minLen) {
		// The safeguard on the backlog the arrival finds (Linux).
		var a action
		if toL {
			a = q.ctl.decideL4SEnqueue(p.ECN)
		} else {
			a = q.ctl.decideClassic(p.ECN, true)
		}
		if a >= dropEarly {
			v = a.verdict()
			tally.DropMeta(&q.stats, v, p.Meta, false)
			return v
		}
		if a == mark {
			p.ECN = q.mark(p.Meta) | markedIn
			v = aqm.Marked
		}
	}
	// Room in either ring: the shared packet limit was checked above and
	// each ring holds that many (a packet is at least one wire packet).
	if toL {
		if q.segsL < q.par.minQlen {
			p.ECN |= noStep
		}
		q.l.PushBack(p)
		q.bytesL += size
		q.segsL += segs
	} else {
		q.c.PushBack(p)
		q.bytesC += size
		q.segsC += segs
	}
	q.stats.Enqueued.AddMeta(p.Meta)
	if n+segs > q.maxLen {
		q.maxLen = n + segs
	}
	if b := backlog + size; b > q.maxBacklog {
		q.maxBacklog = b
	}
	return v
}

// advance runs every PI update due at or before now. Its common case, no
// update due and no glitch, is small enough to inline into Enqueue and
// Dequeue.
func (q *Queue[T]) advance(now aqm.Time) {
	q.lastNow = now
	if now >= q.ctl.nextUpd || now < q.ctl.updFloor { // controller.due, written out to stay inlinable
		q.advanceSlow(now)
	}
}

// advanceSlow hands the controller the queue's heads and lets it run the
// updates due by now (controller.advance).
func (q *Queue[T]) advanceSlow(now aqm.Time) {
	if q.drain {
		q.drain = false
		q.ctl.updFloor = q.drainFloor
		q.drainToLimits()
		if now < q.ctl.nextUpd && now >= q.ctl.updFloor {
			return
		}
	}
	h := q.heads()
	q.ctl.advance(&q.par, now, &h)
}

// drainToLimits drops head packets, Classic first, until both limits
// hold (after a Reconfigure that lowered them).
func (q *Queue[T]) drainToLimits() {
	for q.Len() > q.par.limitPkts || q.Backlog() > q.par.limitBytes {
		var p aqm.Packet[T]
		if q.c.Len() > 0 {
			p, _ = q.c.PopFront()
			q.bytesC -= int(p.Size)
			q.segsC -= p.SegmentCount()
		} else {
			p, _ = q.l.PopFront()
			q.bytesL -= int(p.Size)
			q.segsL -= p.SegmentCount()
			p.ECN &= aqm.ECNMask
		}
		q.drop(p, aqm.DroppedOverlimit)
	}
	if q.Len() == 0 {
		q.credit = q.par.creditInit
	}
}

// heads returns the arrival instants of the two head packets.
func (q *Queue[T]) heads() heads {
	var h heads
	if p := q.l.Front(); p != nil {
		h.l, h.hasL = p.Enqueued, true
	}
	if p := q.c.Front(); p != nil {
		h.c, h.hasC = p.Enqueued, true
	}
	return h
}

// pickBoth reports whether the scheduler serves the L4S queue next when
// both queues hold packets (with one empty, the other is served). WRR: L
// while the credit is not positive. Time-shifted FIFO: L while its head's
// age plus the shift exceeds the Classic head's age, lAge + tshift > cAge
// ⇔ lEnq < cEnq + tshift.
func (q *Queue[T]) pickBoth() bool {
	if q.par.tsfifo {
		return int64(q.l.Front().Enqueued) < satAdd(int64(q.c.Front().Enqueued), q.par.tshift)
	}
	return q.credit <= 0
}

// Dequeue picks a queue with the scheduler, pops its head and applies the
// AQM: L4S packets are marked with probability max(native, k·p'); Classic
// packets are marked (ECN-capable) or dropped (Not-ECT) with probability
// p'². In overload (p' ≥ 1/k) ECN-capable packets of both queues are
// dropped with probability p'² instead of marked, and every surviving L4S
// packet is marked. Dropped packets go to the DropFunc and the loop goes on
// until a packet survives or both queues are empty. Pending PI updates up to
// now run first. The controller (decideL4SAlone, decideL4SCoupled,
// decideClassic) decides each
// packet's fate. Its loop has a burst twin in [Queue.DequeueBatch] (see
// batch.go).
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	q.advance(now)
	for {
		lq, cq := q.l.Len() > 0, q.c.Len() > 0
		if !lq && !cq {
			// Both queues empty: the WRR credit starts over (Linux).
			q.credit = q.par.creditInit
			return p, false
		}
		fromL := lq
		if lq && cq {
			fromL = q.pickBoth()
		}
		var sojourn int64
		var lenAfter int
		if fromL {
			p, _ = q.l.PopFront()
			q.bytesL -= int(p.Size)
			q.segsL -= p.SegmentCount()
			if p.ECN&noStep == 0 {
				sojourn, lenAfter = age(int64(p.Enqueued), int64(now)), q.segsL
			}
		} else {
			p, _ = q.c.PopFront()
			q.bytesC -= int(p.Size)
			q.segsC -= p.SegmentCount()
		}
		again := p.ECN&markedIn != 0 // CE set here at enqueue: not counted twice
		p.ECN &= aqm.ECNMask
		// The 2·MTU safeguard, on the backlog left behind; with DropEnqueue
		// the coupled and Classic AQM acted at arrival.
		coupled := !q.par.dropEnq && (q.bytesL+q.bytesC >= q.par.minBacklog || q.segsL+q.segsC >= q.par.minLen)
		var a action
		switch {
		case fromL && p.ECN == aqm.NotECT:
			a = q.ctl.decideNotECTInL(sojourn, lenAfter, coupled)
		case fromL && coupled:
			a = q.ctl.decideL4SCoupled(sojourn, lenAfter)
		case fromL:
			a = q.ctl.decideL4SAlone(sojourn, lenAfter)
		default:
			a = q.ctl.decideClassic(p.ECN, coupled)
		}
		if a != keep {
			if a >= dropEarly {
				q.drop(p, a.verdict())
				continue
			}
			if !again {
				p.ECN = q.mark(p.Meta)
				if a == markStep {
					q.stepMarks += uint64(p.SegmentCount())
				}
			}
		}
		// The credit moves only for packets sent, and only while the
		// other queue waits.
		if fromL {
			if cq {
				q.credit += q.par.wc * int64(p.Size)
			}
		} else if lq {
			q.credit -= q.par.wl * int64(p.Size)
		}
		q.stats.Dequeued.AddMeta(p.Meta)
		return p, true
	}
}

// mark counts a CE mark on the packet m describes, on every segment of a
// super-packet, and returns CE, the packet's new codepoint.
func (q *Queue[T]) mark(m aqm.Meta) aqm.ECN {
	q.stats.Marked.AddMeta(m)
	return aqm.CE
}

func (q *Queue[T]) drop(p aqm.Packet[T], why aqm.Verdict) {
	tally.DropMeta(&q.stats, why, p.Meta, true)
	if q.onDrop != nil {
		q.onDrop(p, why)
	}
}

// Len returns the number of wire packets in both queues: a GSO
// super-packet counts as its segments.
func (q *Queue[T]) Len() int { return q.segsL + q.segsC }

// Backlog returns the number of bytes in both queues.
func (q *Queue[T]) Backlog() int { return q.bytesL + q.bytesC }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.Len(), q.Backlog()
	return s
}

// Reconfigure validates cfg and applies it while packets are queued. No
// queued packet is duplicated, reordered or moved to the other queue. A
// new limit below what is queued drains the queue down to it, as Linux
// does since its 2026 fix: head packets of the Classic queue first, then
// of the L4S queue, each handed to the DropFunc as [aqm.DroppedOverlimit]
// and counted. p' carries over (capped at 1/k with OverflowOnOverload), as
// does the PI update schedule (an update that a shorter Tupdate leaves
// more than one period ahead is re-anchored one Tupdate after the next
// call); the WRR credit starts over if both queues are empty or its
// initial value MTU·(wc−wl) changed (Linux recomputes it whenever
// classic_protection is set). A zero Seed keeps the random stream; a
// non-zero Seed other than the one in use reseeds it. It allocates if the
// packet limit changes.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if cfg.Seed == 0 {
		cfg.Seed = q.par.seed
	}
	par, err := cfg.derive()
	if err != nil {
		return err
	}
	resize := func(r *ring.Ring[aqm.Packet[T]]) {
		want := max(par.limitPkts, r.Len()) // the excess leaves at the next call
		if want == r.Cap() {
			return
		}
		var nr ring.Ring[aqm.Packet[T]]
		nr.Init(want)
		for {
			p, ok := r.PopFront()
			if !ok {
				break
			}
			nr.PushBack(p)
		}
		*r = nr
	}
	resize(&q.l)
	resize(&q.c)
	q.setMem()
	q.cfg = cfg.withDefaults()
	if par.seed != q.par.seed {
		q.ctl.rnd.Seed(par.seed)
	}
	resetCredit := q.Len() == 0 || par.creditInit != q.par.creditInit
	q.par = par
	q.ctl.updFloor = q.ctl.nextUpd - aqm.Time(par.tupdate) // the schedule carries over
	if !q.ctl.started {
		q.ctl.updFloor = math.MinInt64
	}
	q.ctl.p48 = min(q.ctl.p48, par.pmax)
	q.drain = q.Len() > par.limitPkts || q.Backlog() > par.limitBytes
	if q.drain {
		// Drain at the next Enqueue or Dequeue, where the DropFunc may
		// run: a floor no time passes sends advance to its slow path.
		q.drainFloor = q.ctl.updFloor
		q.ctl.updFloor = math.MaxInt64
	}
	if resetCredit {
		q.credit = par.creditInit
	}
	q.ctl.derive(&q.par)
	return nil
}
