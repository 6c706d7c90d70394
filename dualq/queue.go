package dualq

import (
	"math"
	"time"

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
	started   bool                     // nextUpd is set
	p48       int64                    // p', 2^48 scale, in [0, par.pmax]
	prevDelay int64                    // the delay seen by the previous update, ns
	rnd       rng.Source
	par       params
	onDrop    aqm.DropFunc[T]
	stats     aqm.Stats

	// Detail-only state.
	lastNow    aqm.Time // latest instant seen
	stepMarks  uint64
	maxLen     int
	maxBacklog int
	updates    uint64
}

var _ aqm.Queue[int] = (*Queue[int])(nil)

// New returns an empty queue configured by cfg. onDrop receives the accepted
// packets that the AQM drops at dequeue; it may be nil. The error joins one
// error wrapping [aqm.ErrInvalidConfig] per bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	par, err := cfg.derive()
	if err != nil {
		return nil, err
	}
	// Before the first packet operation nextUpd and lastNow are the
	// earliest Time, so that advance's fast path (now < nextUpd) is never
	// taken and any instant counts as later than lastNow.
	q := &Queue[T]{par: par, onDrop: onDrop, credit: par.creditInit,
		nextUpd: math.MinInt64, lastNow: math.MinInt64}
	q.l.Init(par.limitPkts)
	q.c.Init(par.limitPkts)
	q.rnd.Seed(par.seed)
	q.derive()
	return q, nil
}

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
// update due, is small enough to inline into Enqueue and Dequeue.
func (q *Queue[T]) advance(now aqm.Time) {
	q.lastNow = max(q.lastNow, now)
	if now >= q.nextUpd {
		q.advanceSlow(now)
	}
}

// advanceSlow is advance when an update is due or before the first one is
// scheduled.
func (q *Queue[T]) advanceSlow(now aqm.Time) {
	if !q.started {
		q.started = true
		q.nextUpd = aqm.Time(satAdd(int64(now), q.par.tupdate))
		return
	}
	q.catchUp(now)
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
func (q *Queue[T]) catchUp(now aqm.Time) {
	step := uint64(q.par.tupdate)
	first := uint64(q.nextUpd)
	n := (uint64(now)-first)/step + 1 // now ≥ nextUpd, so the difference is exact in uint64
	last := int64(first + (n-1)*step) // ≤ now, so it fits in int64
	tu := int64(first)
	for m := n; m > 0; m-- {
		if q.l.Len() == 0 && q.c.Len() == 0 {
			q.update(0)
			if rest := m - 1; rest > 0 {
				q.updates += rest
				if uint64(q.p48)/uint64(q.par.alphaTarget) < rest {
					q.p48 = 0
				} else {
					q.p48 -= int64(rest) * q.par.alphaTarget
				}
			}
			break
		}
		d := q.headDelay(tu)
		q.update(d)
		if m > 1 && q.p48 == q.par.pmax && d >= q.par.target {
			q.updates += m - 1
			q.prevDelay = q.headDelay(last)
			break
		}
		tu += int64(step)
	}
	q.nextUpd = aqm.Time(satAdd(last, int64(step)))
	q.derive()
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
}

// Detail returns the algorithm state as of the latest call to Enqueue or
// Dequeue. It runs no pending PI update.
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
// OverflowOnOverload), as does the PI update schedule; the WRR credit starts
// over if both queues are empty. The random source is reseeded only if Seed
// changed. It allocates if the packet limit changes.
func (q *Queue[T]) Reconfigure(cfg Config) error {
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
	if par.seed != q.par.seed {
		q.rnd.Seed(par.seed)
	}
	q.par = par
	q.p48 = min(q.p48, par.pmax)
	if q.Len() == 0 {
		q.credit = par.creditInit
	}
	q.derive()
	return nil
}
