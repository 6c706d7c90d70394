package sfq

import (
	"math"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// none is the null index for nodes, slots and buckets.
const none = ^uint32(0)

// node is one packet in the slab, doubly linked within its flow so that
// both head and tail drops are O(1). The prev link of a flow's head node is
// not maintained (the head has no predecessor, and Dequeue need not touch
// the next node to say so).
type node[T any] struct {
	pkt        aqm.Packet[T]
	next, prev uint32
}

// slot is one active flow (Linux's "slot"): the packets of one hash
// bucket. 40 bytes.
type slot struct {
	head, tail uint32 // oldest and newest node, none when empty
	n          uint32 // packets
	next       uint32 // successor in the round-robin ring while active
	bucket     uint32 // the hash bucket bound to this slot
	allot      int64  // DRR credit in bytes; in (-maxSize, quantum]
	backlog    uint64 // bytes
}

// depthLink is a doubly linked list cell of the depth lists.
type depthLink struct{ next, prev uint32 }

// bucket maps a flow hash to its bucket under the current key: the
// SplitMix64 finaliser (a bijection on 64 bits with full avalanche) of the
// hash xor the key, whose top 32 bits are scaled into [0, divisor) by a
// multiply-shift ((x * divisor) >> 32 for x < 2^32).
func (q *Queue[T]) bucket(h uint32) uint32 {
	return bucketOf(h, q.key, q.p.divisor)
}

// bucketOf is bucket for a given key and divisor, for the burst path.
func bucketOf(h uint32, key uint64, divisor uint32) uint32 {
	z := uint64(h) ^ key
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return uint32((z >> 32) * uint64(divisor) >> 32)
}

// link puts slot x at the head of the list for its depth (most recent
// first, as Linux does, so the arrival's own flow is preferred among equal
// longest flows).
func (q *Queue[T]) link(x uint32) {
	h := q.nslots + q.slots[x].n
	n := q.links[h].next
	q.links[x] = depthLink{next: n, prev: h}
	q.links[h].next = x
	q.links[n].prev = x
}

func (q *Queue[T]) unlink(x uint32) (next, prev uint32) {
	l := q.links[x]
	q.links[l.prev].next = l.next
	q.links[l.next].prev = l.prev
	return l.next, l.prev
}

// inc and dec move slot x to the next deeper or shallower depth list.
func (q *Queue[T]) inc(x uint32) {
	q.unlink(x)
	q.slots[x].n++
	if d := q.slots[x].n; d > q.curDepth {
		q.curDepth = d
	}
	q.link(x)
}

func (q *Queue[T]) dec(x uint32) {
	n, p := q.unlink(x)
	d := q.slots[x].n
	q.slots[x].n--
	if n == p && q.curDepth == d { // x was the only slot of the deepest list
		q.curDepth--
	}
	q.link(x)
}

// attach returns the slot of bucket b, binding a free slot if it has none.
func (q *Queue[T]) attach(b uint32) uint32 {
	x := q.ht[b]
	if x == none {
		x = q.links[q.nslots].next // head of the depth-0 (free) list
		if x >= q.nslots {
			panic("sfq: has no free flow slot")
		}
		q.ht[b] = x
		q.slots[x].bucket = b
	}
	return x
}

// appendNode adds node i at the tail of slot x and accounts it; a slot that
// becomes active joins the ring behind the current tail with a full quantum.
func (q *Queue[T]) appendNode(x, i uint32) {
	s := &q.slots[x]
	q.linkTail(s, i)
	s.backlog += uint64(q.nodes[i].pkt.Size)
	q.inc(x)
	if s.n == 1 {
		q.activate(x)
	}
}

// linkTail links node i behind slot s's newest packet.
func (q *Queue[T]) linkTail(s *slot, i uint32) {
	nd := &q.nodes[i]
	nd.next, nd.prev = none, s.tail
	if s.tail == none {
		s.head = i
	} else {
		q.nodes[s.tail].next = i
	}
	s.tail = i
}

// activate puts slot x, which has just received its first packet, in the
// ring behind the current tail with a full quantum.
func (q *Queue[T]) activate(x uint32) {
	s := &q.slots[x]
	if q.tail == none {
		s.next = x
	} else {
		s.next = q.slots[q.tail].next
		q.slots[q.tail].next = x
	}
	q.tail = x
	s.allot = q.p.quantum
	q.active++
}

// moveDepth takes slot x off its depth list and puts it at the head of the
// list for depth d (inc and dec without the count and curDepth updates).
// It reports whether x was alone on its old list.
func (q *Queue[T]) moveDepth(x, d uint32) bool {
	links := q.links
	l := links[x]
	links[l.prev].next = l.next
	links[l.next].prev = l.prev
	h := q.nslots + d
	n := links[h].next
	links[x] = depthLink{next: n, prev: h}
	links[h].next = x
	links[n].prev = x
	return l.next == l.prev
}

// unlinkNode removes node i from slot x's packet list and frees it; the
// caller fixes the depth lists.
func (q *Queue[T]) unlinkNode(x, i uint32) (p aqm.Packet[T]) {
	q.unlinkNodeInto(x, i, &p)
	return p
}

// unlinkNodeInto is unlinkNode storing the packet in *dst with one
// whole-Packet copy (see Dequeue).
func (q *Queue[T]) unlinkNodeInto(x, i uint32, dst *aqm.Packet[T]) {
	s := &q.slots[x]
	nd := &q.nodes[i]
	isHead := i == s.head // the head's prev is not maintained
	if isHead {
		s.head = nd.next
	} else {
		q.nodes[nd.prev].next = nd.next
	}
	switch {
	case nd.next == none && isHead:
		s.tail = none
	case nd.next == none:
		s.tail = nd.prev
	case !isHead:
		q.nodes[nd.next].prev = nd.prev
	}
	*dst = nd.pkt
	s.backlog -= uint64(dst.Size)
	*nd = node[T]{next: q.free}
	q.free = i
}

// release unbinds slot x, which has just become empty and is the front of
// the ring (the successor of q.tail).
func (q *Queue[T]) release(x uint32) {
	s := &q.slots[x]
	q.ht[s.bucket] = none
	if s.next == x {
		q.tail = none
	} else {
		q.slots[q.tail].next = s.next
	}
	s.next = none
	s.allot = 0
	q.active--
}

// removeNode takes node i out of slot x with all bookkeeping. x must keep a
// packet or be the front of the ring.
func (q *Queue[T]) removeNode(x, i uint32) (p aqm.Packet[T]) {
	q.removeNodeInto(x, i, &p)
	return p
}

// removeNodeInto is removeNode storing the packet in *dst with one
// whole-Packet copy (see Dequeue).
func (q *Queue[T]) removeNodeInto(x, i uint32, dst *aqm.Packet[T]) {
	q.unlinkNodeInto(x, i, dst)
	q.dec(x)
	q.n -= dst.SegmentCount()
	q.backlog -= int(dst.Size)
	if q.slots[x].n == 0 {
		q.release(x)
	}
}

// maybePerturb replaces the hash key once now reaches the next perturbation
// instant. The first call only arms the period. A next instant further
// ahead of now than one period (left by a reading far in the future, or
// by time running backwards) is pulled back to now plus one period, so a
// clock glitch delays the next re-key by at most one period.
func (q *Queue[T]) maybePerturb(now aqm.Time) {
	if !q.armed {
		q.armed = true
		q.nextPerturb = addSat(now, q.p.period)
		return
	}
	if now < q.nextPerturb {
		// nextPerturb ≥ MinInt64 + period (it was set to some t + period
		// with saturation), so the subtraction cannot wrap.
		if now < q.nextPerturb-aqm.Time(q.p.period) {
			q.nextPerturb = addSat(now, q.p.period)
		}
		return
	}
	q.nextPerturb = addSat(now, q.p.period)
	q.key = q.rnd.Uint64()
	q.detail.Perturbations++
	if q.tail != none {
		q.rehash()
	}
}

// addSat returns t+d, saturating at the largest Time instead of
// wrapping.
func addSat(t aqm.Time, d time.Duration) aqm.Time {
	if d > 0 && t > aqm.Time(math.MaxInt64-int64(d)) {
		return aqm.Time(math.MaxInt64)
	}
	return t.Add(d)
}

// chain detaches every queued packet into one node list in service order
// (ring order from the front, FIFO within each flow), leaves every slot free
// and the ring empty, and returns the list's first node. The nodes stay
// allocated; the packet and byte counts are left as they are.
func (q *Queue[T]) chain() uint32 {
	if q.tail == none {
		return none
	}
	first, last := none, none
	end := q.tail
	x := q.slots[end].next
	for {
		s := &q.slots[x]
		if first == none {
			first = s.head
		} else {
			q.nodes[last].next = s.head
		}
		last = s.tail
		next := s.next
		q.ht[s.bucket] = none
		q.unlink(x)
		*s = slot{head: none, tail: none, next: none, bucket: none}
		q.link(x)
		if x == end {
			break
		}
		x = next
	}
	q.nodes[last].next = none
	q.tail, q.curDepth, q.active = none, 0, 0
	return first
}

// rehash re-classifies every queued packet under the current key, in
// service order, without dropping any.
func (q *Queue[T]) rehash() {
	for i := q.chain(); i != none; {
		next := q.nodes[i].next
		q.appendNode(q.attach(q.bucket(q.nodes[i].pkt.Hash)), i)
		i = next
	}
}
