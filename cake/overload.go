package cake

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// This file is CAKE's overload pruner: when the queue is over its limits,
// the fattest flow queue (a heap over the flows' backlogs) loses its head.

// prune drops the head packet of the longest flow queue (by bytes, then
// packets) over all tins, raising its COBALT's BLUE probability. It
// reports whether that packet was the arrival (node arrival), which is
// then removed silently for the caller to refuse.
func (q *Queue[T]) prune(now aqm.Time, arrival uint32) bool {
	if q.overTTL == 0 {
		q.buildHeap()
	}
	q.overTTL = 65535
	fi := uint32(q.heap[0])
	f := &q.flows[fi]
	b := &q.tins[q.tinOf(fi)]
	f.cv.Overflow(&b.cp, now)
	p, ni := q.popFlow(fi, b)
	if q.ingress {
		q.charge(b, q.adjLenOf(p.Meta), now, true)
	}
	if ni == arrival {
		return true
	}
	b.s.drops += uint64(p.SegmentCount())
	q.d.overlimitDrops += uint64(p.SegmentCount())
	tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, true)
	if q.onDrop != nil {
		q.onDrop(p, aqm.DroppedOverlimit)
	}
	return false
}

// heapKey orders flows for the pruner: bytes, then non-empty before
// empty (so zero-size packets are pruned too).
func (q *Queue[T]) heapKey(fi uint16) uint64 {
	f := &q.flows[fi]
	k := uint64(f.backlog) << 1
	if f.head != nilIdx {
		k |= 1
	}
	return k
}

func (q *Queue[T]) buildHeap() {
	for i := range q.heap {
		q.heap[i] = uint16(i)
		q.heapPos[i] = uint16(i)
	}
	for i := len(q.heap)/2 - 1; i >= 0; i-- {
		q.siftDown(i)
	}
}

func (q *Queue[T]) swap(i, j int) {
	h := q.heap
	h[i], h[j] = h[j], h[i]
	q.heapPos[h[i]] = uint16(i)
	q.heapPos[h[j]] = uint16(j)
}

func (q *Queue[T]) siftUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if q.heapKey(q.heap[p]) >= q.heapKey(q.heap[i]) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *Queue[T]) siftDown(i int) {
	n := len(q.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.heapKey(q.heap[r]) > q.heapKey(q.heap[l]) {
			m = r
		}
		if q.heapKey(q.heap[m]) <= q.heapKey(q.heap[i]) {
			return
		}
		q.swap(i, m)
		i = m
	}
}
