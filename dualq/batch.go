package dualq

import "github.com/aqmkit/aqmkit/aqm"

// The burst forms of Enqueue and Dequeue. Each runs the PI updates due by
// now once (at one instant advance is idempotent), then one step per
// packet. EnqueueBatch has no twin: it calls Enqueue's body, enqueueTo,
// per packet. DequeueBatch's loop body is written out so that no call is
// made per packet; it keeps only the bookkeeping, and every decision is
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
	for k := range ps {
		v := q.enqueueTo(ps[k], q.isL4S(ps[k].ECN&aqm.ECNMask), now)
		vs[k] = v
		if v.Accepted() {
			accepted++
		}
	}
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
