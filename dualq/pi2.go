package dualq

import (
	"math"

	"github.com/aqmkit/aqmkit/aqm"
)

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
