package dualq

import (
	"math"
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
