package sfq

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// This file holds SFQ's burst twins. Each block below mirrors a
// single-packet function, whose doc names it back; a fix to one belongs in
// the other.
//
//	EnqueueBatch, its inline arrival   Enqueue's common case: the arrival's
//	                                   flow is below DepthPackets, the queue
//	                                   below LimitPackets, and there is no
//	                                   byte limit, so nothing is evicted
//	                                   (from taking a free node to counting
//	                                   the packet).
//	DequeueBatch, its loop body        Dequeue: the turn to the next flow,
//	                                   one step inline and the rest in
//	                                   advance, then the head node written
//	                                   out and released.

// EnqueueBatch offers ps[i], i < n = min(len(ps), len(vs)), in order at
// time now, writes each verdict into vs[i] and returns how many were
// accepted: the outcome of n calls of Enqueue, as [aqm.BatchQueue]
// defines it. Arrivals below every limit are handled inline; the rest
// take Enqueue's own path.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	if n == 0 {
		return 0
	}
	// Enqueue's perturbation check is idempotent at one instant, so one
	// call covers the burst.
	if q.p.period > 0 {
		q.maybePerturb(now)
	}
	ps, vs = ps[:n], vs[:n]
	accepted := 0
	noBytes := q.p.limitBytes == 0
	for k := range ps {
		pk := &ps[k]
		if !noBytes || q.n+pk.SegmentCount() > q.p.limit {
			v := q.Enqueue(*pk, now)
			vs[k] = v
			if v.Accepted() {
				accepted++
			}
			continue
		}
		b := bucketOf(pk.Hash, q.key, q.p.divisor)
		x := q.ht[b]
		if x == none {
			x = q.attach(b)
		}
		s := &q.slots[x]
		if s.n >= q.p.depth {
			v := q.Enqueue(*pk, now)
			vs[k] = v
			if v.Accepted() {
				accepted++
			}
			continue
		}
		// Below the packet limit with no byte limit: the arrival fits and
		// nothing is evicted. The rest is Enqueue's common case.
		i := q.free
		nd := &q.nodes[i]
		q.free = nd.next
		nd.pkt = *pk
		nd.pkt.ECN &= aqm.ECNMask
		nd.pkt.Enqueued = now
		size := nd.pkt.Size
		tally.NoteSize(&q.stats, size)
		q.linkTail(s, i)
		s.backlog += uint64(size)
		q.moveDepth(x, s.n+1)
		s.n++
		if s.n > q.curDepth {
			q.curDepth = s.n
		}
		if s.n == 1 {
			q.activate(x)
		}
		q.n += nd.pkt.SegmentCount()
		q.backlog += int(size)
		q.stats.Enqueued.AddMeta(nd.pkt.Meta)
		vs[k] = aqm.Enqueued
		accepted++
	}
	return accepted
}

// DequeueBatch removes up to len(buf) packets at time now into buf and
// returns how many: the outcome of that many calls of Dequeue, as
// [aqm.BatchQueue] defines it. Dequeue's work is done inline except a turn
// that skips more than one flow (quanta smaller than the packets).
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	for k := range buf {
		if q.tail == none {
			return k
		}
		x := q.slots[q.tail].next
		s := &q.slots[x]
		if s.allot <= 0 {
			// Dequeue's turn to the next flow: one step inline, the rest
			// of a round (quanta smaller than the packets) out of line.
			q.tail = x
			s.allot += q.p.quantum
			x = s.next
			s = &q.slots[x]
			if s.allot <= 0 {
				x = q.advance(q.active)
				s = &q.slots[x]
			}
		}
		i := s.head
		nd := &q.nodes[i]
		next := nd.next
		s.head = next
		if next == none {
			s.tail = none
		}
		buf[k] = nd.pkt
		size := nd.pkt.Size
		s.backlog -= uint64(size)
		*nd = node[T]{next: q.free}
		q.free = i
		d := s.n
		if q.moveDepth(x, d-1) && q.curDepth == d {
			q.curDepth--
		}
		s.n = d - 1
		q.n -= buf[k].SegmentCount()
		q.backlog -= int(size)
		if d == 1 {
			q.release(x)
		} else {
			s.allot -= int64(size)
		}
		q.stats.Dequeued.AddMeta(buf[k].Meta)
	}
	return len(buf)
}
