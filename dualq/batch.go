package dualq

import "github.com/aqmkit/aqmkit/aqm"

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
