package cake

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// This file holds the burst twins of the single-packet methods:
//
//   - EnqueueBatch mirrors Enqueue (enqueue, enqueueFlow);
//   - DequeueBatch and dequeueTo mirror Dequeue (dequeue, in drr.go).
//
// A fix to one side belongs on the other.

// EnqueueBatch offers ps[i] for i in [0, min(len(ps), len(vs))) at now,
// exactly as that many Enqueue calls would, writing each verdict to vs.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	ps, vs = ps[:n], vs[:n]
	acc := 0
	var none Info
	if q.shaped || q.acks != nil {
		for i := range ps {
			v := q.enqueue(ps[i], &none, false, now)
			vs[i] = v
			if v <= aqm.Marked {
				acc++
			}
		}
		return acc
	}
	// Unshaped without the ACK filter, a packet for a flow that is
	// already scheduled and fits the limits is linked in here; anything
	// else (refusal, a flow to schedule, pruning, the pruner's heap) goes
	// on through the single-packet path from the same point.
	t := 0
	if q.ntins > 1 {
		t = int(q.dscpTin[0])
	}
	b := &q.tins[t]
	// A packet of the same flow as the one before it, whose lookup was a
	// direct hit on a flow still in use, would hit it again (only lookups
	// change tags): it is counted as such without the lookup.
	lastFi, lastHash := nilIdx, uint32(0)
	for i := range ps {
		p := ps[i]
		size := p.Size
		if int64(size) > int64(q.memLimit) || int(p.Segments) > q.limit || q.len > q.limit || q.backlog > q.memLimit {
			lastFi = nilIdx
			v := q.enqueue(p, &none, false, now)
			vs[i] = v
			if v <= aqm.Marked {
				acc++
			}
			continue
		}
		p.ECN &= aqm.ECNMask
		p.Enqueued = now
		tally.NoteSize(&q.stats, size)
		var fi uint32
		if lastFi != nilIdx && p.Hash == lastHash && q.flows[lastFi].state != stNone {
			b.s.wayDirect++
			fi = lastFi
		} else {
			direct := b.s.wayDirect
			fi = q.classify(t, p.Hash, &none, false)
			lastFi, lastHash = nilIdx, p.Hash
			if b.s.wayDirect != direct {
				lastFi = fi
			}
		}
		f := &q.flows[fi]
		if f.state != stSparse && f.state != stBulk || q.len+p.SegmentCount() > q.limit ||
			q.backlog+int(size) > q.memLimit || q.overTTL > 0 || fi >= q.g.base {
			v := q.enqueueFlow(p, &none, b, fi, now)
			vs[i] = v
			if v <= aqm.Marked {
				acc++
			}
			continue
		}
		ni := q.free
		nd := &q.nodes[ni]
		q.free = nd.next
		nd.pkt, nd.next = p, nilIdx
		if f.tail == nilIdx {
			f.head = ni
		} else {
			q.nodes[f.tail].next = ni
		}
		f.tail = ni
		f.backlog += size
		b.pkts += p.SegmentCount()
		b.backlog += int(size)
		q.len += p.SegmentCount()
		q.backlog += int(size)
		if adj := q.adjLenOf(p.Meta); !q.lenSeen(b, size, adj) {
			q.noteNewLen(b, size, adj)
		}
		b.s.arrived.AddMeta(p.Meta)
		if q.backlog > q.d.memPeak {
			q.d.memPeak = q.backlog
		}
		q.stats.Enqueued.AddMeta(p.Meta)
		vs[i] = aqm.Enqueued
		acc++
	}
	return acc
}

// DequeueBatch removes up to len(buf) packets at now into buf, exactly as
// that many Dequeue calls would, and returns how many. It returns fewer
// than len(buf) when the queue is empty or the shaper holds the rest
// back.
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	if q.shaped || q.ingress {
		for i := range buf {
			p, ok := q.Dequeue(now)
			if !ok {
				return i
			}
			buf[i] = p
		}
		return len(buf)
	}
	// Unshaped and not ingress: the visit to a decaying flow and a packet
	// its COBALT delivers from a flow with credit are done here; any
	// other turn (credit to refill, a flow found empty, a drop) is handed
	// to dequeue at the point reached. The tin choice is repeated there,
	// which picks the same tin: nothing done here changes a tin's credit
	// or its count of flows with packets.
	for i := range buf {
		if q.len == 0 {
			return i
		}
		t := 0
		if q.ntins > 1 {
			t = q.pickTin(now)
		}
		b := &q.tins[t]
		if di := b.decL.head; di != nilIdx {
			f := &q.flows[di]
			if f.deficit <= 0 || f.head != nilIdx || f.state != stDecaying {
				if !q.dequeueTo(&buf[i], now, true) {
					return i
				}
				continue
			}
			if q.stillDecaying(b, f, now) {
				if b.decL.tail != di {
					q.popHead(&b.decL)
					q.pushTail(&b.decL, di)
				}
			} else {
				q.flowEmpty(b, &b.decL, di, now)
			}
		}
		// DRR++: the head of the new list, else of the old list; a flow
		// out of credit is refilled and goes to the back of the old list,
		// a flow found empty waits on the decaying list or rests. From
		// here on Dequeue has passed its first list choice, so what is
		// handed on continues with first false.
		var f *flow
		fi := nilIdx
		for {
			l := &b.newL
			if l.head == nilIdx {
				l = &b.oldL
			}
			if fi = l.head; fi == nilIdx {
				break
			}
			if f = &q.flows[fi]; f.deficit > 0 {
				if f.head != nilIdx {
					break
				}
				if f.state == stDecaying && q.stillDecaying(b, f, now) {
					q.popHead(l)
					q.pushTail(&b.decL, fi)
					continue
				}
				q.flowEmpty(b, l, fi, now)
				if q.ntins > 1 && b.sparse+b.bulk == 0 {
					// The tin choice changes only when this tin has
					// no flow with packets left (its credit is as
					// it was when it was chosen).
					fi = nilIdx
					break
				}
				continue
			}
			if f.state == stSparse {
				if f.head != nilIdx {
					f.state = stBulk
					b.sparse--
					b.bulk++
					q.bulkInc(b, f)
				} else {
					f.state = stSparseWait
				}
			}
			f.deficit += q.flowQuantum(b, f)
			if l != &b.oldL || l.tail != fi {
				q.popHead(l)
				q.pushTail(&b.oldL, fi)
			}
		}
		if fi == nilIdx {
			if !q.dequeueTo(&buf[i], now, false) {
				return i
			}
			continue
		}
		p, _ := q.popFlow(fi, b)
		act := f.cv.Decide(&b.cp, now, p.Enqueued.Since(now), p.ECN)
		if act == cobalt.Deliver || act == cobalt.Mark || f.head == nilIdx {
			if f.cv.Marked() { // as in dequeue
				p.ECN = aqm.CE
				b.s.marks += uint64(p.SegmentCount())
				q.stats.Marked.AddMeta(p.Meta)
			}
			q.sent(b, f, p, now)
			buf[i] = p
			continue
		}
		b.s.drops += uint64(p.SegmentCount())
		tally.DropMeta(&q.stats, aqm.DroppedEarly, p.Meta, true)
		if q.onDrop != nil {
			q.onDrop(p, aqm.DroppedEarly)
		}
		if !q.dequeueTo(&buf[i], now, false) {
			return i
		}
	}
	return len(buf)
}

// dequeueTo is dequeue storing the packet at *dst.
func (q *Queue[T]) dequeueTo(dst *aqm.Packet[T], now aqm.Time, first bool) bool {
	p, ok := q.dequeue(now, first)
	if ok {
		*dst = p
	}
	return ok
}
