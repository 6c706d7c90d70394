package sfq

import (
	"math"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Queue is a Stochastic Fairness Queueing scheduler (McKenney, "Stochastic
// Fairness Queueing", INFOCOM 1990) with the behaviour Linux's sch_sfq made
// standard. It implements [aqm.Queue].
//
// Each packet is classified by its [aqm.Packet.Hash], mixed with a secret
// per-instance key, into one of Divisor buckets; the packets of one bucket
// form one flow (a FIFO). Active flows are served in a round-robin ring by
// deficit round robin (Shreedhar and Varghese 1995): the flow at the front of
// the ring sends packets while its credit (allot) is positive, each packet
// costing its size; when the credit is spent the ring moves on and the flow
// is given another QuantumBytes. A flow that becomes active joins the ring at
// the back with a full quantum; a flow that empties leaves the ring and
// forgets its credit. SFQ never drops early and never marks: it drops only at
// its limits. An arrival to a flow holding DepthPackets is refused (or, with
// HeadDrop, replaces the flow's oldest packet). When the whole queue is over
// LimitPackets or LimitBytes, a packet is dropped from a longest flow (most
// packets), its newest packet or with HeadDrop its oldest; if every flow
// holds one packet, the flow at the front of the ring loses its packet. If
// the packet chosen is the arrival itself, Enqueue refuses it; any other
// victim goes to the [aqm.DropFunc] as [aqm.DroppedOverlimit]. Both limits
// are checked after adding the arrival, so the queue evicts at most one
// packet per arrival for the packet limit, and as many as the byte limit
// needs.
//
// Every operation is O(1) except the periodic re-key (O(Len)) and, for
// quanta smaller than the packets, a Dequeue that must skip more than a full
// round of flows (O(active flows), computed in closed form). A list per
// depth finds a longest flow in O(1), as in Linux.
//
// Differences from McKenney and Linux sch_sfq:
//
//   - Round robin is by bytes (DRR with a quantum), as in Linux since 2.6,
//     not McKenney's one packet per flow per round.
//   - There is no separate "flows" parameter: the queue allocates a flow
//     slot for every bucket that can be active at once (min(Divisor,
//     LimitPackets+1)), so an arrival is never dropped for want of a slot.
//   - Re-keying moves the queued packets to their new buckets without
//     dropping any: a flow may be left deeper than DepthPackets until it
//     drains (further arrivals to it are refused meanwhile). Linux drops
//     the packets that do not fit. The packets are moved in service order
//     (ring order from the next flow to serve, FIFO within a flow), not in
//     Linux's slot-index order; new flows get a fresh quantum in both. All
//     packets of one flow hash to one bucket under any key, so per-flow
//     order is kept. Keeping old flows on the old key instead would let a
//     persistently backlogged flow keep its collision forever, which is
//     what perturbation exists to break.
//   - The re-key is checked lazily from Enqueue's now (no timer) and skipped
//     periods are not replayed: one new key after any gap. A re-key
//     scheduled more than one period ahead of now (after a reading far in
//     the future, or time running backwards) is moved back to one period
//     from now, so a clock glitch delays re-keying by at most one period.
//   - The keyed hash is a 64-bit mix (SplitMix64 finaliser) of the caller's
//     32-bit Hash xor the key, scaled into Divisor buckets by a
//     multiply-shift; Linux uses siphash over the packet headers and a
//     power-of-two divisor. Callers must supply a good flow hash.
//   - LimitPackets 1 is allowed (Linux rejects it since CVE-2024-57996,
//     whose cause, a parent peeking a packet while it still counts in qlen,
//     has no equivalent here). The limits are validated after defaults.
//   - An optional byte limit (LimitBytes) is enforced with the same
//     longest-flow (in packets) drop, repeated until the backlog fits.
//   - Linux returns NET_XMIT_CN when the arriving flow lost a packet but the
//     arrival was kept; here the verdict is simply [aqm.Enqueued] and the
//     evicted packet goes to the DropFunc.
//   - Linux's optional per-flow RED (redflowlimit, ECN marking) is not
//     implemented; use FQ-CoDel for an AQM per flow.
//   - Allot is a 64-bit byte count (Linux: int since 2024, a scaled 16-bit
//     value before), so packets up to 4 GiB are charged exactly.
//
// An SFQ is not safe for concurrent use.
type Queue[T any] struct {
	p      params
	cfg    Config // effective: defaults filled in, the seed in use
	key    uint64
	rnd    rng.Source
	nslots uint32

	ht    []uint32    // bucket -> slot, none when the bucket has no packets
	slots []slot      // nslots
	links []depthLink // depth lists: [0, nslots) slots, nslots+d the head of depth d
	nodes []node[T]   // packet slab
	free  uint32      // head of the free node list (linked by next)

	tail     uint32 // last slot of the ring (its next is served first), none if idle
	curDepth uint32 // packets in a longest slot
	active   int    // slots holding packets
	n        int    // wire packets queued: a super-packet counts its segments
	backlog  int    // bytes

	armed       bool     // nextPerturb is set
	nextPerturb aqm.Time // when the key is next replaced

	onDrop   aqm.DropFunc[T]
	stats    aqm.Stats
	detail   Detail // counters only; gauges are filled in by Detail
	memBytes int    // bytes allocated by init
}

var _ aqm.BatchQueue[int] = (*Queue[int])(nil)

// New returns an empty SFQ. onDrop receives the queued packets that the
// overflow or depth drops evict; it may be nil. The error wraps
// [aqm.ErrInvalidConfig] for each bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Seed = rng.SeedOrRandom(cfg.Seed)
	q := &Queue[T]{onDrop: onDrop, cfg: cfg}
	q.rnd.Seed(cfg.Seed)
	q.key = q.rnd.Uint64()
	q.init(makeParams(cfg), cfg.LimitPackets+1)
	return q, nil
}

// init allocates storage for capacity packets (the limit plus the arrival
// held while a victim is chosen) and resets the queue to empty.
func (q *Queue[T]) init(p params, capacity int) {
	q.p = p
	q.nslots = uint32(min(int(p.divisor), capacity))
	q.ht = make([]uint32, p.divisor)
	for i := range q.ht {
		q.ht[i] = none
	}
	q.slots = make([]slot, q.nslots)
	// A slot holds at most capacity packets, so depths run 0..capacity.
	q.links = make([]depthLink, int(q.nslots)+capacity+1)
	for i := range q.links[q.nslots:] {
		h := q.nslots + uint32(i)
		q.links[h] = depthLink{next: h, prev: h}
	}
	for i := range q.slots {
		q.slots[i] = slot{head: none, tail: none, next: none, bucket: none}
		q.link(uint32(i))
	}
	q.nodes = make([]node[T], capacity)
	q.memBytes = len(q.ht)*int(unsafe.Sizeof(q.ht[0])) + len(q.slots)*int(unsafe.Sizeof(q.slots[0])) +
		len(q.links)*int(unsafe.Sizeof(q.links[0])) + len(q.nodes)*int(unsafe.Sizeof(q.nodes[0]))
	for i := range q.nodes {
		q.nodes[i].next = uint32(i + 1)
	}
	q.nodes[capacity-1].next = none
	q.free = 0
	q.tail, q.curDepth, q.active, q.n, q.backlog = none, 0, 0, 0, 0
	q.armed = false
}

// Enqueue classifies p into its flow and accepts it, or refuses it with
// [aqm.DroppedOverlimit] if its flow is at DepthPackets, if it alone exceeds
// LimitBytes, if the queue is above a limit lowered by Reconfigure, or if it
// is itself the packet chosen by the overflow drop. Other packets dropped to
// make room go to the DropFunc.
//
// Its common case, from taking a free node to counting the packet, is
// written out again in EnqueueBatch (batch.go); a change to one belongs in
// the other.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	tally.NoteSize(&q.stats, p.Size)
	if q.p.period > 0 {
		q.maybePerturb(now)
	}
	size := int(p.Size)
	lb := q.p.limitBytes
	if lb > 0 && (size > lb || q.backlog > lb) || q.n > q.p.limit || int(p.Segments) > q.p.limit {
		return q.refuse(p)
	}
	x := q.attach(q.bucket(p.Hash))
	if q.slots[x].n >= q.p.depth {
		q.detail.DroppedDepth++
		if !q.p.headDrop {
			return q.refuse(p)
		}
		return q.replaceHead(x, p)
	}
	i := q.free
	if i == none {
		panic("sfq: packet slab exhausted")
	}
	nd := &q.nodes[i]
	q.free = nd.next
	nd.pkt = p
	// appendNode and inc written out (the calls cost more than the work).
	s := &q.slots[x]
	q.linkTail(s, i)
	s.backlog += uint64(p.Size)
	q.moveDepth(x, s.n+1)
	s.n++
	if s.n > q.curDepth {
		q.curDepth = s.n
	}
	if s.n == 1 {
		q.activate(x)
	}
	q.n += p.SegmentCount()
	q.backlog += size
	if q.n > q.p.limit || (lb > 0 && q.backlog > lb) {
		return q.overflow(i, p.Meta)
	}
	q.stats.Enqueued.AddMeta(p.Meta)
	return aqm.Enqueued
}

// replaceHead is Enqueue's HeadDrop path for an arrival p to slot x, which
// is at DepthPackets.
func (q *Queue[T]) replaceHead(x uint32, p aqm.Packet[T]) aqm.Verdict {
	size := int(p.Size)
	lb := q.p.limitBytes
	// Replace the flow's oldest packet: the depth and the flow's place
	// in the depth lists stay as they are, as in Linux.
	s := &q.slots[x]
	old := q.unlinkNode(x, s.head)
	q.backlog -= int(old.Size)
	q.n -= old.SegmentCount()
	i := q.free
	q.free = q.nodes[i].next
	q.nodes[i].pkt = p
	q.linkTail(s, i)
	s.backlog += uint64(p.Size)
	q.backlog += size
	q.n += p.SegmentCount()
	q.evicted(old)
	if (lb == 0 || q.backlog <= lb) && q.n <= q.p.limit {
		q.stats.Enqueued.AddMeta(p.Meta)
		return aqm.Enqueued
	}
	return q.overflow(i, p.Meta)
}

// overflow drops packets from a longest flow until the queue is within its
// limits; arrival is the node of the packet just added. It refuses the
// arrival if it is chosen.
func (q *Queue[T]) overflow(arrival uint32, m aqm.Meta) aqm.Verdict {
	lb := q.p.limitBytes
	for q.n > q.p.limit || (lb > 0 && q.backlog > lb) {
		var x, i uint32
		if q.curDepth > 1 {
			x = q.links[q.nslots+q.curDepth].next // most recent to reach that depth
			if q.p.headDrop {
				i = q.slots[x].head
			} else {
				i = q.slots[x].tail
			}
		} else {
			// Every flow holds one packet: the front of the ring loses it.
			x = q.slots[q.tail].next
			i = q.slots[x].head
		}
		q.detail.DroppedOverflow++
		v := q.removeNode(x, i)
		if i == arrival {
			tally.DropMeta(&q.stats, aqm.DroppedOverlimit, m, false)
			return aqm.DroppedOverlimit
		}
		q.evicted(v)
	}
	q.stats.Enqueued.AddMeta(m)
	return aqm.Enqueued
}

func (q *Queue[T]) refuse(p aqm.Packet[T]) aqm.Verdict {
	tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
	return aqm.DroppedOverlimit
}

// evicted reports a queued packet dropped to make room.
func (q *Queue[T]) evicted(p aqm.Packet[T]) {
	tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, true)
	if q.onDrop != nil {
		q.onDrop(p, aqm.DroppedOverlimit)
	}
}

// Dequeue returns the oldest packet of the flow whose round-robin turn it
// is. Its body is written out again as the loop body of DequeueBatch
// (batch.go); a change to one belongs in the other.
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if q.tail == none {
		return p, false
	}
	x := q.slots[q.tail].next
	s := &q.slots[x]
	if s.allot <= 0 {
		// The first step of advance written out (with a quantum of at
		// least the packet size it is the only one), then the rest of
		// its round.
		q.tail = x
		s.allot += q.p.quantum
		x = s.next
		s = &q.slots[x]
		if s.allot <= 0 {
			x = q.advance(q.active)
			s = &q.slots[x]
		}
	}
	// removeNodeInto for the head node, written out: the head has no
	// predecessor.
	i := s.head
	nd := &q.nodes[i]
	next := nd.next
	s.head = next
	if next == none {
		s.tail = none
	}
	p = nd.pkt
	size := p.Size
	s.backlog -= uint64(size)
	*nd = node[T]{next: q.free}
	q.free = i
	d := s.n
	if q.moveDepth(x, d-1) && q.curDepth == d { // x was the only slot of the deepest list
		q.curDepth--
	}
	s.n = d - 1
	q.n -= p.SegmentCount()
	q.backlog -= int(size)
	if d == 1 {
		q.release(x)
	} else {
		s.allot -= int64(size)
	}
	q.stats.Dequeued.AddMeta(p.Meta)
	return p, true
}

// advance moves the ring past flows without credit, giving each a quantum
// as it passes, and returns the first flow with positive credit (the new
// front). It takes at most steps steps (dequeue has taken the first of a
// round of active+1 already); with QuantumBytes at least the largest packet
// they suffice, otherwise it finishes in closed form.
func (q *Queue[T]) advance(steps int) uint32 {
	for range steps {
		x := q.slots[q.tail].next
		s := &q.slots[x]
		if s.allot > 0 {
			return x
		}
		q.tail = x
		s.allot += q.p.quantum
	}
	return q.advanceClosedForm()
}

// advanceClosedForm computes the result of the skipping loop in advance
// without running it. Let flow j (0 = front) need r_j quanta to reach
// positive credit: r_j = 0 if allot_j > 0, else floor(-allot_j/quantum)+1.
// The loop visits flow j for the k-th time (k = 0, 1, ...) at step
// k*active + j, adding a quantum each visit until its credit is positive,
// so it stops at the flow c minimising (r_c, c). By then flows before c were
// visited r_c+1 times, c and the flows after it r_c times, and the tail is
// c's predecessor.
func (q *Queue[T]) advanceClosedForm() uint32 {
	quantum := q.p.quantum
	need := func(a int64) int64 {
		if a > 0 {
			return 0
		}
		return -a/quantum + 1
	}
	best, bestPrev := none, none
	var bestR int64 = math.MaxInt64
	prev := q.tail
	for x := q.slots[q.tail].next; ; x = q.slots[x].next {
		if r := need(q.slots[x].allot); r < bestR {
			best, bestPrev, bestR = x, prev, r
		}
		if x == q.tail {
			break
		}
		prev = x
	}
	before := true
	for x := q.slots[q.tail].next; ; x = q.slots[x].next {
		if x == best {
			before = false
		}
		if before {
			q.slots[x].allot += (bestR + 1) * quantum
		} else {
			q.slots[x].allot += bestR * quantum
		}
		if x == q.tail {
			break
		}
	}
	q.tail = bestPrev
	return best
}

// Len returns the number of queued wire packets: a GSO super-packet counts
// as its segments.
func (q *Queue[T]) Len() int { return q.n }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.n, q.backlog
	return s
}

// Config returns the configuration in effect: the one given to [New] or
// the last successful [Queue.Reconfigure], with every default filled in and
// Seed set to the seed in use (the one drawn from crypto/rand if the
// configuration gave zero).
func (q *Queue[T]) Config() Config { return q.cfg }

// Reconfigure validates cfg and applies it to the running queue without
// losing, duplicating or reordering any queued packet. Seed is ignored: the
// key and random stream carry on, and [Queue.Config] keeps reporting the seed
// in use. A limit below the current length or
// backlog keeps the queued packets and refuses arrivals until the queue is
// back within it. If the packet capacity must grow or Divisor changes,
// storage is reallocated and the packets are re-classified in service order
// (every flow restarts with a full quantum); otherwise the change is in
// place. Changing PerturbPeriod restarts the period from the next Enqueue.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	cfg.Seed = q.cfg.Seed
	q.cfg = cfg
	p := makeParams(cfg)
	capacity := max(p.limit+1, q.n)
	if p.period != q.p.period {
		q.armed = false
	}
	if p.divisor == q.p.divisor && capacity <= len(q.nodes) {
		q.p = p
		return nil
	}
	old := *q
	q.init(p, capacity)
	q.armed = old.armed
	q.n, q.backlog = old.n, old.backlog
	for i := old.chain(); i != none; i = old.nodes[i].next {
		j := q.free
		q.free = q.nodes[j].next
		q.nodes[j].pkt = old.nodes[i].pkt
		q.appendNode(q.attach(q.bucket(q.nodes[j].pkt.Hash)), j)
	}
	return nil
}
