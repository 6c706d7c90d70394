package fq

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// This file is the flood guard of the shared scheduler (core.go): it keeps
// a sender that uses a new flow hash for every packet from taking every
// bucket and the new list. Each bucket remembers the hash of the flow that
// earned it (its owner) and of the last hash that did not (its candidate).
// An arrival of the owner goes to its bucket as without the guard. Any
// other arrival is a guest of the bucket, is diverted to one shared queue
// (flows[shared], served on the old list only), or makes its hash the
// owner; which one follows from a few rules chosen so that the packets of
// one hash are never in the bucket and the shared queue at once, so the
// queue keeps every flow's order:
//
//   - while the bucket holds guests, arrivals that are not the owner's are
//     guests too (no guest was admitted while a packet of the bucket was
//     in the shared queue, and nothing is diverted while guests are held);
//   - the candidate that recurs while its bucket is empty and none of its
//     packets is in the shared queue becomes the owner (owners are never
//     diverted, so their packets are all in the bucket), unless the owner
//     came in between: each arrival of the owner forgets the candidate, so
//     an active owner keeps its bucket however often its empty bucket is
//     visited by a hash that recurs (a flood that draws its ports from a
//     finite range repeats a hash within a bucket every few dozen
//     packets);
//   - a new hash is a guest if no packet of the bucket is in the shared
//     queue and the admission budget has a token: one per guardCost
//     packets sent, at most guardBurst saved; otherwise it is diverted.
//
// The guard is armed only while its pressure signal says a flood may be
// under way, so that ordinary traffic pays one test per arrival:
//
//   - disarmed, every arrival joins its bucket unmarked, and nothing is
//     diverted. An arrival that finds its bucket empty is let in if it is
//     the owner or, while there is one, the candidate (two flows that share
//     a bucket spend no tokens); a candidate of a bucket without an owner
//     becomes the owner; any other hash (a new flow) takes a token from the
//     admission budget and becomes the candidate if the bucket lacks one
//     or an owner; with no token left, the guard arms and routes that
//     arrival. It also arms when the queue
//     nears its limits (the overload classes start).
//   - arming keeps the owners (all their packets are in their buckets) and
//     the candidates (none of their packets is in the shared queue). The
//     packets that joined a bucket while disarmed are of hashes the guard
//     does not know, so a bucket that holds packets when the guard arms is
//     marked
//     (idLegacy, counted in the bits above idMixed) and its newest packet
//     carries markEnd: until that packet leaves, every arrival that is not
//     the owner's is a guest of the bucket, never diverted, as after a
//     reset. O(Flows), once per arming.
//   - armed, every guardCalm arrivals (2·Flows with more flows), the guard
//     looks back: if the shared queue dropped fewer than one packet per
//     guardQuiet arrivals for waiting too long and the queue is not near
//     its limits, the flood is over: the shared queue's packets go back to their
//     buckets (in order, after the bucket's own, as resetGuard does) and
//     the guard disarms, its admission budget full again. O(shared
//     queue), paid for by the diversions that filled it.
//
// The shared queue's packets are numbered as they are diverted; it is a
// FIFO (every removal, sent or dropped, takes its head), so packet s has
// left once leftSeq > s. A bucket keeps the number of its last diverted
// packet and of its candidate's, both upper bounds. The shared queue keeps
// no packet longer than the flows' Target, at most guardMaxSpan, at an
// arrival: older heads are dropped, at most two per diverted arrival.

// Marks a node carries for the flood guard.
const (
	markGuest  = 1 // in its bucket, not the owner's
	markShared = 2 // in the shared queue
	markEnd    = 4 // the newest packet its bucket held when the guard armed
)

const (
	// guardCost is how many packets sent earn the admission of one new
	// hash while new hashes arrive faster: an eighth of the departures.
	guardCost = 8
	// guardBurst is how many admissions the budget saves up.
	guardBurst = 64
	// guardTrim is the most shared-queue heads one diversion drops.
	guardTrim = 2
	// guardMaxSpan caps the shared queue's sojourn limit. Under a flood
	// the shared queue stays full to its limit, and a new flow there joins
	// its bucket only once none of its packets is left in the shared
	// queue, so only a flow whose packets come further apart than the
	// limit gets out: with 15 ms (FQ-PIE's Target) a 10 ms probe never
	// did. 5 ms is the CoDel family's default Target.
	guardMaxSpan = 5 * time.Millisecond
	// guardCalm is the least number of arrivals between two looks back of
	// the armed guard (see the top of this file); with more flows it is
	// 2·Flows, so that the O(Flows) arming is paid for by the arrivals
	// between two armings.
	guardCalm = 1024
	// guardQuiet: the armed guard judges a flood over when fewer than one
	// arrival in guardQuiet made the shared queue drop a packet that had
	// waited too long. A flood keeps it full to its limit (about one drop
	// per diverted arrival once it arrives faster than the shared queue is
	// served); a flow still diverted when the flood ends may lose a packet
	// there now and then.
	guardQuiet = 64
)

// Bits of guardID.flags.
const (
	idOwner = 1 << iota // owner is set
	idCand              // cand is set
	idMixed             // the guests are of several hashes (after a reset)
	// idLegacy is the count of markEnd packets in the bucket, in the bits
	// from here up: while it is not zero, the bucket holds packets that
	// came while the guard was disarmed.
	idLegacy
)

// guardID is one bucket's recognition state.
type guardID struct {
	owner, cand uint32 // hashes
	lastDiv     uint32 // number of the bucket's last diverted packet (bound)
	candLast    uint32 // bound on the number of cand's last diverted packet
	guest       uint32 // the guests' hash
	guests      uint32 // guests queued in the bucket
	flags       uint32
}

// guardState is the scheduler's flood guard state.
type guardState struct {
	ids      []guardID
	shared   uint32   // index of the shared queue in flows
	span     aqm.Time // the shared queue's sojourn limit
	divSeq   uint32   // packets diverted
	leftSeq  uint32   // diverted packets that have left the shared queue
	tokens   uint64   // admission budget, guardCost per admission
	seen     uint64   // Dequeued.Packets when tokens was last topped up
	diverted uint64
	dropped  uint64
	promoted uint64

	armed   bool   // the guard routes arrivals (see the top of this file)
	calmIn  uint32 // armed arrivals until the next look back
	trimmed uint64 // dropped at the last look back
	arms    uint64 // times the guard armed
	disarms uint64 // times the guard disarmed
}

// direct reports whether the arrival with hash h for bucket idx joins its
// bucket unmarked with no more guard work than its own: disarmed, when the
// bucket holds packets or h is known there; armed, when h is the owner and
// the arrival does not end a look-back window (it counts the arrival).
// Every other arrival goes to route.
func (q *sched[T, A]) direct(h, idx uint32) bool {
	g := &q.g
	if !g.armed && q.flows[idx].head != cqNone {
		return true
	}
	e := &g.ids[idx]
	if e.flags&idOwner == 0 {
		return false
	}
	if !g.armed {
		return e.owner == h || e.cand == h // known
	}
	if e.owner != h || g.calmIn <= 1 {
		return false
	}
	e.flags &^= idCand // as owned
	g.calmIn--
	return true
}

// route returns where the arrival with hash h for bucket idx, which direct
// did not let through, goes (idx or the shared queue) and the mark its
// node carries.
func (q *sched[T, A]) route(h, idx uint32) (uint32, uint8) {
	if q.g.armed {
		if q.g.calmIn--; q.g.calmIn == 0 {
			q.lookBack()
		}
	}
	if !q.g.armed {
		if q.flows[idx].head != cqNone {
			return idx, 0 // disarmed by the look back
		}
		return q.quiet(h, idx)
	}
	if q.owned(h, idx) {
		return idx, 0
	}
	return q.routeNew(h, idx)
}

// known reports whether h is bucket idx's owner, or, while it has an
// owner, its candidate or the last one it forgot: a disarmed guard lets
// them into the empty bucket as they are (it diverts nothing, so any hash
// may join its bucket), so that two flows that share a bucket do not spend
// tokens. direct tests the same inline.
func (q *sched[T, A]) known(h, idx uint32) bool {
	e := &q.g.ids[idx]
	return e.flags&idOwner != 0 && (e.owner == h || e.cand == h)
}

// quiet is route for a disarmed guard and an arrival that finds its bucket
// empty: the owner and, while there is one, the candidate join it; a
// candidate of a bucket without an owner becomes its owner (nothing is in
// the shared queue while the guard is disarmed, so all its packets are in
// the bucket); another hash takes a token and becomes the candidate
// unless the bucket has an owner and a candidate already (so that a
// one-packet flow does not push out a flow that shares the bucket), or,
// with no token left, arms the guard, which routes it.
func (q *sched[T, A]) quiet(h, idx uint32) (uint32, uint8) {
	e := &q.g.ids[idx]
	switch {
	case q.known(h, idx):
	case e.cand == h && e.flags&idCand != 0:
		e.owner = h
		e.flags = e.flags&^idCand | idOwner
		q.g.promoted++
	case q.takeToken():
		if e.flags&(idOwner|idCand) != idOwner|idCand {
			e.cand, e.candLast = h, e.lastDiv
			e.flags |= idCand
		}
	default:
		q.arm()
		return q.route(h, idx)
	}
	return idx, 0
}

// arm arms the guard: every bucket that holds packets counts its newest as
// the end of the packets of unknown hashes (see the top of this file).
func (q *sched[T, A]) arm() {
	g := &q.g
	g.armed = true
	g.arms++
	g.calmIn = uint32(max(guardCalm, 2*len(g.ids)))
	g.trimmed = g.dropped
	for i := range g.ids {
		f := &q.flows[i]
		if f.head == cqNone || q.nodes[f.tail].mark&markEnd != 0 {
			continue
		}
		q.nodes[f.tail].mark |= markEnd
		g.ids[i].flags += idLegacy
	}
	q.work += uint64(len(g.ids))
}

// lookBack disarms the guard if the flood is over (see the top of this
// file).
func (q *sched[T, A]) lookBack() {
	g := &q.g
	window := max(guardCalm, 2*len(g.ids))
	g.calmIn = uint32(window)
	calm := (g.dropped-g.trimmed)*guardQuiet < uint64(window) && !q.tracking
	g.trimmed = g.dropped
	if !calm {
		return
	}
	g.armed = false
	g.disarms++
	// The budget starts full again, as in a new queue.
	g.tokens, g.seen = guardBurst*guardCost, q.stats.Dequeued.Packets
	q.unshare()
}

// unshare moves the shared queue's packets back to their buckets, in
// order, after the bucket's own (a hash is never in both, so every flow
// keeps its order), unmarked.
func (q *sched[T, A]) unshare() {
	g := &q.g
	sh := &q.flows[g.shared]
	for sh.head != cqNone {
		p := q.pop(sh)
		idx := q.bucket(p.Hash)
		f := &q.flows[idx]
		q.push(f, p)
		if f.tag&cqListMask == cqInactive<<cqListShift {
			q.activate(f, idx)
		}
		if q.tracking {
			q.reclass(f, idx)
		}
		q.work++
	}
	if q.tracking {
		q.reclass(sh, g.shared)
	}
}

// owned reports whether h is bucket idx's owner (route's inlined test)
// and, if it is, forgets the bucket's candidate, so that a candidate takes
// the bucket over only by recurring before the owner does. Forgetting it
// keeps every flow's order: the bucket's last diverted number bounds the
// former candidate's packets in the shared queue as candLast did.
func (q *sched[T, A]) owned(h, idx uint32) bool {
	e := &q.g.ids[idx]
	if e.owner != h || e.flags&idOwner == 0 {
		return false
	}
	e.flags &^= idCand
	return true
}

// routeNew is route for an arrival that is not its bucket's owner's; see
// the top of this file.
func (q *sched[T, A]) routeNew(h, idx uint32) (uint32, uint8) {
	g := &q.g
	e := &g.ids[idx]
	q.work++
	if e.guests > 0 && (e.guest == h || e.flags&idMixed != 0) {
		e.guests++
		return idx, markGuest
	}
	if e.flags >= idLegacy {
		// Packets of unknown hashes are queued here: a guest, whatever
		// the hash.
		if e.guests == 0 {
			e.guest = h
		} else {
			e.flags |= idMixed
		}
		e.guests++
		return idx, markGuest
	}
	busy := int32(e.lastDiv-g.leftSeq) >= 0 || e.guests > 0 // guests of another hash, or shared packets
	isCand := e.flags&idCand != 0 && e.cand == h
	mine := busy // a packet of h may be in the shared queue
	if isCand {
		mine = int32(e.candLast-g.leftSeq) >= 0
	}
	if !mine {
		if isCand && q.flows[idx].head == cqNone {
			e.owner = h
			e.flags |= idOwner
			g.promoted++
			return idx, 0
		}
		if !busy && (isCand || q.takeToken()) {
			if !isCand {
				e.cand, e.candLast = h, e.lastDiv
				e.flags |= idCand
			}
			e.guest = h
			e.guests++
			return idx, markGuest
		}
	}
	seq := g.divSeq
	g.divSeq++
	e.lastDiv = seq
	e.cand, e.candLast = h, seq
	e.flags |= idCand
	g.diverted++
	return g.shared, markShared
}

// unroute undoes route's count of an arrival with hash h that was routed
// with mark and then refused (FQ-PIE decides after the route): a diverted
// packet gives its number back, so leftSeq keeps counting the shared
// queue's removals, and a guest leaves the bucket's count. The bucket's
// lastDiv and candLast may still hold the number given back; as upper
// bounds they stay true, and the next diversion reuses the number.
func (q *sched[T, A]) unroute(mark uint8, h uint32) {
	switch mark {
	case markShared:
		q.g.divSeq--
	case markGuest:
		q.left(markGuest, h)
	}
}

// takeToken tops the admission budget up for the packets sent since the
// last call and takes one admission from it if it has one.
func (q *sched[T, A]) takeToken() bool {
	g := &q.g
	sent := q.stats.Dequeued.Packets
	g.tokens = min(g.tokens+(sent-g.seen), guardBurst*guardCost)
	g.seen = sent
	if g.tokens < guardCost {
		return false
	}
	g.tokens -= guardCost
	return true
}

// left keeps the guard's counts when a marked packet with hash h leaves
// the queue (sent or dropped).
func (q *sched[T, A]) left(mark uint8, h uint32) {
	if mark == markShared {
		q.g.leftSeq++
		return
	}
	e := &q.g.ids[q.bucket(h)]
	if mark&markEnd != 0 && e.flags >= idLegacy {
		e.flags -= idLegacy
	}
	if mark&markGuest != 0 && e.guests > 0 {
		if e.guests--; e.guests == 0 {
			e.flags &^= idMixed
		}
	}
}

// trimShared drops the shared queue's heads that have waited longer than
// the span, at most guardTrim, never its newest packet (the arrival), as
// [aqm.DroppedOverlimit].
func (q *sched[T, A]) trimShared(now aqm.Time) {
	sh := &q.flows[q.g.shared]
	for range guardTrim {
		if sh.head == sh.tail || q.nodes[sh.head].enqueued.Since(now) <= time.Duration(q.g.span) {
			break
		}
		p := q.pop(sh)
		p.ECN &= aqm.ECNMask // the selection bit stays inside
		q.work++
		q.g.dropped++
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, true)
		if q.onDrop != nil {
			q.onDrop(p, aqm.DroppedOverlimit)
		}
	}
	if q.tracking {
		q.reclass(sh, q.g.shared)
	}
}

// setGuard turns the guard on or off; span (the flows' Target), at most
// guardMaxSpan, is the shared queue's sojourn limit. A change resets the
// guard's state.
func (q *sched[T, A]) setGuard(on bool, span time.Duration) {
	q.g.span = aqm.Time(min(span, guardMaxSpan))
	if on != q.guard {
		q.guard = on
		q.resetGuard()
	}
}

// resetGuard forgets every owner and candidate: the shared queue's packets
// go back to their buckets, in order, after the bucket's own (a hash is
// never in both, so every flow keeps its order), and every queued packet
// becomes a guest of its bucket. O(packets + Flows); Reconfigure and New
// only.
func (q *sched[T, A]) resetGuard() {
	g := &q.g
	q.unshare()
	g.divSeq, g.leftSeq = 0, 0
	for i := range g.ids {
		e := guardID{lastDiv: ^uint32(0), candLast: ^uint32(0)}
		for j := q.flows[i].head; j != cqNone; j = q.nodes[j].next {
			q.nodes[j].mark = markGuest
			e.guests++
			if e.guests == 1 {
				e.guest = q.nodes[j].hash
			} else if e.guest != q.nodes[j].hash {
				e.flags |= idMixed
			}
		}
		g.ids[i] = e
	}
	g.tokens, g.seen = guardBurst*guardCost, q.stats.Dequeued.Packets
	g.armed = false
}

// sharedLen returns the packets in the shared queue.
func (q *sched[T, A]) sharedLen() int {
	n, _, _ := q.flowPackets(q.g.shared)
	return n
}
