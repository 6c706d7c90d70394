package fq

import (
	"errors"
	"math/bits"
	"strconv"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/cfgerr"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// This file is the fair-queueing scheduler that [CoDel], [Cobalt] and [PIE]
// share: the keyed flow table, the packet nodes, DRR++'s new and old lists
// and the overload bookkeeping that finds the fattest flow in O(1). Each
// queue type embeds a sched over its per-flow AQM state A and runs its AQM
// step inline in its own Enqueue and Dequeue, so the step is a direct call
// (or inlined) on the hot path, never an interface call.

// cqNone is the nil index of the flow lists and packet nodes.
const cqNone = ^uint32(0)

// Which DRR list a flow is on (bits 8-9 of the flow's tag).
const (
	cqInactive = iota
	cqNew
	cqOld
)

// A flow's tag packs its backlog class (bits 0-7), its list (bits 8-9) and
// the index of its entry in the class stacks (bits 10-31; cqNoEntry when its
// class is 0). The entry pool holds at most 4*65536+64 entries, below 2^22.
const (
	cqClassMask = 0xff
	cqListShift = 8
	cqListMask  = 3 << cqListShift
	cqEntShift  = 10
	cqNoEntry   = 1<<22 - 1
	// cqClasses is the number of backlog classes: 0 (empty) and 1..240.
	cqClasses = 241
)

// cqClass returns the overload class of a non-empty flow holding b bytes:
// 1 + b below 16 bytes, and above that a floating-point-like code with three
// mantissa bits, 1 + 8e + (b >> e) where e = bits.Len32(b) - 4. It never
// decreases with b, and two backlogs in one class differ by less than a
// ninth of the larger: [m·2^e, (m+1)·2^e) with m in [8, 16).
func cqClass(b uint32) uint32 {
	if b < 16 {
		return b + 1
	}
	e := uint32(bits.Len32(b)) - 4
	return 8*e + b>>e + 1
}

// flowOf is one flow queue: its AQM state, packets, byte backlog, DRR
// credit, list link and list, and overload class. With a CoDel controller
// it is 64 bytes, one cache line (TestCoDelFlowSize).
type flowOf[A any] struct {
	cv      A      // the flow's AQM state
	head    uint32 // oldest packet's node, cqNone if empty
	tail    uint32 // newest packet's node
	bytes   uint32 // byte backlog
	deficit int32  // DRR credit in bytes
	next    uint32 // next flow on the same DRR list
	tag     uint32 // class | list | entry, see cqClassMask
}

// cqEntry is one entry of a class stack: a flow and the entry below it.
type cqEntry struct{ flow, next uint32 }

// cqNode holds one queued packet, its fields laid out with the index of the
// next packet of its flow (or of the next free node) so that a node is 32
// bytes for a word-sized payload: two per cache line, none straddling two.
type cqNode[T any] struct {
	payload  T
	enqueued aqm.Time
	size     uint32
	hash     uint32
	next     uint32
	ecn      aqm.ECN
	mark     uint8  // the flood guard's: markGuest, markShared or 0
	segs     uint16 // the packet's Meta.Segments, in what was padding
}

func (nd *cqNode[T]) set(p *aqm.Packet[T]) {
	nd.payload, nd.enqueued, nd.size, nd.hash, nd.ecn, nd.segs = p.Payload, p.Enqueued, p.Size, p.Hash, p.ECN, p.Segments
}

func (nd *cqNode[T]) packet() aqm.Packet[T] {
	return aqm.Packet[T]{Payload: nd.payload, Meta: aqm.Meta{Size: nd.size, Hash: nd.hash, ECN: nd.ecn, Segments: nd.segs}, Enqueued: nd.enqueued}
}

type cqList struct{ head, tail uint32 }

// sched is the shared scheduler state; see the top of this file.
type sched[T, A any] struct {
	flows   []flowOf[A]
	nodes   []cqNode[T]
	free    uint32 // head of the free node list
	used    int    // wire packets queued (a super-packet counts its segments); nodes in use ≤ used
	newL    cqList
	oldL    cqList
	nNew    int
	nOld    int
	key0    uint64
	key1    uint64
	nflows  uint64
	backlog int
	limit   int
	memLim  int
	quantum int32
	charge  uint32 // most bytes one packet costs its deficit
	batch   int
	touched uint32 // see touch

	// Overload bookkeeping: one stack of entries per backlog class, linked
	// through pool; a flow's current entry sits on its class's stack, and
	// older entries are stale (the flow's tag no longer points at them)
	// until the fattest-flow search skips them or compact drops them.
	pool []cqEntry
	top  uint32 // entries used in pool
	// The classes are kept only while the queue is near its limits
	// (tracking): above three quarters of either limit they are built from
	// the active flows, and they are dropped again once the queue is at
	// most half full and as many Dequeue calls as the build visited flows
	// (plus 64) have passed, which pays for the build.
	tracking bool
	credit   int
	onPkts   int
	onBytes  int
	offPkts  int
	offBytes int
	heads    [cqClasses]uint32
	classes  [4]uint64 // bit c: stack c may hold a current entry
	work     uint64    // stack entries, flows and flood-guard steps visited (tests)

	// The flood guard (guard.go): ids holds each bucket's recognition
	// state, flows[shared] is the shared queue of the packets it diverts.
	guard bool
	g     guardState

	onDrop aqm.DropFunc[T]
	stats  aqm.Stats
}

// init (re)allocates the flow table, nodes and class stacks for n flows
// and capacity packets, empty, keyed by seed (not zero). The flows' AQM
// states are zero.
func (q *sched[T, A]) init(n, capacity int, seed uint64) {
	q.flows = make([]flowOf[A], n+1) // flows[n] is the flood guard's shared queue
	for i := range q.flows {
		q.flows[i].head, q.flows[i].tail = cqNone, cqNone
		q.flows[i].tag = cqNoEntry << cqEntShift
	}
	// One node more than the limit: an arrival is added before the overload
	// drop makes room (the arrival counts towards its flow's backlog).
	q.makeNodes(capacity + 1)
	q.pool = make([]cqEntry, cqPoolSize(n+1))
	q.top = 0
	for i := range q.heads {
		q.heads[i] = cqNone
	}
	q.classes = [4]uint64{}
	q.newL, q.oldL = cqList{cqNone, cqNone}, cqList{cqNone, cqNone}
	q.nNew, q.nOld, q.backlog, q.used = 0, 0, 0, 0
	src := rng.New(seed)
	q.key0, q.key1 = src.Uint64(), src.Uint64()|1
	q.nflows = uint64(n)
	q.g.ids = make([]guardID, n)
	q.g.shared = uint32(n)
	q.resetGuard()
}

// setLimits applies the scheduler's share of a configuration.
func (q *sched[T, A]) setLimits(limit, memLim, quantum, batch int) {
	q.limit, q.memLim = limit, memLim
	q.quantum = int32(quantum)
	q.charge = uint32(quantum) * cqChargeQuanta
	q.batch = batch
	q.onPkts, q.onBytes = q.limit-q.limit/4, q.memLim-q.memLim/4
	q.offPkts, q.offBytes = q.limit/2, q.memLim/2
	q.tracking, q.credit = false, 0
}

// cqPoolSize is the number of class-stack entries for n flows: at most n
// are current, so a full pool is at least three quarters stale and
// compacting it is paid for by the pushes that filled it.
func cqPoolSize(n int) int { return 4*n + 64 }

// makeNodes allocates n free packet nodes.
func (q *sched[T, A]) makeNodes(n int) {
	q.nodes = make([]cqNode[T], n)
	for i := range q.nodes {
		q.nodes[i].next = uint32(i + 1)
	}
	q.nodes[n-1].next = cqNone
	q.free = 0
}

// resize gives the queue room for need packets (need ≥ used) while
// keeping every flow's packets in order.
func (q *sched[T, A]) resize(need int) {
	oldNodes := q.nodes
	q.makeNodes(need + 1)
	used, backlog := q.used, q.backlog
	for i := range q.flows {
		f := &q.flows[i]
		h := f.head
		f.head, f.tail = cqNone, cqNone
		bytes := f.bytes
		for ; h != cqNone; h = oldNodes[h].next {
			q.push(f, oldNodes[h].packet())
		}
		f.bytes = bytes
	}
	q.used, q.backlog = used, backlog
}

// rehash moves the packets of old (a copy of the scheduler before init
// rebuilt q) into q's table flow by flow, in scheduling order, keeping
// their order within each hash.
func (q *sched[T, A]) rehash(old *sched[T, A]) {
	for _, l := range [2]cqList{old.newL, old.oldL} {
		for i := l.head; i != cqNone; i = old.flows[i].next {
			for h := old.flows[i].head; h != cqNone; h = old.nodes[h].next {
				p := old.nodes[h].packet()
				idx := q.bucket(p.Hash)
				nf := &q.flows[idx]
				q.push(nf, p)
				if nf.tag&cqListMask == cqInactive<<cqListShift {
					q.activate(nf, idx)
				}
			}
		}
	}
}

// bucket maps a flow hash to a flow queue: the hash is mixed with the
// instance's secret 128-bit key (add, then the SplitMix64 finaliser, then a
// keyed odd multiply) and the top 32 bits are scaled into [0, Flows) by a
// multiply-shift, as Linux's reciprocal_scale, so no modulo.
func (q *sched[T, A]) bucket(h uint32) uint32 {
	z := uint64(h) + q.key0
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * q.key1
	z ^= z >> 31
	return uint32((z >> 32) * q.nflows >> 32)
}

func (q *sched[T, A]) pushTail(l *cqList, i uint32) {
	q.flows[i].next = cqNone
	if l.tail == cqNone {
		l.head = i
	} else {
		q.flows[l.tail].next = i
	}
	l.tail = i
}

func (q *sched[T, A]) popHead(l *cqList) uint32 {
	i := l.head
	l.head = q.flows[i].next
	if l.head == cqNone {
		l.tail = cqNone
	}
	return i
}

func setList[A any](f *flowOf[A], l uint32) { f.tag = f.tag&^cqListMask | l<<cqListShift }

// push appends p to flow f; the caller has checked that a node is free.
func (q *sched[T, A]) push(f *flowOf[A], p aqm.Packet[T]) {
	i := q.free
	nd := &q.nodes[i]
	q.free = nd.next
	nd.set(&p)
	nd.next = cqNone
	if f.head == cqNone {
		f.head = i
	} else {
		q.nodes[f.tail].next = i
	}
	f.tail = i
	q.used += p.SegmentCount()
	f.bytes += p.Size
	q.backlog += int(p.Size)
}

// clearSelected clears every stored ECN bit above the two ECN bits (the
// selection bit FQ-CoDel's EnqueueDSCP sets). O(capacity); Reconfigure only.
func (q *sched[T, A]) clearSelected() {
	for i := range q.nodes {
		q.nodes[i].ecn &= aqm.ECNMask
	}
}

// pop removes the oldest packet of the non-empty flow f. It returns the
// stored ECN as is, selection bit included: a caller that lets the packet
// leave clears it.
func (q *sched[T, A]) pop(f *flowOf[A]) aqm.Packet[T] {
	i := f.head
	nd := &q.nodes[i]
	p := nd.packet()
	mark := nd.mark
	f.head = nd.next
	*nd = cqNode[T]{next: q.free}
	if mark != 0 {
		q.left(mark, p.Hash)
	}
	q.free = i
	q.used -= p.SegmentCount()
	f.bytes -= p.Size
	q.backlog -= int(p.Size)
	return p
}

// activate puts the idle flow idx at the tail of the new list with one
// quantum of credit (RFC 8290 §4.1).
func (q *sched[T, A]) activate(f *flowOf[A], idx uint32) {
	f.tag = cqNew<<cqListShift | cqNoEntry<<cqEntShift // class 0: reclass follows
	f.deficit = q.quantum
	q.pushTail(&q.newL, idx)
	q.nNew++
}

// activateShared puts the idle shared queue idx at the tail of the old
// list with one quantum: it never gets sparse-flow priority.
func (q *sched[T, A]) activateShared(f *flowOf[A], idx uint32) {
	f.tag = cqOld<<cqListShift | cqNoEntry<<cqEntShift
	f.deficit = q.quantum
	q.pushTail(&q.oldL, idx)
	q.nOld++
}

// admit appends the accepted arrival p to flow idx and keeps the
// bookkeeping: a flow that was idle joins the new list (admit reports it),
// and the classes follow the backlog near the limits. The caller checks
// the limits afterwards.
func (q *sched[T, A]) admit(p *aqm.Packet[T], idx uint32, mark uint8) (activated bool) {
	f := &q.flows[idx]
	q.push(f, *p)
	q.nodes[f.tail].mark = mark
	if f.tag&cqListMask == cqInactive<<cqListShift {
		if idx == q.g.shared {
			q.activateShared(f, idx)
		} else {
			q.activate(f, idx)
			activated = true
		}
	}
	if q.tracking {
		q.reclass(f, idx)
	}
	if !q.tracking && (q.used > q.onPkts || q.backlog > q.onBytes) {
		q.startTracking()
	}
	return activated
}

// refuses reports whether the arrival m describes is refused before it is
// classified: larger than the memory limit or with more segments than the
// packet limit, or a Reconfigure left the queue above its limits.
func (q *sched[T, A]) refuses(m aqm.Meta) bool {
	return int64(m.Size) > int64(q.memLim) || int(m.Segments) > q.limit || q.used > q.limit || q.backlog > q.memLim
}

// over reports whether the queue is above one of its limits.
func (q *sched[T, A]) over() bool { return q.used > q.limit || q.backlog > q.memLim }

// DRR++ is split in three so that each queue's Dequeue runs it with its
// AQM step inline: head names the flow to look at, refill rotates a head
// flow out of credit, retire takes off a head flow found empty. A Dequeue
// loops:
//
//	idx := q.head(); if idx == cqNone: empty
//	if the flow's deficit < 0: q.refill(idx); again
//	send the flow's next packet its AQM lets through, or q.retire(idx); again
//
// FQ-COBALT and FQ-PIE call these; FQ-CoDel's Dequeue (fq/codel.go) writes
// the same loop out inline, so a change here belongs there too.

// head returns the head of the new list, else of the old list, cqNone if
// no flow is active.
func (q *sched[T, A]) head() uint32 {
	if idx := q.newL.head; idx != cqNone {
		return idx
	}
	return q.oldL.head
}

// refill gives the head flow idx, out of credit (RFC 8290: a negative
// deficit), one more quantum and moves it to the back of the old list.
func (q *sched[T, A]) refill(idx uint32) {
	f := &q.flows[idx]
	f.deficit += q.quantum
	if f.tag&cqListMask == cqNew<<cqListShift {
		q.popHead(&q.newL)
		setList(f, cqOld)
		q.nNew--
		q.nOld++
	} else {
		q.popHead(&q.oldL)
	}
	q.pushTail(&q.oldL, idx)
}

// retire takes the empty flow idx, the head of its list, off that list: a
// new flow goes to the old list (RFC 8290, so it cannot come back as new at
// once), an old flow is deactivated.
func (q *sched[T, A]) retire(idx uint32) {
	f := &q.flows[idx]
	if f.tag&cqListMask == cqNew<<cqListShift {
		q.popHead(&q.newL)
		q.pushTail(&q.oldL, idx)
		setList(f, cqOld)
		q.nNew--
		q.nOld++
	} else {
		q.popHead(&q.oldL)
		setList(f, cqInactive)
		q.nOld--
	}
}

// charged takes the cost of a sent packet of size bytes off flow f's credit.
func (q *sched[T, A]) charged(f *flowOf[A], size uint32) {
	f.deficit -= int32(min(size, q.charge))
}

// reclass updates flow idx's class after its backlog changed, while
// tracking (callers test q.tracking first, so the untracked path stays one
// inlined test).
func (q *sched[T, A]) reclass(f *flowOf[A], idx uint32) {
	c := uint32(0)
	if f.head != cqNone {
		c = cqClass(f.bytes)
	}
	if c != f.tag&cqClassMask {
		q.enterClass(f, idx, c)
	}
}

// enterClass moves flow idx to class c: its old entry goes stale, and a
// non-empty flow gets a new entry on top of stack c.
func (q *sched[T, A]) enterClass(f *flowOf[A], idx, c uint32) {
	if c == 0 {
		f.tag = f.tag&cqListMask | cqNoEntry<<cqEntShift
		return
	}
	if q.top == uint32(len(q.pool)) {
		q.compact()
	}
	e := q.top
	q.top++
	q.pool[e] = cqEntry{flow: idx, next: q.heads[c]}
	q.heads[c] = e
	q.classes[c>>6] |= 1 << (c & 63)
	f.tag = f.tag&cqListMask | e<<cqEntShift | c
}

// startTracking builds the class stacks from the active flows, new list
// then old list, in list order.
func (q *sched[T, A]) startTracking() {
	q.tracking = true
	q.top = 0
	for i := range q.heads {
		q.heads[i] = cqNone
	}
	q.classes = [4]uint64{}
	visited := 0
	for _, l := range [2]*cqList{&q.newL, &q.oldL} {
		for i := l.head; i != cqNone; i = q.flows[i].next {
			f := &q.flows[i]
			f.tag &= cqListMask
			f.tag |= cqNoEntry << cqEntShift
			q.reclass(f, i)
			visited++
		}
	}
	q.work += uint64(visited)
	q.credit = visited + 64
	if q.guard && !q.g.armed {
		// A queue near its limits may be a flood into buckets already
		// taken, which the disarmed guard's signal does not see.
		q.arm()
	}
}

// compact drops the stale entries of the pool, keeping the current ones in
// their order (the pool is in push order), and rebuilds the stacks.
func (q *sched[T, A]) compact() {
	w := uint32(0)
	for i := range q.top {
		e := q.pool[i]
		f := &q.flows[e.flow]
		if f.tag>>cqEntShift == i {
			q.pool[w].flow = e.flow
			f.tag = f.tag&(cqListMask|cqClassMask) | w<<cqEntShift
			w++
		}
	}
	q.work += uint64(q.top)
	q.top = w
	for i := range q.heads {
		q.heads[i] = cqNone
	}
	q.classes = [4]uint64{}
	for i := range w {
		c := q.flows[q.pool[i].flow].tag & cqClassMask
		q.pool[i].next = q.heads[c]
		q.heads[c] = i
		q.classes[c>>6] |= 1 << (c & 63)
	}
}

// fattest returns the flow to drop from on overload: one in the highest
// non-empty backlog class, the one that entered that class last. The queue
// must not be empty. Stale entries met on the way are unlinked for good, so
// the search costs O(1) amortised over the pushes.
func (q *sched[T, A]) fattest() uint32 {
	for w := 3; w >= 0; w-- {
		for q.classes[w] != 0 {
			c := uint32(w<<6 + bits.Len64(q.classes[w]) - 1)
			for e := q.heads[c]; e != cqNone; e = q.pool[e].next {
				q.work++
				fl := q.pool[e].flow
				if q.flows[fl].tag>>cqEntShift == e {
					q.heads[c] = e
					return fl
				}
			}
			q.heads[c] = cqNone
			q.classes[w] &^= 1 << (c & 63)
		}
	}
	panic("fq: overload with an empty queue")
}

// dropFat runs one overload step: it drops packets from the head of the
// fattest flow until half its bytes or a batch of packets (super-packets
// count one: the batch bounds the work) are gone (at least one), through
// the DropFunc as [aqm.DroppedOverlimit]. It returns that flow and the
// wire packets dropped, and whether the arrival (the last packet of flow
// arrival) had to go too; the arrival is then removed without reaching
// the DropFunc. It runs only while tracking.
func (q *sched[T, A]) dropFat(arrival uint32) (fat, dropped uint32, gone bool) {
	fat = q.fattest()
	f := &q.flows[fat]
	threshold := f.bytes / 2
	var bytes uint32
	n := 0
	for {
		if fat == arrival && f.head == f.tail { // only the arrival is left
			q.pop(f)
			q.reclass(f, fat)
			return fat, dropped, true
		}
		p := q.pop(f)
		p.ECN &= aqm.ECNMask // the selection bit stays inside
		n++
		dropped += uint32(p.SegmentCount())
		bytes += p.Size
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, true)
		if q.onDrop != nil {
			q.onDrop(p, aqm.DroppedOverlimit)
		}
		if n >= q.batch || bytes >= threshold || f.head == cqNone {
			break
		}
	}
	q.reclass(f, fat)
	return fat, dropped, false
}

// tick counts one Dequeue call while tracking and stops tracking once the
// build is paid for and the queue is at most half full.
func (q *sched[T, A]) tick() {
	if q.credit > 0 {
		q.credit--
	}
	if q.credit == 0 && q.used <= q.offPkts && q.backlog <= q.offBytes {
		q.tracking = false
	}
}

// Len returns the number of queued wire packets: a GSO super-packet counts
// as its segments.
func (q *sched[T, A]) Len() int { return q.used }

// Backlog returns the number of queued bytes.
func (q *sched[T, A]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *sched[T, A]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.used, q.backlog
	return s
}

// maxFlowBytes returns the largest flow backlog, by a scan of the table.
func (q *sched[T, A]) maxFlowBytes() int {
	most := uint32(0)
	for i := range q.flows {
		most = max(most, q.flows[i].bytes)
	}
	return int(most)
}

// memoryBytes returns what the scheduler preallocated.
func (q *sched[T, A]) memoryBytes() int {
	return len(q.flows)*int(unsafe.Sizeof(flowOf[A]{})) + len(q.nodes)*int(unsafe.Sizeof(cqNode[T]{})) +
		len(q.pool)*int(unsafe.Sizeof(cqEntry{})) + int(unsafe.Sizeof(q.heads)) +
		len(q.g.ids)*int(unsafe.Sizeof(guardID{}))
}

// flowPackets returns the wire packets queued in flow i and its list.
func (q *sched[T, A]) flowPackets(i uint32) (n int, isNew, isOld bool) {
	f := &q.flows[i]
	for j := f.head; j != cqNone; j = q.nodes[j].next {
		n += max(int(q.nodes[j].segs), 1)
	}
	l := f.tag & cqListMask >> cqListShift
	return n, l == cqNew, l == cqOld
}

// linkLimits is the LimitPackets and MemoryLimitBytes of every
// ConfigForLink: [aqm.Rate.BufferPackets] and [aqm.Rate.BufferBytes] of
// rate and rtt, or zeros (the defaults) for a zero rate.
func linkLimits(rate aqm.Rate, rtt time.Duration) (packets, bytes int) {
	if rate == 0 {
		return 0, 0
	}
	return rate.BufferPackets(rtt), rate.BufferBytes(rtt)
}

// joinChecks joins a configuration's errors: the scheduler's fields', its
// controller's (as fq's fields) and its signal rules'.
func joinChecks(sched []error, ctl error, rules []error) error {
	errs := append(sched, cfgerr.Relabel("fq", ctl)...)
	return errors.Join(append(errs, rules...)...)
}

// validateSched checks the scheduler's fields, shared by the FQ configs.
func validateSched(flows, limit, mem, quantum, batch int) []error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "fq", Field: field, Value: v, Rule: rule})
	}
	if flows < 0 || flows > maxCoDelFlows {
		bad("Flows", flows, "must be in [0, "+strconv.FormatUint(uint64(maxCoDelFlows), 10)+"]")
	}
	if limit < 0 || limit > maxCoDelLimit {
		bad("LimitPackets", limit, "must be in [0, "+strconv.FormatUint(uint64(maxCoDelLimit), 10)+"]")
	}
	if mem < 0 || mem > maxCoDelMemoryLimit {
		bad("MemoryLimitBytes", mem, "must be in [0, "+strconv.FormatUint(uint64(maxCoDelMemoryLimit), 10)+"]")
	}
	if quantum != 0 && (quantum < minCoDelQuantum || quantum > maxCoDelQuantum) {
		bad("QuantumBytes", quantum, "must be 0 or in [256, "+strconv.FormatUint(uint64(maxCoDelQuantum), 10)+"]")
	}
	if batch < 0 || batch > maxCoDelBatch {
		bad("DropBatchPackets", batch, "must be in [0, "+strconv.FormatUint(uint64(maxCoDelBatch), 10)+"]")
	}
	return errs
}

// schedDefaults fills in the scheduler's zero fields.
func schedDefaults(flows, limit, mem, quantum, batch *int) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(flows, defaultCoDelFlows)
	def(limit, defaultCoDelLimitPackets)
	def(mem, defaultCoDelMemoryLimitBytes)
	def(quantum, defaultCoDelQuantumBytes)
	def(batch, defaultCoDelDropBatchPackets)
}

// touchAhead is how many packets of a burst touch classifies ahead.
const touchAhead = 16

// touch writes the flow index of each packet of ps into idxs and loads one
// word of each flow's line, folding them into s.touched so that the loads
// are not dropped. The loads do not depend on each other, so the CPU issues
// them together.
func (s *sched[T, A]) touch(ps []aqm.Packet[T], idxs *[touchAhead]uint32) {
	var acc uint32
	for i := range ps {
		idx := s.bucket(ps[i].Hash)
		idxs[i] = idx
		acc ^= s.flows[idx].tag
	}
	s.touched ^= acc
}
