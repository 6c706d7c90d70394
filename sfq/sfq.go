package sfq

import (
	"errors"
	"iter"
	"math"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Defaults of [Config], the values Linux sch_sfq uses when tc leaves a
// parameter out.
const (
	// DefaultLimitPackets is the whole queue's packet limit: 127, Linux's
	// SFQ_MAX_DEPTH, which tc prints as "limit 127p".
	DefaultLimitPackets = 127
	// DefaultDepthPackets is the per-flow packet limit: 127, Linux's
	// default and maximum "depth".
	DefaultDepthPackets = 127
	// DefaultDivisor is the number of hash buckets: 1024, Linux's
	// SFQ_DEFAULT_HASH_DIVISOR.
	DefaultDivisor = 1024
	// DefaultQuantumBytes is the round-robin quantum: 1514 bytes, Linux's
	// psched_mtu for Ethernet (a 1500-byte MTU plus the 14-byte link header).
	DefaultQuantumBytes = 1514
)

// Upper bounds checked by [Config]; storage proportional to them is
// allocated by [New].
const (
	maxLimitPackets = 1 << 24 // as fifo.Queue: 16 Mi packets, 640 MiB of nodes for 8-byte payloads
	maxDivisor      = 1 << 20 // 4 MiB of bucket table
	maxQuantum      = math.MaxUint32
)

// Config configures an [Queue]. The zero value is Linux's default SFQ
// ("limit 127p depth 127 divisor 1024 quantum 1514b", no perturbation,
// tail drop) with a secret random hash key. [ConfigForLink] sizes the
// limits for a link instead.
type Config struct {
	// LimitPackets is the most packets the whole queue holds. Zero means
	// [DefaultLimitPackets] (127). It must be in [1, 16777216]. SFQ has
	// no AQM, so this limit is what bounds the queueing delay: 127 full-size
	// packets are 1.5 ms at 1 Gbit/s and 15 ms at 100 Mbit/s. Raise it for
	// faster links or many concurrently active flows, but a limit that
	// holds more than a second of queue at the link rate defeats the
	// scheduler's purpose under unresponsive traffic: every flow then waits
	// that long. [ConfigForLink] sizes it for a rate and round-trip time.
	LimitPackets int
	// LimitBytes is the most bytes (sum of Size) the queue holds. Zero means
	// no byte limit. A packet larger than LimitBytes is always refused. It
	// must not be negative.
	LimitBytes int
	// DepthPackets is the most packets one flow (one hash bucket) may hold;
	// an arrival to a flow already at this depth is refused, or with
	// HeadDrop replaces that flow's oldest packet. Zero means
	// [DefaultDepthPackets] (127). It must not be negative; values above
	// LimitPackets have no effect.
	DepthPackets int
	// Divisor is the number of hash buckets packets are classified into.
	// Zero means [DefaultDivisor] (1024). It must be in [0, 1048576]; it
	// need not be a power of two.
	Divisor int
	// QuantumBytes is the round-robin quantum in bytes: the credit (allot)
	// a flow receives per round. Zero means [DefaultQuantumBytes] (1514).
	// It must be in [0, 4294967295]. Quanta smaller than the packets are
	// allowed (the scheduler then skips flows for several rounds in one
	// step), but a quantum of at least the MTU gives the usual
	// one-turn-per-round behaviour.
	QuantumBytes int
	// PerturbPeriod is how often the hash key is replaced, so that flows
	// that collide in a bucket do not stay together. Zero (the default, as
	// in Linux) never replaces the key. It must not be negative. The check
	// is made lazily on Enqueue from its now argument; a re-key with packets
	// queued moves every queued packet (O(Len) once per period, no
	// allocation, no drop, no reordering within a flow).
	PerturbPeriod time.Duration
	// HeadDrop makes the overflow and depth drops take the oldest packet of
	// the chosen flow instead of the newest (Linux "headdrop"), which gives
	// the flow's sender an earlier congestion signal.
	HeadDrop bool
	// Seed seeds the random source that draws the hash keys. Zero (the
	// default, and the right choice in production) draws a secret seed from
	// crypto/rand, so that no one can precompute flows that collide in
	// your queue; [Queue.Config] reports the seed drawn. A fixed non-zero
	// seed gives the same keys, hence the same decisions on the same trace:
	// use one for tests and simulations only, since anyone who knows it
	// knows the keys as well.
	Seed uint64
}

// ConfigForLink returns the configuration of an SFQ draining a link of
// the given rate for flows whose round-trip time is about rtt (zero means
// [aqm.DefaultRTT]): the packet and byte limits hold [aqm.Rate.BufferBytes]
// (four round trips at the rate, between 64 KiB and 32 MiB), and every other
// field keeps its default. SFQ has no AQM, so this buffer is the most delay
// an unresponsive flow can build. A zero rate (unknown or unlimited) gives
// the zero Config: the defaults.
func ConfigForLink(rate aqm.Rate, rtt time.Duration) Config {
	if rate == 0 {
		return Config{}
	}
	return Config{
		LimitPackets: rate.BufferPackets(rtt),
		LimitBytes:   rate.BufferBytes(rtt),
	}
}

// Validate reports every bad field of c, one [aqm.ConfigError] each, joined
// with errors.Join; each wraps [aqm.ErrInvalidConfig]. Zero fields take
// their defaults and are valid. It does not modify c.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "sfq", Field: field, Value: v, Rule: rule})
	}
	if c.LimitPackets < 0 || c.LimitPackets > maxLimitPackets {
		bad("LimitPackets", c.LimitPackets, "must be in [0, 16777216] (0 means 127)")
	}
	if c.LimitBytes < 0 {
		bad("LimitBytes", c.LimitBytes, "must not be negative")
	}
	if c.DepthPackets < 0 {
		bad("DepthPackets", c.DepthPackets, "must not be negative (0 means 127)")
	}
	if c.Divisor < 0 || c.Divisor > maxDivisor {
		bad("Divisor", c.Divisor, "must be in [0, 1048576] (0 means 1024)")
	}
	if c.QuantumBytes < 0 || int64(c.QuantumBytes) > maxQuantum {
		bad("QuantumBytes", c.QuantumBytes, "must be in [0, 4294967295] (0 means 1514)")
	}
	if c.PerturbPeriod < 0 {
		bad("PerturbPeriod", c.PerturbPeriod, "must not be negative (0 means never)")
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field that has a default replaced
// by it (Seed is left alone).
func (c Config) withDefaults() Config {
	if c.LimitPackets == 0 {
		c.LimitPackets = DefaultLimitPackets
	}
	if c.DepthPackets == 0 {
		c.DepthPackets = DefaultDepthPackets
	}
	if c.Divisor == 0 {
		c.Divisor = DefaultDivisor
	}
	if c.QuantumBytes == 0 {
		c.QuantumBytes = DefaultQuantumBytes
	}
	return c
}

// sfqParams are the validated constants the hot path reads.
type sfqParams struct {
	limit      int    // packets
	limitBytes int    // 0: none
	depth      uint32 // per-flow packets
	divisor    uint32
	quantum    int64 // bytes
	period     time.Duration
	headDrop   bool
}

func makeSFQParams(c Config) sfqParams {
	return sfqParams{
		limit:      c.LimitPackets,
		limitBytes: c.LimitBytes,
		depth:      uint32(min(c.DepthPackets, math.MaxUint32)),
		divisor:    uint32(c.Divisor),
		quantum:    int64(c.QuantumBytes),
		period:     c.PerturbPeriod,
		headDrop:   c.HeadDrop,
	}
}

// sfqNone is the null index for nodes, slots and buckets.
const sfqNone = ^uint32(0)

// sfqNode is one packet in the slab, doubly linked within its flow so that
// both head and tail drops are O(1). The prev link of a flow's head node is
// not maintained (the head has no predecessor, and Dequeue need not touch
// the next node to say so).
type sfqNode[T any] struct {
	pkt        aqm.Packet[T]
	next, prev uint32
}

// sfqSlot is one active flow (Linux's "slot"): the packets of one hash
// bucket. 40 bytes.
type sfqSlot struct {
	head, tail uint32 // oldest and newest node, sfqNone when empty
	n          uint32 // packets
	next       uint32 // successor in the round-robin ring while active
	bucket     uint32 // the hash bucket bound to this slot
	allot      int64  // DRR credit in bytes; in (-maxSize, quantum]
	backlog    uint64 // bytes
}

// sfqLink is a doubly linked list cell of the depth lists.
type sfqLink struct{ next, prev uint32 }

// SFQ is a Stochastic Fairness Queueing scheduler (McKenney, "Stochastic
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
	p      sfqParams
	cfg    Config // effective: defaults filled in, the seed in use
	key    uint64
	rnd    rng.Source
	nslots uint32

	ht    []uint32     // bucket -> slot, sfqNone when the bucket has no packets
	slots []sfqSlot    // nslots
	links []sfqLink    // depth lists: [0, nslots) slots, nslots+d the head of depth d
	nodes []sfqNode[T] // packet slab
	free  uint32       // head of the free node list (linked by next)

	tail     uint32 // last slot of the ring (its next is served first), sfqNone if idle
	curDepth uint32 // packets in a longest slot
	active   int    // slots holding packets
	n        int    // packets
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
	q.init(makeSFQParams(cfg), cfg.LimitPackets+1)
	return q, nil
}

// init allocates storage for capacity packets (the limit plus the arrival
// held while a victim is chosen) and resets the queue to empty.
func (q *Queue[T]) init(p sfqParams, capacity int) {
	q.p = p
	q.nslots = uint32(min(int(p.divisor), capacity))
	q.ht = make([]uint32, p.divisor)
	for i := range q.ht {
		q.ht[i] = sfqNone
	}
	q.slots = make([]sfqSlot, q.nslots)
	// A slot holds at most capacity packets, so depths run 0..capacity.
	q.links = make([]sfqLink, int(q.nslots)+capacity+1)
	for i := range q.links[q.nslots:] {
		h := q.nslots + uint32(i)
		q.links[h] = sfqLink{next: h, prev: h}
	}
	for i := range q.slots {
		q.slots[i] = sfqSlot{head: sfqNone, tail: sfqNone, next: sfqNone, bucket: sfqNone}
		q.link(uint32(i))
	}
	q.nodes = make([]sfqNode[T], capacity)
	q.memBytes = len(q.ht)*int(unsafe.Sizeof(q.ht[0])) + len(q.slots)*int(unsafe.Sizeof(q.slots[0])) +
		len(q.links)*int(unsafe.Sizeof(q.links[0])) + len(q.nodes)*int(unsafe.Sizeof(q.nodes[0]))
	for i := range q.nodes {
		q.nodes[i].next = uint32(i + 1)
	}
	q.nodes[capacity-1].next = sfqNone
	q.free = 0
	q.tail, q.curDepth, q.active, q.n, q.backlog = sfqNone, 0, 0, 0, 0
	q.armed = false
}

// bucket maps a flow hash to its bucket under the current key: the
// SplitMix64 finaliser (a bijection on 64 bits with full avalanche) of the
// hash xor the key, whose top 32 bits are scaled into [0, divisor) by a
// multiply-shift ((x * divisor) >> 32 for x < 2^32).
func (q *Queue[T]) bucket(h uint32) uint32 {
	return sfqBucket(h, q.key, q.p.divisor)
}

func sfqBucket(h uint32, key uint64, divisor uint32) uint32 {
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
	q.links[x] = sfqLink{next: n, prev: h}
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
	if x == sfqNone {
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
func (q *Queue[T]) linkTail(s *sfqSlot, i uint32) {
	nd := &q.nodes[i]
	nd.next, nd.prev = sfqNone, s.tail
	if s.tail == sfqNone {
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
	if q.tail == sfqNone {
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
	links[x] = sfqLink{next: n, prev: h}
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
	case nd.next == sfqNone && isHead:
		s.tail = sfqNone
	case nd.next == sfqNone:
		s.tail = nd.prev
	case !isHead:
		q.nodes[nd.next].prev = nd.prev
	}
	*dst = nd.pkt
	s.backlog -= uint64(dst.Size)
	*nd = sfqNode[T]{next: q.free}
	q.free = i
}

// release unbinds slot x, which has just become empty and is the front of
// the ring (the successor of q.tail).
func (q *Queue[T]) release(x uint32) {
	s := &q.slots[x]
	q.ht[s.bucket] = sfqNone
	if s.next == x {
		q.tail = sfqNone
	} else {
		q.slots[q.tail].next = s.next
	}
	s.next = sfqNone
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
	q.n--
	q.backlog -= int(dst.Size)
	if q.slots[x].n == 0 {
		q.release(x)
	}
}

// Enqueue classifies p into its flow and accepts it, or refuses it with
// [aqm.DroppedOverlimit] if its flow is at DepthPackets, if it alone exceeds
// LimitBytes, if the queue is above a limit lowered by Reconfigure, or if it
// is itself the packet chosen by the overflow drop. Other packets dropped to
// make room go to the DropFunc.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	q.stats.NoteSize(p.Size)
	if q.p.period > 0 {
		q.maybePerturb(now)
	}
	size := int(p.Size)
	lb := q.p.limitBytes
	if lb > 0 && (size > lb || q.backlog > lb) || q.n > q.p.limit {
		return q.refuse(p)
	}
	x := q.attach(q.bucket(p.Hash))
	if q.slots[x].n >= q.p.depth {
		q.detail.DepthDrops++
		if !q.p.headDrop {
			return q.refuse(p)
		}
		return q.replaceHead(x, p)
	}
	i := q.free
	if i == sfqNone {
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
	q.n++
	q.backlog += size
	if q.n > q.p.limit || (lb > 0 && q.backlog > lb) {
		return q.overflow(i, p.Size)
	}
	q.stats.Enqueued.Add(p.Size)
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
	i := q.free
	q.free = q.nodes[i].next
	q.nodes[i].pkt = p
	q.linkTail(s, i)
	s.backlog += uint64(p.Size)
	q.backlog += size
	q.evicted(old)
	if lb == 0 || q.backlog <= lb {
		q.stats.Enqueued.Add(p.Size)
		return aqm.Enqueued
	}
	return q.overflow(i, p.Size)
}

// overflow drops packets from a longest flow until the queue is within its
// limits; arrival is the node of the packet just added. It refuses the
// arrival if it is chosen.
func (q *Queue[T]) overflow(arrival uint32, size uint32) aqm.Verdict {
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
		q.detail.OverflowDrops++
		v := q.removeNode(x, i)
		if i == arrival {
			q.stats.CountDrop(aqm.DroppedOverlimit, size, false)
			return aqm.DroppedOverlimit
		}
		q.evicted(v)
	}
	q.stats.Enqueued.Add(size)
	return aqm.Enqueued
}

func (q *Queue[T]) refuse(p aqm.Packet[T]) aqm.Verdict {
	q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
	return aqm.DroppedOverlimit
}

// evicted reports a queued packet dropped to make room.
func (q *Queue[T]) evicted(p aqm.Packet[T]) {
	q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, true)
	if q.onDrop != nil {
		q.onDrop(p, aqm.DroppedOverlimit)
	}
}

// Dequeue returns the oldest packet of the flow whose round-robin turn it
// is.
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if q.tail == sfqNone {
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
	if next == sfqNone {
		s.tail = sfqNone
	}
	p = nd.pkt
	size := p.Size
	s.backlog -= uint64(size)
	*nd = sfqNode[T]{next: q.free}
	q.free = i
	d := s.n
	if q.moveDepth(x, d-1) && q.curDepth == d { // x was the only slot of the deepest list
		q.curDepth--
	}
	s.n = d - 1
	q.n--
	q.backlog -= int(size)
	if d == 1 {
		q.release(x)
	} else {
		s.allot -= int64(size)
	}
	q.stats.Dequeued.Add(size)
	return p, true
}

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
		if !noBytes || q.n >= q.p.limit {
			v := q.Enqueue(*pk, now)
			vs[k] = v
			if v.Accepted() {
				accepted++
			}
			continue
		}
		b := sfqBucket(pk.Hash, q.key, q.p.divisor)
		x := q.ht[b]
		if x == sfqNone {
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
		q.stats.NoteSize(size)
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
		q.n++
		q.backlog += int(size)
		q.stats.Enqueued.Add(size)
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
		if q.tail == sfqNone {
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
		if next == sfqNone {
			s.tail = sfqNone
		}
		buf[k] = nd.pkt
		size := nd.pkt.Size
		s.backlog -= uint64(size)
		*nd = sfqNode[T]{next: q.free}
		q.free = i
		d := s.n
		if q.moveDepth(x, d-1) && q.curDepth == d {
			q.curDepth--
		}
		s.n = d - 1
		q.n--
		q.backlog -= int(size)
		if d == 1 {
			q.release(x)
		} else {
			s.allot -= int64(size)
		}
		q.stats.Dequeued.Add(size)
	}
	return len(buf)
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
	best, bestPrev := sfqNone, sfqNone
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

// maybePerturb replaces the hash key once now reaches the next perturbation
// instant. The first call only arms the period. A next instant further
// ahead of now than one period (left by a reading far in the future, or
// by time running backwards) is pulled back to now plus one period, so a
// clock glitch delays the next re-key by at most one period.
func (q *Queue[T]) maybePerturb(now aqm.Time) {
	if !q.armed {
		q.armed = true
		q.nextPerturb = sfqAddSat(now, q.p.period)
		return
	}
	if now < q.nextPerturb {
		// nextPerturb ≥ MinInt64 + period (it was set to some t + period
		// with saturation), so the subtraction cannot wrap.
		if now < q.nextPerturb-aqm.Time(q.p.period) {
			q.nextPerturb = sfqAddSat(now, q.p.period)
		}
		return
	}
	q.nextPerturb = sfqAddSat(now, q.p.period)
	q.key = q.rnd.Uint64()
	q.detail.Perturbations++
	if q.tail != sfqNone {
		q.rehash()
	}
}

// sfqAddSat returns t+d, saturating at the largest Time instead of
// wrapping.
func sfqAddSat(t aqm.Time, d time.Duration) aqm.Time {
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
	if q.tail == sfqNone {
		return sfqNone
	}
	first, last := sfqNone, sfqNone
	end := q.tail
	x := q.slots[end].next
	for {
		s := &q.slots[x]
		if first == sfqNone {
			first = s.head
		} else {
			q.nodes[last].next = s.head
		}
		last = s.tail
		next := s.next
		q.ht[s.bucket] = sfqNone
		q.unlink(x)
		*s = sfqSlot{head: sfqNone, tail: sfqNone, next: sfqNone, bucket: sfqNone}
		q.link(x)
		if x == end {
			break
		}
		x = next
	}
	q.nodes[last].next = sfqNone
	q.tail, q.curDepth, q.active = sfqNone, 0, 0
	return first
}

// rehash re-classifies every queued packet under the current key, in
// service order, without dropping any.
func (q *Queue[T]) rehash() {
	for i := q.chain(); i != sfqNone; {
		next := q.nodes[i].next
		q.appendNode(q.attach(q.bucket(q.nodes[i].pkt.Hash)), i)
		i = next
	}
}

// Len returns the number of queued packets.
func (q *Queue[T]) Len() int { return q.n }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.n, q.backlog
	return s
}

// Detail is the SFQ-specific state returned by [Queue.Detail].
type Detail struct {
	// ActiveFlows is the number of flows (buckets) holding packets.
	ActiveFlows int `metric:"active_flows,gauge"`
	// LongestFlowPackets is the packet count of a longest flow.
	LongestFlowPackets int `metric:"longest_flow_packets,gauge"`
	// Perturbations counts hash-key replacements.
	Perturbations uint64 `metric:"perturbations,counter"`
	// NextPerturb is when the key is next replaced (checked on Enqueue);
	// zero if perturbation is off or not yet armed by a first Enqueue.
	NextPerturb aqm.Time `metric:"next_perturbation_time_seconds,gauge"`
	// DepthDrops counts arrivals to a flow at DepthPackets: refused, or with
	// HeadDrop, replacing the flow's oldest packet.
	DepthDrops uint64 `metric:"dropped_depth_packets,counter"`
	// OverflowDrops counts packets dropped from a longest flow because the
	// queue was over LimitPackets or LimitBytes, arrivals included.
	OverflowDrops uint64 `metric:"dropped_overflow_packets,counter"`
	// MemoryBytes is the memory the queue preallocated for its
	// configuration: (LimitPackets+1)·(size of a Packet[T] + 8) for the
	// packet slab plus 8·(LimitPackets+2) for the depth lists' heads,
	// 4·Divisor for the bucket table, and 48 bytes per flow slot,
	// min(Divisor, LimitPackets+1) of them. It does not change with the
	// traffic.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// Metrics lists d's values for exporters: active_flows,
// longest_flow_packets and memory_bytes (gauges), perturbations,
// dropped_depth_packets and dropped_overflow_packets (counters), and
// next_perturbation_time_seconds (a gauge: the instant of the next re-key,
// 0 if none).
func (d Detail) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }

// Detail returns a snapshot of the SFQ-specific state.
func (q *Queue[T]) Detail() Detail {
	d := q.detail
	d.ActiveFlows = q.active
	d.LongestFlowPackets = int(q.curDepth)
	d.MemoryBytes = q.memBytes
	d.NextPerturb = 0
	if q.p.period > 0 && q.armed {
		d.NextPerturb = q.nextPerturb
	}
	return d
}

// FlowDetail is the state of one flow, the analogue of Linux's per-class
// SFQ statistics.
type FlowDetail struct {
	// Packets and Bytes are the flow's backlog.
	Packets int
	Bytes   int
	// AllotBytes is the flow's round-robin credit: it may send while this
	// is positive.
	AllotBytes int64
}

// Flow returns the state of the flow (bucket) that packets with the given
// hash are classified into under the current key, and false if that bucket
// holds no packets.
func (q *Queue[T]) Flow(hash uint32) (FlowDetail, bool) {
	x := q.ht[q.bucket(hash)]
	if x == sfqNone {
		return FlowDetail{}, false
	}
	s := &q.slots[x]
	return FlowDetail{Packets: int(s.n), Bytes: int(s.backlog), AllotBytes: s.allot}, true
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
	p := makeSFQParams(cfg)
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
	for i := old.chain(); i != sfqNone; i = old.nodes[i].next {
		j := q.free
		q.free = q.nodes[j].next
		q.nodes[j].pkt = old.nodes[i].pkt
		q.appendNode(q.attach(q.bucket(q.nodes[j].pkt.Hash)), j)
	}
	return nil
}
