package cake

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// This file is CAKE's deficit round robin inside a tin: the intrusive
// lists of flow queues, taking a packet from a flow, and what happens when
// a flow empties.

type list struct{ head, tail uint32 }

var emptyList = list{nilIdx, nilIdx}

func (q *Queue[T]) pushTail(l *list, i uint32) {
	q.flows[i].next = nilIdx
	q.flows[i].prev = l.tail
	if l.tail == nilIdx {
		l.head = i
	} else {
		q.flows[l.tail].next = i
	}
	l.tail = i
}

func (q *Queue[T]) popHead(l *list) {
	i := l.head
	l.head = q.flows[i].next
	if l.head == nilIdx {
		l.tail = nilIdx
	} else {
		q.flows[l.head].prev = nilIdx
	}
}

// unlink removes flow i from anywhere in l.
func (q *Queue[T]) unlink(l *list, i uint32) {
	f := &q.flows[i]
	if f.prev == nilIdx {
		l.head = f.next
	} else {
		q.flows[f.prev].next = f.next
	}
	if f.next == nilIdx {
		l.tail = f.prev
	} else {
		q.flows[f.next].prev = f.prev
	}
}

// popFlow removes the head packet of flow fi and updates the counts.
func (q *Queue[T]) popFlow(fi uint32, b *tin) (p aqm.Packet[T], ni uint32) {
	f := &q.flows[fi]
	ni = f.head
	nd := &q.nodes[ni]
	p = nd.pkt
	f.head = nd.next
	if f.head == nilIdx {
		f.tail = nilIdx
	}
	nd.pkt = aqm.Packet[T]{}
	nd.next = q.free
	q.free = ni
	f.backlog -= p.Size
	b.pkts -= p.SegmentCount()
	b.backlog -= int(p.Size)
	q.len -= p.SegmentCount()
	q.backlog -= int(p.Size)
	if q.overTTL > 0 {
		q.siftDown(int(q.heapPos[fi]))
	}
	if fi >= q.g.base {
		q.g.tins[fi-q.g.base].leftSeq++
	}
	return p, ni
}

// dequeue is Dequeue past the shaper's gate. With first set, the head of
// the chosen tin's decaying list is visited before any other flow (one
// decaying flow per call); DequeueBatch passes false when it has made
// that visit itself.
func (q *Queue[T]) dequeue(now aqm.Time, first bool) (p aqm.Packet[T], ok bool) {
begin:
	for {
		if q.len == 0 {
			return p, false
		}
		t := 0
		if q.ntins > 1 {
			t = q.pickTin(now)
		}
		b := &q.tins[t]
	retry:
		for {
			var l *list
			switch {
			case first && b.decL.head != nilIdx:
				l = &b.decL
			case b.newL.head != nilIdx:
				l = &b.newL
			case b.oldL.head != nilIdx:
				l = &b.oldL
			case b.decL.head != nilIdx:
				l = &b.decL
			default:
				panic("cake: tin chosen without flows")
			}
			first = false
			fi := l.head
			f := &q.flows[fi]
			if f.deficit <= 0 {
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
				continue retry
			}
			for {
				if f.head == nilIdx {
					if f.state == stDecaying && q.stillDecaying(b, f, now) {
						// A decaying flow that keeps waiting goes to
						// the back of its list; no count changes, so
						// the tin choice stands (and q.len is unchanged).
						if l != &b.decL || b.decL.tail != fi {
							q.popHead(l)
							q.pushTail(&b.decL, fi)
						}
						continue retry
					}
					q.flowEmpty(b, l, fi, now)
					continue begin
				}
				p, _ = q.popFlow(fi, b)
				soj := p.Enqueued.Since(now)
				if q.ingress && int64(soj) <= 2*int64(b.mtu)*int64(b.bulk) {
					soj = 0 // the ingress guard: not above target
				}
				act := f.cv.Decide(&b.cp, now, soj, p.ECN)
				if act == cobalt.Deliver || act == cobalt.Mark || f.head == nilIdx {
					if f.cv.Marked() { // a mark, or a marked packet BLUE would drop kept as the last
						p.ECN = aqm.CE
						b.s.marks += uint64(p.SegmentCount())
						q.stats.Marked.AddMeta(p.Meta)
					}
					q.sent(b, f, p, now)
					return p, true
				}
				b.s.drops += uint64(p.SegmentCount())
				tally.DropMeta(&q.stats, aqm.DroppedEarly, p.Meta, true)
				if q.onDrop != nil {
					q.onDrop(p, aqm.DroppedEarly)
				}
				if q.ingress {
					adj := q.adjLenOf(p.Meta)
					q.charge(b, adj, now, true)
					c := int32(min(adj, maxCharge))
					f.deficit -= c
					b.deficit -= c
					continue retry
				}
			}
		}
	}
}

// sent does the accounting of a packet leaving tin b's flow f at now.
func (q *Queue[T]) sent(b *tin, f *flow, p aqm.Packet[T], now aqm.Time) {
	d := uint64(p.Enqueued.Since(now))
	b.s.avgDelay = ewma(b.s.avgDelay, d, 8)
	if d > b.s.peakDelay {
		b.s.peakDelay = ewma(b.s.peakDelay, d, 2)
	} else {
		b.s.peakDelay = ewma(b.s.peakDelay, d, 8)
	}
	if d < b.s.baseDelay {
		b.s.baseDelay = ewma(b.s.baseDelay, d, 2)
	} else {
		b.s.baseDelay = ewma(b.s.baseDelay, d, 8)
	}
	adj := q.adjLenOf(p.Meta)
	if q.shaped {
		q.charge(b, adj, now, false)
	}
	c := int32(min(adj, maxCharge))
	f.deficit -= c
	b.deficit -= c
	if q.overTTL > 0 {
		q.overTTL--
	}
	q.stats.Dequeued.AddMeta(p.Meta)
}

// ewma moves avg towards v by 1/2^shift.
func ewma(avg, v uint64, shift uint) uint64 { return avg - avg>>shift + v>>shift }

// stillDecaying tells f's COBALT that its queue was found empty at now
// and reports whether it is not yet at rest.
func (q *Queue[T]) stillDecaying(b *tin, f *flow, now aqm.Time) bool {
	f.cv.Empty(&b.cp, now)
	st := f.cv.State()
	return st.BlueProbability > 0 || st.Count > 0 || now < st.Next
}

// flowEmpty handles flow fi (head of l) found empty: it rests if its
// COBALT is at rest, else waits on the decaying list. A flow already
// decaying has had its COBALT told (stillDecaying) and found at rest.
func (q *Queue[T]) flowEmpty(b *tin, l *list, fi uint32, now aqm.Time) {
	f := &q.flows[fi]
	q.popHead(l)
	if f.state != stDecaying && q.stillDecaying(b, f, now) {
		q.pushTail(&b.decL, fi)
		switch f.state {
		case stBulk:
			b.bulk--
			q.bulkDec(b, f)
			b.decaying++
		case stSparse, stSparseWait:
			b.sparse--
			b.decaying++
		}
		f.state = stDecaying
		return
	}
	switch f.state {
	case stSparse, stSparseWait:
		b.sparse--
	case stBulk:
		b.bulk--
		q.bulkDec(b, f)
	default:
		b.decaying--
	}
	f.state = stNone
}
