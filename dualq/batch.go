package dualq

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// The burst forms of Enqueue and Dequeue. Each runs the PI updates due by
// now once (at one instant advance is idempotent), then one step per
// packet. EnqueueBatch's loop body is enqueueTo written out, with the
// queue's counts in registers, unless DropEnqueue is set (then it calls
// enqueueTo per packet). DequeueBatch's loop body is written out so that
// no call is made per packet; it keeps only the bookkeeping, and every decision is
// the controller's (pi2.go), asked through the same calls as the single
// path, so a change to a decision reaches both forms. The twin and what
// it mirrors:
//
//	DequeueBatch, loop body   mirrors Dequeue's loop: scheduler pick, pop,
//	                          noStep bit, safeguard, controller decision
//	                          (decideNotECTInL, decideL4SAlone,
//	                          decideL4SCoupled, decideClassic), mark or
//	                          drop, WRR credit
//
//	EnqueueBatch, loop body   mirrors enqueueTo without DropEnqueue:
//	                          limits, classification, noStep bit, push,
//	                          counters (with DropEnqueue it calls enqueueTo)
//	classicRun                mirrors Dequeue's loop while the L4S queue is
//	                          empty and the Classic AQM cannot act (p_C = 0
//	                          or DropEnqueue): pop, keep, count
//
// A fix to either side must be made to its twin; the kit's Burst check
// compares the two forms on random traces.

// EnqueueBatch offers ps[i], i < n = min(len(ps), len(vs)), in order at
// time now, writes each verdict into vs[i] and returns how many were
// accepted: the outcome of n calls of Enqueue, as [aqm.BatchQueue]
// defines it. It runs Enqueue's body, enqueueTo, per packet.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	if n == 0 {
		return 0
	}
	q.advance(now)
	ps, vs = ps[:n], vs[:n]
	accepted := 0
	if q.par.dropEnq {
		for k := range ps {
			v := q.enqueueTo(ps[k], q.isL4S(ps[k].ECN&aqm.ECNMask), now)
			vs[k] = v
			if v.Accepted() {
				accepted++
			}
		}
		return accepted
	}
	// enqueueTo without DropEnqueue, its counts in locals.
	bytesL, bytesC, segsL, segsC := q.bytesL, q.bytesC, q.segsL, q.segsC
	maxLen, maxBacklog := q.maxLen, q.maxBacklog
	limitPkts, limitBytes, minQlen := q.par.limitPkts, q.par.limitBytes, q.par.minQlen
	for k := range ps {
		p := ps[k]
		p.ECN &= aqm.ECNMask
		p.Enqueued = now
		tally.NoteSize(&q.stats, p.Size)
		size, segs := int(p.Size), p.SegmentCount()
		backlog := bytesL + bytesC
		n := segsL + segsC
		if n+segs > limitPkts || size > limitBytes-backlog {
			tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
			vs[k] = aqm.DroppedOverlimit
			continue
		}
		if q.isL4S(p.ECN) {
			if segsL < minQlen {
				p.ECN |= noStep
			}
			q.l.PushBack(p)
			bytesL += size
			segsL += segs
		} else {
			q.c.PushBack(p)
			bytesC += size
			segsC += segs
		}
		q.stats.Enqueued.AddMeta(p.Meta)
		maxLen = max(maxLen, n+segs)
		maxBacklog = max(maxBacklog, backlog+size)
		vs[k] = aqm.Enqueued
		accepted++
	}
	q.bytesL, q.bytesC, q.segsL, q.segsC = bytesL, bytesC, segsL, segsC
	q.maxLen, q.maxBacklog = maxLen, maxBacklog
	return accepted
}

// DequeueBatch removes up to len(buf) packets at time now into buf and
// returns how many: the outcome of that many calls of Dequeue, as
// [aqm.BatchQueue] defines it (packets the AQM drops go to the DropFunc
// and do not count). Its loop body is a twin of [Queue.Dequeue]'s loop.
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	if len(buf) == 0 {
		return 0
	}
	q.advance(now)
	if q.l.Len() == 0 && (q.ctl.pC == 0 || q.par.dropEnq) {
		return q.classicRun(buf)
	}
	k := 0
	for k < len(buf) {
		lq, cq := q.l.Len() > 0, q.c.Len() > 0
		if !lq && !cq {
			// Both queues empty: the WRR credit starts over (Linux).
			q.credit = q.par.creditInit
			return k
		}
		fromL := lq
		if lq && cq {
			fromL = q.pickBoth()
		}
		var p aqm.Packet[T]
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
		buf[k] = p
		k++
	}
	return k
}

// classicRun is DequeueBatch while the L4S queue is empty and the Classic
// AQM cannot act (p_C is 0, or DropEnqueue acted at arrival): then every
// Classic packet is kept (decideClassic), no credit moves (the L4S queue
// does not wait) and no L4S packet arrives during the burst, so Dequeue's
// loop reduces to popping the Classic head with its ECN field cleaned, in
// runs of the ring's storage. Both queues empty before buf is full: the
// credit starts over, as in Dequeue.
func (q *Queue[T]) classicRun(buf []aqm.Packet[T]) int {
	k := 0
	for k < len(buf) {
		run := q.c.Peek(len(buf) - k)
		if len(run) == 0 {
			q.credit = q.par.creditInit
			break
		}
		out := buf[k : k+len(run)]
		bytes, segs := 0, 0
		for i := range run {
			p := run[i]
			p.ECN &= aqm.ECNMask
			out[i] = p
			bytes += int(p.Size)
			segs += p.SegmentCount()
		}
		q.c.Discard(len(run))
		q.bytesC -= bytes
		q.segsC -= segs
		q.stats.Dequeued.Packets += uint64(segs)
		q.stats.Dequeued.Bytes += uint64(bytes)
		k += len(run)
	}
	return k
}
