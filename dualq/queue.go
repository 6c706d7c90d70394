package dualq

import (
	"iter"
	"math"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Queue is a DualQ Coupled AQM with a PI2 base (DualPI2): an L4S queue and
// a Classic queue sharing one link, one buffer limit and one PI controller.
// Build it with [New]. It implements [aqm.Queue]. It is not safe for
// concurrent use.
type Queue[T any] struct {
	// Hot state first.
	l, c      ring.Ring[aqm.Packet[T]] // the L4S and Classic queues
	bytesL    int                      // bytes queued in l
	bytesC    int                      // bytes queued in c
	pC        uint64                   // Classic probability p'^2, 2^32 scale
	pCL       uint64                   // coupled L4S probability min(k·p', 1), 2^32 scale
	overload  bool                     // k·p' ≥ 1 and overload drops are on
	credit    int64                    // WRR credit: > 0 means Classic is served next
	nextUpd   aqm.Time                 // instant of the next PI update
	updFloor  aqm.Time                 // nextUpd − Tupdate: an earlier now re-anchors the schedule
	started   bool                     // nextUpd is set
	p48       int64                    // p', 2^48 scale, in [0, par.pmax]
	prevDelay int64                    // the delay seen by the previous update, ns
	rnd       rng.Source
	par       params
	onDrop    aqm.DropFunc[T]
	stats     aqm.Stats

	// Detail-only state.
	lastNow    aqm.Time // the instant of the latest call
	cfg        Config   // effective: defaults filled in, the seed in use
	memBytes   int      // bytes of the two rings
	stepMarks  uint64
	maxLen     int
	maxBacklog int
	updates    uint64
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
		nextUpd: math.MinInt64, updFloor: math.MinInt64, lastNow: math.MinInt64, cfg: cfg.withDefaults()}
	q.l.Init(par.limitPkts)
	q.c.Init(par.limitPkts)
	q.setMem()
	q.rnd.Seed(par.seed)
	q.derive()
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

// Enqueue classifies p by its ECN field and appends it to the L4S or the
// Classic queue, or refuses it with [aqm.DroppedOverlimit] if the shared
// packet or byte limit is full. It never drops early: the AQM acts at
// dequeue. Pending PI updates up to now run first.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	q.stats.NoteSize(p.Size)
	q.advance(now)
	size := int(p.Size)
	backlog := q.bytesL + q.bytesC
	if q.l.Len()+q.c.Len() >= q.par.limitPkts || size > q.par.limitBytes-backlog {
		q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
		return aqm.DroppedOverlimit
	}
	// Room in either ring: the shared packet limit was checked above and
	// each ring holds that many.
	if q.isL4S(p.ECN) {
		q.l.PushBack(p)
		q.bytesL += size
	} else {
		q.c.PushBack(p)
		q.bytesC += size
	}
	q.stats.Enqueued.Add(p.Size)
	if n := q.l.Len() + q.c.Len(); n > q.maxLen {
		q.maxLen = n
	}
	if b := backlog + size; b > q.maxBacklog {
		q.maxBacklog = b
	}
	return aqm.Enqueued
}

// roll returns true with probability p/2^32. It draws a random number only
// when 0 < p < 2^32, so a queue whose probabilities are 0 or 1 never touches
// its random source.
func (q *Queue[T]) roll(p uint64) bool {
	if p == 0 {
		return false
	}
	if p >= one32 {
		return true
	}
	return uint64(q.rnd.Uint32()) < p
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

// native returns the native L4S AQM's marking probability (2^32 scale) for
// a packet that waited sojourn ns; lenAfter is the L4S queue length after it
// was popped.
func (q *Queue[T]) native(sojourn int64, lenAfter int) uint64 {
	if !q.par.ramp {
		if sojourn > q.par.step {
			return one32
		}
		return 0
	}
	// RFC 9332 ramp, applied only while the L4S queue held more than
	// Th_len = 1 packet (counting the one being dequeued).
	if lenAfter < 1 || sojourn <= q.par.rampMin {
		return 0
	}
	x := sojourn - q.par.rampMin
	if x >= q.par.rampRange {
		return one32
	}
	// x < rampRange ≤ 1 s < 2^30, so x<<32 < 2^62.
	return uint64(x<<32) / uint64(q.par.rampRange)
}

// Dequeue picks a queue with the scheduler, pops its head and applies the
// AQM: L4S packets are marked with probability max(native, k·p'); Classic
// packets are marked (ECN-capable) or dropped (Not-ECT) with probability
// p'². In overload (p' ≥ 1/k) ECN-capable packets of both queues are
// dropped with probability p'² instead of marked, and every surviving L4S
// packet is marked. Dropped packets go to the DropFunc and the loop goes on
// until a packet survives or both queues are empty. Pending PI updates up to
// now run first.
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
		if fromL {
			p, _ = q.l.PopFront()
			q.bytesL -= int(p.Size)
		} else {
			p, _ = q.c.PopFront()
			q.bytesC -= int(p.Size)
		}
		coupled := q.bytesL+q.bytesC >= q.par.minBacklog
		if fromL {
			if coupled && q.overload {
				if q.roll(q.pC) {
					q.drop(p, aqm.DroppedOverload)
					continue
				}
				p.ECN = q.mark(p.Size)
			} else {
				pn := q.native(age(int64(p.Enqueued), int64(now)), q.l.Len())
				var pc uint64
				if coupled {
					pc = q.pCL
				}
				if pn >= pc {
					if q.roll(pn) {
						p.ECN = q.mark(p.Size)
						q.stepMarks++
					}
				} else if q.roll(pc) {
					p.ECN = q.mark(p.Size)
				}
			}
			if cq {
				q.credit += q.par.wc * int64(p.Size)
			}
		} else {
			if coupled && q.roll(q.pC) {
				switch {
				case p.ECN == aqm.NotECT:
					q.drop(p, aqm.DroppedEarly)
					continue
				case q.overload:
					q.drop(p, aqm.DroppedOverload)
					continue
				}
				p.ECN = q.mark(p.Size)
			}
			if lq {
				q.credit -= q.par.wl * int64(p.Size)
			}
		}
		q.stats.Dequeued.Add(p.Size)
		return p, true
	}
}

// EnqueueBatch offers ps[i], i < n = min(len(ps), len(vs)), in order at
// time now, writes each verdict into vs[i] and returns how many were
// accepted: the outcome of n calls of Enqueue, as [aqm.BatchQueue]
// defines it.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	if n == 0 {
		return 0
	}
	// The updates due by now run once: at one instant advance is
	// idempotent.
	q.advance(now)
	ps, vs = ps[:n], vs[:n]
	accepted := 0
	for k := range ps {
		p := ps[k]
		p.ECN &= aqm.ECNMask
		p.Enqueued = now
		q.stats.NoteSize(p.Size)
		size := int(p.Size)
		backlog := q.bytesL + q.bytesC
		if q.l.Len()+q.c.Len() >= q.par.limitPkts || size > q.par.limitBytes-backlog {
			q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
			vs[k] = aqm.DroppedOverlimit
			continue
		}
		if q.isL4S(p.ECN) {
			q.l.PushBack(p)
			q.bytesL += size
		} else {
			q.c.PushBack(p)
			q.bytesC += size
		}
		q.stats.Enqueued.Add(p.Size)
		if n := q.l.Len() + q.c.Len(); n > q.maxLen {
			q.maxLen = n
		}
		if b := backlog + size; b > q.maxBacklog {
			q.maxBacklog = b
		}
		vs[k] = aqm.Enqueued
		accepted++
	}
	return accepted
}

// DequeueBatch removes up to len(buf) packets at time now into buf and
// returns how many: the outcome of that many calls of Dequeue, as
// [aqm.BatchQueue] defines it (packets the AQM drops go to the DropFunc
// and do not count). The packets that cannot be dropped (L4S outside
// overload, Classic while p_C is 0) are served inline; the rest take
// Dequeue's own path.
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	if len(buf) == 0 {
		return 0
	}
	// The updates due by now run once: at one instant advance is
	// idempotent.
	q.advance(now)
	minBacklog := q.par.minBacklog
	for k := range buf {
		nl, nc := q.l.Len(), q.c.Len()
		if nl == 0 && nc == 0 {
			// Both queues empty: the WRR credit starts over (Linux).
			q.credit = q.par.creditInit
			return k
		}
		fromL := nl > 0
		if fromL && nc > 0 {
			fromL = q.pickBoth()
		}
		if fromL && q.overload || !fromL && q.pC != 0 {
			p, ok := q.Dequeue(now) // may drop: the rare path
			if !ok {
				return k
			}
			buf[k] = p
			continue
		}
		var p aqm.Packet[T]
		if fromL {
			p, _ = q.l.PopFront()
			q.bytesL -= int(p.Size)
			pn := q.native(age(int64(p.Enqueued), int64(now)), nl-1)
			var pc uint64
			if q.bytesL+q.bytesC >= minBacklog {
				pc = q.pCL
			}
			if pn >= pc {
				if q.roll(pn) {
					p.ECN = q.mark(p.Size)
					q.stepMarks++
				}
			} else if q.roll(pc) {
				p.ECN = q.mark(p.Size)
			}
			if nc > 0 {
				q.credit += q.par.wc * int64(p.Size)
			}
		} else {
			p, _ = q.c.PopFront()
			q.bytesC -= int(p.Size)
			if nl > 0 {
				q.credit -= q.par.wl * int64(p.Size)
			}
		}
		q.stats.Dequeued.Add(p.Size)
		buf[k] = p
	}
	return len(buf)
}

// mark counts a CE mark on a packet of the given size and returns CE, the
// packet's new codepoint.
func (q *Queue[T]) mark(size uint32) aqm.ECN {
	q.stats.Marked.Add(size)
	return aqm.CE
}

func (q *Queue[T]) drop(p aqm.Packet[T], why aqm.Verdict) {
	q.stats.CountDrop(why, p.Size, true)
	if q.onDrop != nil {
		q.onDrop(p, why)
	}
}

// Len returns the number of packets in both queues.
func (q *Queue[T]) Len() int { return q.l.Len() + q.c.Len() }

// Backlog returns the number of bytes in both queues.
func (q *Queue[T]) Backlog() int { return q.bytesL + q.bytesC }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.Len(), q.Backlog()
	return s
}

// Lazy PI controller.

// advance runs every PI update due at or before now. Its common case, no
// update due and no glitch, is small enough to inline into Enqueue and
// Dequeue.
func (q *Queue[T]) advance(now aqm.Time) {
	q.lastNow = now
	if now >= q.nextUpd || now < q.updFloor {
		q.advanceSlow(now)
	}
}

// advanceSlow is advance when an update is due, before the first one is
// scheduled, or when the next update lies more than one Tupdate ahead of
// now (time ran backwards, or returned from a reading far in the future):
// then the schedule is re-anchored at now, as if the queue had just
// started, and no update runs (no time has elapsed).
func (q *Queue[T]) advanceSlow(now aqm.Time) {
	if !q.started || now < q.nextUpd {
		q.started = true
		q.schedule(now)
		return
	}
	q.catchUp(now)
}

// schedule sets the next update one Tupdate after t.
func (q *Queue[T]) schedule(t aqm.Time) {
	q.nextUpd = aqm.Time(satAdd(int64(t), q.par.tupdate))
	q.updFloor = q.nextUpd - aqm.Time(q.par.tupdate)
}

// catchUp runs the n ≥ 1 updates due at nextUpd, nextUpd+T, … ≤ now. No
// packet arrived or left between them, so the head of each queue is the same
// packet at every one of those instants and each update sees exactly what a
// timer firing at that instant would have seen. The work is bounded:
//
//   - Both queues empty: every update after the first subtracts
//     alpha·target (its delay and the previous one are 0), so the rest
//     collapse to one saturating subtraction.
//   - A backlog: the head delays grow by T per update (until maxDelay), so
//     once p' has reached its cap with a delay ≥ target every later
//     increment is ≥ 0 and p' stays at the cap: the rest are skipped. Before
//     that, the delay passes target within target/T updates and p' reaches
//     the cap within about sqrt(2/(alpha·T)) more, at most ~1.1·10^4
//     updates under Validate's bounds, and only once per stall.
//   - Heads younger than the update instant (only after time ran
//     backwards): each such update sees delay 0 after delay 0, so the run
//     of them collapses like the idle case.
func (q *Queue[T]) catchUp(now aqm.Time) {
	step := uint64(q.par.tupdate)
	first := uint64(q.nextUpd)
	n := (uint64(now)-first)/step + 1 // now ≥ nextUpd, so the difference is exact in uint64
	last := int64(first + (n-1)*step) // ≤ now, so it fits in int64
	tu := int64(first)
	for m := n; m > 0; {
		if q.l.Len() == 0 && q.c.Len() == 0 {
			q.update(0)
			q.idleUpdates(m - 1)
			break
		}
		d := q.headDelay(tu)
		if d == 0 && q.prevDelay == 0 {
			// tu is not after the oldest head's arrival (possible only
			// after time ran backwards): every update until tu passes it
			// sees delay 0 after delay 0, the idle decrement. Run them at
			// once.
			k := min((uint64(q.oldestArrival())-uint64(tu))/step+1, m)
			q.idleUpdates(k)
			m -= k
			tu += int64(k * step) // wraps only when m is 0 and tu unused
			continue
		}
		q.update(d)
		if m > 1 && q.p48 == q.par.pmax && d >= q.par.target {
			q.updates += m - 1
			q.prevDelay = q.headDelay(last)
			break
		}
		m--
		tu += int64(step)
	}
	q.schedule(aqm.Time(last))
	q.derive()
}

// idleUpdates runs k PI updates that each see delay 0 after delay 0 (an
// empty queue, or heads younger than the update instant), in closed form:
// each subtracts alpha·target, down to 0.
func (q *Queue[T]) idleUpdates(k uint64) {
	if k == 0 {
		return
	}
	q.updates += k
	q.prevDelay = 0
	if uint64(q.p48)/uint64(q.par.alphaTarget) < k {
		q.p48 = 0
	} else {
		q.p48 -= int64(k) * q.par.alphaTarget
	}
}

// oldestArrival returns the earlier of the two heads' arrival instants;
// at least one queue must hold a packet.
func (q *Queue[T]) oldestArrival() aqm.Time {
	l, c := q.l.Front(), q.c.Front()
	switch {
	case l == nil:
		return c.Enqueued
	case c == nil:
		return l.Enqueued
	}
	return min(l.Enqueued, c.Enqueued)
}

// update is one PI2 step with queue delay d:
//
//	p' += alpha·(d − target) + beta·(d − d_prev), clamped to [0, pmax]
//
// in 2^-48 units; |each product| < 2^59 (see maxDelay).
func (q *Queue[T]) update(d int64) {
	delta := q.par.alpha*(d-q.par.target) + q.par.beta*(d-q.prevDelay)
	p := q.p48 + delta
	q.p48 = min(max(p, 0), q.par.pmax)
	q.prevDelay = d
	q.updates++
}

// derive recomputes the per-packet probabilities from p'.
func (q *Queue[T]) derive() {
	p32 := uint64(q.p48) >> 16 // 2^48 → 2^32 scale
	q.pCL = min(q.par.k*p32, one32)
	if p32 >= one32 {
		q.pC = one32 // p32·p32 would be 2^64
	} else {
		q.pC = p32 * p32 >> 32 // p'^2: 2^64 scale → 2^32 scale
	}
	q.overload = !q.par.overflow && q.par.k*uint64(q.p48) >= uint64(one48)
}

// headDelay returns the larger of the two head packets' ages at t, in ns,
// clamped to [0, maxDelay]; an empty queue counts as 0.
func (q *Queue[T]) headDelay(t int64) int64 {
	var d int64
	if h := q.l.Front(); h != nil {
		d = age(int64(h.Enqueued), t)
	}
	if h := q.c.Front(); h != nil {
		d = max(d, age(int64(h.Enqueued), t))
	}
	return d
}

// age returns t − enq clamped to [0, maxDelay], without int64 overflow.
func age(enq, t int64) int64 {
	if t <= enq {
		return 0
	}
	d := t - enq
	if d < 0 || d > maxDelay { // d < 0: the subtraction overflowed
		return maxDelay
	}
	return d
}

// satAdd returns a+b for b ≥ 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Detail is a snapshot of a [Queue]'s algorithm state, the analogue of
// Linux's tc_dualpi2_xstats.
type Detail struct {
	// Prob is the base probability p', in [0, 1].
	Prob float64
	// ProbRaw is p' scaled to 2^32 (1<<32 is 100 %), the value the hot path
	// derives its decisions from.
	ProbRaw uint64
	// ProbClassic is the Classic drop/mark probability p_C = p'^2.
	ProbClassic float64
	// ProbL4SCoupled is the coupled L4S mark probability p_CL = min(k·p', 1).
	ProbL4SCoupled float64
	// Overloaded reports whether k·p' ≥ 1 with overload drops on: ECN-capable
	// packets are then dropped with probability p_C instead of marked.
	Overloaded bool
	// DelayClassic and DelayL4S are the ages of the two head packets at the
	// latest instant passed to Enqueue or Dequeue (zero for an empty queue).
	DelayClassic, DelayL4S time.Duration
	// PacketsClassic and PacketsL4S are the queue lengths in packets.
	PacketsClassic, PacketsL4S int
	// BytesClassic and BytesL4S are the queue lengths in bytes.
	BytesClassic, BytesL4S int
	// MaxPackets is the largest total length seen (Linux maxq).
	MaxPackets int
	// ECNMarks counts every packet set to CE (Linux ecn_mark); StepMarks
	// counts the subset marked by the native L4S AQM (the step or ramp).
	ECNMarks, StepMarks uint64
	// DroppedEarly, DroppedOverload and DroppedOverlimit count drops in
	// packets by reason: Not-ECT Classic packets dropped with p_C,
	// ECN-capable packets dropped in overload, and arrivals refused at the
	// limit.
	DroppedEarly, DroppedOverload, DroppedOverlimit uint64
	// Credit is the WRR credit in byte-percent: > 0 means the Classic queue
	// is served next when both are backlogged.
	Credit int64
	// MemoryUsed is the bytes queued, MaxMemoryUsed its peak and MemoryLimit
	// the shared byte limit.
	MemoryUsed, MaxMemoryUsed, MemoryLimit int
	// Updates counts the PI updates run so far.
	Updates uint64
	// NextUpdate is the instant of the next PI update (zero before the
	// first packet operation).
	NextUpdate aqm.Time
	// MemoryBytes is the memory the queue preallocated: two rings of
	// LimitPackets packets each.
	MemoryBytes int
}

// Metrics lists d's values for exporters, with units in the names:
// probabilities (prob, prob_classic, prob_l4s_coupled), the overload flag
// (overloaded, 0 or 1), head delays (delay_classic_ns, delay_l4s_ns),
// queue lengths (classic_packets, l4s_packets, classic_bytes, l4s_bytes,
// max_packets), counters (ecn_marks_packets, step_marks_packets,
// dropped_early_packets, dropped_overload_packets,
// dropped_overlimit_packets, pi_updates), the WRR credit (wrr_credit),
// memory (memory_used_bytes, max_memory_used_bytes, memory_limit_bytes,
// memory_bytes) and next_update_ns.
func (d Detail) Metrics() iter.Seq[aqm.Metric] {
	b := 0.0
	if d.Overloaded {
		b = 1
	}
	ms := [...]aqm.Metric{
		{Name: "prob", Kind: aqm.Gauge, Value: d.Prob},
		{Name: "prob_classic", Kind: aqm.Gauge, Value: d.ProbClassic},
		{Name: "prob_l4s_coupled", Kind: aqm.Gauge, Value: d.ProbL4SCoupled},
		{Name: "overloaded", Kind: aqm.Gauge, Value: b},
		{Name: "delay_classic_ns", Kind: aqm.Gauge, Value: float64(d.DelayClassic)},
		{Name: "delay_l4s_ns", Kind: aqm.Gauge, Value: float64(d.DelayL4S)},
		{Name: "classic_packets", Kind: aqm.Gauge, Value: float64(d.PacketsClassic)},
		{Name: "l4s_packets", Kind: aqm.Gauge, Value: float64(d.PacketsL4S)},
		{Name: "classic_bytes", Kind: aqm.Gauge, Value: float64(d.BytesClassic)},
		{Name: "l4s_bytes", Kind: aqm.Gauge, Value: float64(d.BytesL4S)},
		{Name: "max_packets", Kind: aqm.Gauge, Value: float64(d.MaxPackets)},
		{Name: "ecn_marks_packets", Kind: aqm.Counter, Value: float64(d.ECNMarks)},
		{Name: "step_marks_packets", Kind: aqm.Counter, Value: float64(d.StepMarks)},
		{Name: "dropped_early_packets", Kind: aqm.Counter, Value: float64(d.DroppedEarly)},
		{Name: "dropped_overload_packets", Kind: aqm.Counter, Value: float64(d.DroppedOverload)},
		{Name: "dropped_overlimit_packets", Kind: aqm.Counter, Value: float64(d.DroppedOverlimit)},
		{Name: "wrr_credit", Kind: aqm.Gauge, Value: float64(d.Credit)},
		{Name: "memory_used_bytes", Kind: aqm.Gauge, Value: float64(d.MemoryUsed)},
		{Name: "max_memory_used_bytes", Kind: aqm.Gauge, Value: float64(d.MaxMemoryUsed)},
		{Name: "memory_limit_bytes", Kind: aqm.Gauge, Value: float64(d.MemoryLimit)},
		{Name: "pi_updates", Kind: aqm.Counter, Value: float64(d.Updates)},
		{Name: "next_update_ns", Kind: aqm.Gauge, Value: float64(d.NextUpdate)},
		{Name: "memory_bytes", Kind: aqm.Gauge, Value: float64(d.MemoryBytes)},
	}
	return func(yield func(aqm.Metric) bool) {
		for _, m := range ms {
			if !yield(m) {
				return
			}
		}
	}
}

// Detail returns the algorithm state as of the latest call to Enqueue or
// Dequeue (or their burst forms). It runs no pending PI update.
func (q *Queue[T]) Detail() Detail {
	d := Detail{
		Prob:             float64(q.p48) / float64(one48),
		ProbRaw:          uint64(q.p48) >> 16,
		ProbClassic:      float64(q.pC) / float64(one32),
		ProbL4SCoupled:   float64(q.pCL) / float64(one32),
		Overloaded:       q.overload,
		PacketsClassic:   q.c.Len(),
		PacketsL4S:       q.l.Len(),
		BytesClassic:     q.bytesC,
		BytesL4S:         q.bytesL,
		MaxPackets:       q.maxLen,
		ECNMarks:         q.stats.Marked.Packets,
		StepMarks:        q.stepMarks,
		DroppedEarly:     q.stats.DroppedEarly.Packets,
		DroppedOverload:  q.stats.DroppedOverload.Packets,
		DroppedOverlimit: q.stats.DroppedOverlimit.Packets,
		Credit:           q.credit,
		MemoryUsed:       q.bytesL + q.bytesC,
		MaxMemoryUsed:    q.maxBacklog,
		MemoryLimit:      q.par.limitBytes,
		Updates:          q.updates,
		MemoryBytes:      q.memBytes,
	}
	if q.started {
		d.NextUpdate = q.nextUpd
	}
	if h := q.c.Front(); h != nil {
		d.DelayClassic = h.Enqueued.Since(q.lastNow)
	}
	if h := q.l.Front(); h != nil {
		d.DelayL4S = h.Enqueued.Since(q.lastNow)
	}
	return d
}

// Reconfigure validates cfg and applies it while packets are queued. No
// queued packet is lost, duplicated, reordered or moved to the other queue;
// a new limit below the current length keeps them and refuses arrivals until
// the queue has drained below it. p' carries over (capped at 1/k with
// OverflowOnOverload), as does the PI update schedule (an update
// that a shorter Tupdate leaves more than one period ahead is re-anchored
// one Tupdate after the next call); the WRR credit starts
// over if both queues are empty. A zero Seed keeps the random stream; a
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
		want := max(par.limitPkts, r.Len())
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
		q.rnd.Seed(par.seed)
	}
	q.par = par
	q.updFloor = q.nextUpd - aqm.Time(par.tupdate) // the schedule carries over
	if !q.started {
		q.updFloor = math.MinInt64
	}
	q.p48 = min(q.p48, par.pmax)
	if q.Len() == 0 {
		q.credit = par.creditInit
	}
	q.derive()
	return nil
}
