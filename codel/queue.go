package codel

import (
	"iter"
	"math"
	"math/bits"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/taildrop"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Queue is a CoDel queue (RFC 8289): a FIFO with a packet limit (and an
// optional byte limit) that drops or marks at dequeue time when the minimum
// sojourn time stays above Target for an Interval. It implements
// [aqm.Queue] and its burst path [aqm.BatchQueue]. It is not safe for
// concurrent use.
type Queue[T any] struct {
	ring         ring.Ring[aqm.Packet[T]]
	backlog      int
	segs         int // wire packets queued: a super-packet counts its segments
	limitPackets int
	limitBytes   int // 0: none
	p            Params
	c            Controller
	onDrop       aqm.DropFunc[T]
	cfg          Config // effective: defaults filled in
	stats        aqm.Stats
	ecnMarks     uint64
	ceMarks      uint64
	capHits      uint64
}

var _ aqm.BatchQueue[int] = (*Queue[int])(nil)

// New returns an empty CoDel queue. onDrop receives the packets CoDel drops
// at dequeue time; it may be nil. The error joins one [*aqm.ConfigError]
// per bad field, each wrapping [aqm.ErrInvalidConfig].
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	q := &Queue[T]{onDrop: onDrop}
	q.apply(cfg)
	q.ring.Init(cfg.LimitPackets)
	return q, nil
}

// apply installs cfg, which has its defaults filled in.
func (q *Queue[T]) apply(cfg Config) {
	q.cfg = cfg
	q.p = cfg.Params()
	q.limitPackets = cfg.LimitPackets
	q.limitBytes = cfg.LimitBytes
}

// Config returns the effective configuration: the one given to New or
// Reconfigure with every default filled in.
func (q *Queue[T]) Config() Config { return q.cfg }

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets; the CoDel state carries over (a deadline or
// drop time more than the new Interval ahead is taken again from now when
// the next packet is examined). A limit below the current occupancy keeps
// the queued packets and refuses arrivals until the queue has drained
// below it. It allocates if LimitPackets grows.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	q.ring.Resize(cfg.LimitPackets) // keeps every queued packet, in order
	if q.cfg.SelectsNQB() && !cfg.SelectsNQB() {
		// Queued NQB packets stop being selected: the selection bit is
		// cleared, so that no packet carries it while the fast paths (no
		// CE threshold) deliver without clearing it.
		for i := range q.ring.Len() {
			q.ring.At(i).ECN &= aqm.ECNMask
		}
	}
	q.apply(cfg)
	return nil
}

// Enqueue stamps p with now and appends it, or refuses it with
// [aqm.DroppedOverlimit] if a limit is reached. Refusals do not touch the
// CoDel state. The CE threshold selects p on its ECN field alone; see
// [Queue.EnqueueDSCP].
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	tally.NoteSize(&q.stats, p.Size)
	segs := p.SegmentCount()
	if q.segs+segs > q.limitPackets ||
		(q.limitBytes > 0 && int64(q.backlog)+int64(p.Size) > int64(q.limitBytes)) {
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	q.ring.PushBack(p) // room: Len ≤ segs < limitPackets ≤ Cap
	q.backlog += int(p.Size)
	q.segs += segs
	q.stats.Enqueued.AddMeta(p.Meta)
	return aqm.Enqueued
}

// EnqueueDSCP is Enqueue for a packet whose DSCP the caller read (the six
// high bits of the IPv4 TOS or IPv6 Traffic Class byte, as package iphdr's
// Flow.DSCP gives it): with CEThresholdNQB (and CEThreshold and
// CEThresholdECT1Only), an ECN-capable packet with DSCP [aqm.DSCPNQB] (45) is
// selected for the CE threshold as an L4S packet is. Every other packet is
// treated as Enqueue treats it. The selection travels with the queued
// packet in a bit above the two ECN bits, cleared before the packet leaves
// by Dequeue or the DropFunc.
func (q *Queue[T]) EnqueueDSCP(p aqm.Packet[T], dscp uint8, now aqm.Time) aqm.Verdict {
	v := q.Enqueue(p, now)
	if v.Accepted() {
		// Enqueue appended p (it never marks or evicts), so it is the newest.
		q.ring.Back().ECN = q.p.SelectDSCP(p.ECN, dscp)
	}
	return v
}

// Dequeue returns the next packet to send, after dropping (through the
// DropFunc, as [aqm.DroppedEarly]) the packets CoDel's control law drops,
// at most 256 per call. A returned packet whose ECN is CE was
// marked by CoDel or by the CE threshold (or arrived CE).
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if p, ok = q.ring.PopFront(); !ok {
		q.c.Empty(&q.p, now)
		return p, false
	}
	return q.dequeueFrom(p, now)
}

// dequeueFrom is Dequeue after its first pop: p has just left the ring.
func (q *Queue[T]) dequeueFrom(p aqm.Packet[T], now aqm.Time) (aqm.Packet[T], bool) {
	drops := 0
	for {
		q.backlog -= int(p.Size)
		q.segs -= p.SegmentCount()
		act := Deliver
		// A packet SelectDSCP flagged never takes the fast path (it needs no
		// CE threshold, the flag needs one): both other ways clear the
		// flag, so that it reaches neither the caller nor the DropFunc.
		if drops >= maxDropsPerDequeue {
			q.c.Resync(&q.p, now)
			q.capHits++
			p.ECN &= aqm.ECNMask
		} else if sojourn := p.Enqueued.Since(now); !q.c.DeliverIfBelowTarget(&q.p, sojourn) {
			act = q.c.Decide(&q.p, now, sojourn, q.backlog, p.ECN)
			p.ECN &= aqm.ECNMask
		}
		switch act {
		case Drop:
			drops++
			tally.DropMeta(&q.stats, aqm.DroppedEarly, p.Meta, true)
			if q.onDrop != nil {
				q.onDrop(p, aqm.DroppedEarly)
			}
			var ok bool
			if p, ok = q.ring.PopFront(); !ok {
				q.c.Empty(&q.p, now)
				return p, false
			}
			continue
		case Mark:
			p.ECN = aqm.CE
			q.ecnMarks += uint64(p.SegmentCount())
			q.stats.Marked.AddMeta(p.Meta)
		case MarkCE:
			p.ECN = aqm.CE
			q.ceMarks += uint64(p.SegmentCount())
			q.stats.Marked.AddMeta(p.Meta)
		}
		q.stats.Dequeued.AddMeta(p.Meta)
		return p, true
	}
}

// EnqueueBatch offers ps[i] for i < n = min(len(ps), len(vs)) at now, as n
// calls of Enqueue would, writes each verdict into vs[i] and returns the
// number accepted ([aqm.BatchQueue]).
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	if n == 1 { // no run to share the set-up with
		return tally.Single(vs, q.Enqueue(ps[0], now))
	}
	return taildrop.EnqueueBatch(taildrop.Queue[T]{Ring: &q.ring, Stats: &q.stats, Segs: &q.segs, Backlog: &q.backlog,
		LimitPackets: q.limitPackets, LimitBytes: q.limitBytes}, ps, vs, now, nil)
}

// DequeueBatch removes up to len(buf) packets at now into buf[:n], as n
// calls of Dequeue would, and returns n; n < len(buf) only when the queue
// is empty ([aqm.BatchQueue]). Two common cases leave in tight loops:
// packets below target while CoDel is not dropping, and packets above
// target while CoDel is dropping but its next drop is not yet due. Any
// other packet goes through Dequeue's logic.
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	if len(buf) == 1 { // no run to share the set-up with
		p, ok := q.Dequeue(now)
		if !ok {
			return 0
		}
		buf[0] = p
		return 1
	}
	i := 0
	for i < len(buf) {
		c := &q.c
		var j int
		switch {
		case q.p.ceThreshold != 0 || c.flags&(flagPending|flagEntered) != 0:
			j = i // no run: the single path
		case c.flags&flagDropping == 0:
			j = q.runBelowTarget(buf, i, now)
		case c.flags&flagAbove != 0 && now < c.dropNext && subSat(c.dropNext, now) <= q.p.interval &&
			(now > c.firstAbove || now == c.firstAbove && !q.p.strict):
			j = q.runNotDue(buf, i, now)
		default:
			j = i
		}
		if j > i {
			i = j
			continue
		}
		p, ok := q.Dequeue(now) // the head ends the run, or the queue is empty
		if !ok {
			return i
		}
		buf[i] = p
		i++
	}
	return i
}

// runBelowTarget delivers packets into buf[i:] while their sojourn time is
// below target, for a controller that is not dropping (and no CE
// threshold), and returns the index after the last one. Decide would
// deliver each, record its sojourn time and forget the above-target
// deadline; the run records the last sojourn time once.
func (q *Queue[T]) runBelowTarget(buf []aqm.Packet[T], i int, now aqm.Time) int {
	target := q.p.target
	if f := q.ring.Front(); f == nil || int64(f.Enqueued.Since(now)) >= target {
		return i // no run: the common case when CoDel is about to act
	}
	start := i
	var by uint64
	segs := 0
	for i < len(buf) {
		run := q.ring.Peek(len(buf) - i) // the oldest packets, up to the storage's end
		dst := buf[i:]
		dst = dst[:len(run)]
		m := 0
		for ; m < len(run); m++ {
			if int64(run[m].Enqueued.Since(now)) >= target {
				break
			}
			dst[m] = run[m]
			by += uint64(run[m].Size)
			segs += run[m].SegmentCount()
		}
		q.ring.Discard(m)
		i += m
		if m == 0 || m < len(run) {
			break
		}
	}
	if i > start {
		q.c.DeliverIfBelowTarget(&q.p, buf[i-1].Enqueued.Since(now))
		q.backlog -= int(by)
		q.segs -= segs
		q.stats.Dequeued.Packets += uint64(segs)
		q.stats.Dequeued.Bytes += by
	}
	return i
}

// runNotDue delivers packets into buf[i:] for a controller in the dropping
// state whose next drop is not due (the caller checked: no signal pending,
// the above-target deadline passed, now before a sane drop_next, no CE
// threshold) while each packet is at or above target with more than an MTU
// left behind it, and returns the index after the last one. For each,
// Decide would find it still OK to drop, not yet at drop_next, and
// deliver it unchanged, recording its sojourn time; the run records the
// last sojourn time once.
func (q *Queue[T]) runNotDue(buf []aqm.Packet[T], i int, now aqm.Time) int {
	target, mtu := q.p.target, q.p.mtu
	backlog := q.backlog
	if f := q.ring.Front(); f == nil || int64(f.Enqueued.Since(now)) < target || int64(backlog)-int64(f.Size) <= mtu {
		return i // no run
	}
	start := i
	var by uint64
	segs := 0
	for i < len(buf) {
		run := q.ring.Peek(len(buf) - i)
		dst := buf[i:]
		dst = dst[:len(run)]
		m := 0
		for ; m < len(run); m++ {
			f := &run[m]
			if int64(f.Enqueued.Since(now)) < target || int64(backlog)-int64(f.Size) <= mtu {
				break
			}
			dst[m] = *f
			backlog -= int(f.Size)
			by += uint64(f.Size)
			segs += f.SegmentCount()
		}
		q.ring.Discard(m)
		i += m
		if m == 0 || m < len(run) {
			break
		}
	}
	if i > start {
		q.c.ldelay = uint32(min(int64(buf[i-1].Enqueued.Since(now)), math.MaxUint32))
		q.backlog = backlog
		q.segs -= segs
		q.stats.Dequeued.Packets += uint64(segs)
		q.stats.Dequeued.Bytes += by
	}
	return i
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

// Detail is the CoDel-specific state of a [Queue], the analogue of Linux's
// tc_codel_xstats.
type Detail struct {
	// State is the controller's state.
	State
	// MarkedCoDel counts packets CoDel marked CE instead of dropping, in wire
	// packets (a super-packet counts its segments).
	MarkedCoDel uint64 `metric:"marked_codel_packets,counter"`
	// MarkedCEThreshold counts packets marked CE by the CE threshold, in wire packets.
	MarkedCEThreshold uint64 `metric:"marked_ce_threshold_packets,counter"`
	// CappedDequeues counts Dequeue calls that reached their bound of 256 drops.
	CappedDequeues uint64 `metric:"capped_dequeues,counter"`
	// MemoryBytes is the memory the queue preallocated for packets: room
	// for LimitPackets packets, rounded up to a power of two, times the
	// size of an [aqm.Packet] of the queue's payload type.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// Detail returns a snapshot of the CoDel state and counters.
func (q *Queue[T]) Detail() Detail {
	var p aqm.Packet[T]
	mem := q.ring.Cap()
	if mem > 0 {
		mem = 1 << bits.Len(uint(mem-1))
	}
	return Detail{
		State: q.c.State(), MarkedCoDel: q.ecnMarks, MarkedCEThreshold: q.ceMarks, CappedDequeues: q.capHits,
		MemoryBytes: mem * int(unsafe.Sizeof(p)),
	}
}

// metrics lists the values of d as [aqm.Metric]s named in the words of
// Linux tc's codel statistics, units in the name: count, lastcount,
// dropping (0 or 1), ldelay_seconds (the last sojourn time),
// next_drop_time_seconds and first_above_time_seconds (instants in the
// caller's clock, 0 when unset), marked_codel_packets,
// marked_ce_threshold_packets, capped_dequeues and memory_bytes.
func (d Detail) metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }
