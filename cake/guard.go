package cake

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// This file is CAKE's flood guard (the package doc's Flood guard section).
// A flow that has a way of its set (its tag) is served as without the
// guard. A hash without one, a new flow, claims a free way only if it
// recurs (it was the set's candidate, the last new hash the set saw) or
// the admission budget has a token (one per guardCost packets sent, at
// most guardBurst saved), and never takes over a busy way; otherwise it
// waits in its tin's shared queue. As in package fq, a hash gets a way
// only when none of its packets can still be in the shared queue: the
// shared queue is a FIFO whose packets are numbered as they arrive, and
// each set keeps the number of its last diverted packet and of its
// candidate's. So a hash's packets are never in a way and the shared
// queue at once, and every flow keeps its order.

const (
	guardCost  = 8  // packets sent per admitted new hash
	guardBurst = 64 // admissions saved up
	guardTrim  = 2  // most shared-queue heads one diversion drops
)

// guardSet is the guard's state of one set of ways.
type guardSet struct {
	cand     uint32 // the last new hash (mixed) the set saw
	candLast uint32 // bound on the number of cand's last diverted packet
	lastDiv  uint32 // number of the set's last diverted packet
	hasCand  bool
}

// guardTin counts a tin's shared queue: packets diverted and left.
type guardTin struct{ divSeq, leftSeq uint32 }

type guardState struct {
	on                          bool
	base                        uint32 // flows[base+t] is tin t's shared queue
	sets                        []guardSet
	tins                        []guardTin
	tokens, seen                uint64
	diverted, dropped, promoted uint64
}

// resetGuard sizes and clears the guard for n tins (the queue is empty).
func (g *guardState) reset(n int, on bool) {
	g.on = on
	g.base = uint32(n * queuesPerTin)
	g.sets = make([]guardSet, n*queuesPerTin/ways)
	for i := range g.sets {
		g.sets[i] = guardSet{candLast: ^uint32(0), lastDiv: ^uint32(0)}
	}
	g.tins = make([]guardTin, n)
	g.tokens = guardBurst * guardCost
}

// admitNew decides on a packet of tin t with mixed hash h that no way of
// set s (global set index) is tagged with: it reports whether h may claim
// a free way (free tells whether one exists); if not, the caller diverts
// it with divert.
func (q *Queue[T]) admitNew(t int, s uint32, h uint32, free bool) bool {
	g := &q.g
	e := &g.sets[s]
	left := g.tins[t].leftSeq
	isCand := e.hasCand && e.cand == h
	mine := int32(e.lastDiv-left) >= 0 // a packet of h may be in the shared queue
	if isCand {
		mine = int32(e.candLast-left) >= 0
	}
	if mine || !free {
		return false
	}
	if isCand {
		g.promoted++
		return true
	}
	sent := q.stats.Dequeued.Packets
	g.tokens = min(g.tokens+(sent-g.seen), guardBurst*guardCost)
	g.seen = sent
	if g.tokens < guardCost {
		return false
	}
	g.tokens -= guardCost
	e.cand, e.candLast, e.hasCand = h, e.lastDiv, true
	return true
}

// divert numbers a packet of set s sent to tin t's shared queue and
// returns the shared queue's index.
func (q *Queue[T]) divert(t int, s uint32, h uint32) uint32 {
	g := &q.g
	gt := &g.tins[t]
	seq := gt.divSeq
	gt.divSeq++
	e := &g.sets[s]
	e.lastDiv = seq
	e.cand, e.candLast, e.hasCand = h, seq, true
	g.diverted++
	return g.base + uint32(t)
}

// trimShared drops up to guardTrim heads of tin b's shared queue fi that
// have waited longer than the tin's target, never its newest packet, as
// [aqm.DroppedOverlimit].
func (q *Queue[T]) trimShared(b *tin, fi uint32, now aqm.Time) {
	f := &q.flows[fi]
	for range guardTrim {
		if f.head == f.tail || q.nodes[f.head].pkt.Enqueued.Since(now) <= b.target {
			return
		}
		p, _ := q.popFlow(fi, b)
		if q.ingress {
			q.charge(b, q.adjLenOf(p.Meta), now, true)
		}
		q.g.dropped++
		b.s.drops += uint64(p.SegmentCount())
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, true)
		if q.onDrop != nil {
			q.onDrop(p, aqm.DroppedOverlimit)
		}
	}
}

// activateShared puts tin b's idle (or decaying) shared queue fi on the
// old list as a bulk flow: it never gets sparse-flow priority.
func (q *Queue[T]) activateShared(b *tin, f *flow, fi uint32) {
	if f.state == stDecaying {
		b.decaying--
		q.unlink(&b.decL, fi)
	}
	q.pushTail(&b.oldL, fi)
	f.state = stBulk
	b.bulk++
	f.deficit = int32(b.quantum)
}

// tinOf returns the tin of flow fi.
func (q *Queue[T]) tinOf(fi uint32) int {
	if fi >= q.g.base {
		return int(fi - q.g.base)
	}
	return int(fi / queuesPerTin)
}
