package cake

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Info is what CAKE needs to know about a packet beyond [aqm.Meta]: the
// host hashes for host isolation, the DSCP for the tin, and a summary of
// the TCP header for the ACK filter. It travels beside the packet
// ([Queue.EnqueueInfo]) so that [aqm.Packet] stays small. [Classifier]
// fills it from raw IP packets; the zero Info means host hashes 0, DSCP 0
// (best effort) and not TCP.
type Info struct {
	// SrcHost and DstHost are hashes of the source and destination
	// addresses (any 32-bit hash: the queue mixes them with its key).
	SrcHost uint32
	DstHost uint32
	// DSCP is the packet's DiffServ code point (the low 6 bits are used).
	DSCP uint8
	// ack summarises the TCP header for the ACK filter, filled in by
	// [Classifier.Classify]; the zero value
	// means "not TCP", which the filter never touches.
	ack ackInfo
}

const nilIdx = ^uint32(0)

// Flow states (Linux's flow sets).
const (
	stNone       uint8 = iota // idle, slot free
	stSparse                  // on the new list
	stSparseWait              // counted sparse, already on the old list
	stBulk                    // on the old list with packets
	stDecaying                // empty, COBALT not yet at rest
)

type node[T any] struct {
	pkt  aqm.Packet[T]
	next uint32
}

// flow is one flow queue: its packets (a list in the node slab), DRR
// credit, list link, host indices and COBALT state. 64 bytes.
type flow struct {
	cv         cobalt.Controller
	head, tail uint32
	prev       uint32 // previous flow on the same list
	backlog    uint32 // bytes
	deficit    int32
	next       uint32 // next flow on the same list
	src, dst   uint16 // host table indices
	state      uint8
}

type tinCounters struct {
	arrived                                       aqm.Count // counted at enqueue, as Linux
	drops, marks, ackDrops                        uint64
	wayDirect, wayIndirect, wayMiss, wayCollision uint64
	maxAdj                                        uint32
	peakDelay, avgDelay, baseDelay                uint64 // ns, EWMAs
}

type tin struct {
	newL, oldL, decL       list
	pkts, backlog          int
	sparse, bulk, decaying int
	deficit                int32
	weight                 int32
	quantum                uint32 // flow quantum, bytes
	next                   aqm.Time
	span                   int64 // how far ahead next may legitimately be
	rate                   shRate
	rateBytes              uint64
	cp                     cobalt.Params
	target, interval, mtu  time.Duration
	hosts                  []host
	s                      tinCounters
}

// Queue is a CAKE queue: DiffServ tins, each with 1024 set-associative
// flow queues served by DRR++ with sparse-flow priority and COBALT per
// flow, host fairness, an overload pruner on the longest queue, an
// optional deficit-mode shaper with overhead compensation, and an
// optional ACK filter. It implements [aqm.BatchQueue]; while the shaper
// holds packets back, Dequeue returns false with packets queued (see
// [Queue.NextDeparture]). It is not safe for concurrent use.
type Queue[T any] struct {
	nodes   []node[T]
	free    uint32
	acks    []ackInfo // per node, only with the ACK filter on
	flows   []flow
	tags    []uint32
	tins    []tin
	heap    []uint16 // max-heap of flows by backlog, valid while overflowTTL > 0
	heapPos []uint16
	overTTL int

	key0, key1 uint64
	src        rng.Source // the dithered quantum
	cfg        Config
	memAuto    bool
	dscpTin    [64]uint8
	ntins      int
	mode       uint8
	curTin     int
	len        int
	backlog    int
	limit      int
	memLimit   int
	shaped     bool
	ingress    bool
	ackMode    ACKFilter
	overhead   int32
	mpu        int32
	framing    Framing
	rate       shRate
	next       aqm.Time
	failsafe   aqm.Time
	span       int64
	maxAdj     uint32

	g guardState // the flood guard (guard.go)

	onDrop aqm.DropFunc[T]
	stats  aqm.Stats
	d      counters
	ipc    *Classifier // ClassifyIP's, keyed at New and never changed (see ip.go)
}

type counters struct {
	memPeak                  int
	minLen, maxLen           uint32
	minAdj, maxAdj           uint32
	overlimitDrops, ackDrops uint64
}

var (
	_ aqm.BatchQueue[int] = (*Queue[int])(nil)
	_ aqm.Paced           = (*Queue[int])(nil) // with a rate, Dequeue holds packets back until NextDeparture
)

// New returns an empty CAKE queue. onDrop receives the queued packets
// that COBALT drops at dequeue ([aqm.DroppedEarly]), those the ACK filter
// removes ([aqm.DroppedEarly]) and those the overload pruner removes
// ([aqm.DroppedOverlimit]); it may be nil. The error wraps
// [aqm.ErrInvalidConfig] for each bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &Queue[T]{onDrop: onDrop}
	q.memAuto = cfg.MemoryLimitBytes == 0
	cfg = cfg.withDefaults()
	cfg.Seed = rng.SeedOrRandom(cfg.Seed)
	q.ipc = NewClassifier(cfg.Seed, false)
	q.build(cfg)
	q.apply(cfg)
	return q, nil
}

// build allocates everything for cfg's structure: tins, flows, hosts,
// node slab, ACK summaries; the queue is empty afterwards.
func (q *Queue[T]) build(cfg Config) {
	l := layoutFor(cfg.TinMode)
	q.ntins = l.n
	q.mode = cfg.FlowMode.bits()
	nf := l.n*queuesPerTin + l.n // and one shared queue per tin for the flood guard
	q.flows = make([]flow, nf)
	for i := range q.flows {
		q.flows[i].head, q.flows[i].tail = nilIdx, nilIdx
	}
	q.g.reset(l.n, !cfg.DisableFloodGuard)
	for i := l.n * queuesPerTin; i < nf; i++ {
		q.flows[i].src, q.flows[i].dst = noHost, noHost
	}
	q.tags = make([]uint32, nf)
	q.heap = make([]uint16, nf)
	q.heapPos = make([]uint16, nf)
	q.overTTL = 0
	q.tins = make([]tin, l.n)
	dual := q.mode&bitFlows != 0 && q.mode&(bitSrc|bitDst) != 0
	for i := range q.tins {
		b := &q.tins[i]
		b.newL, b.oldL, b.decL = emptyList, emptyList, emptyList
		b.weight = l.weight[i]
		if dual {
			b.hosts = make([]host, hostsPerTin)
		}
	}
	for i := range q.flows {
		q.flows[i].cv.Init(&q.tins[q.tinOf(uint32(i))].cp, flowSeed(cfg.Seed, i))
	}
	q.dscpTin = l.dscp
	q.nodes = make([]node[T], cfg.LimitPackets+1) // the arrival is added before pruning
	for i := range q.nodes {
		q.nodes[i].next = uint32(i + 1)
	}
	q.nodes[len(q.nodes)-1].next = nilIdx
	q.free = 0
	q.acks = nil
	if cfg.ACKFilter != ACKFilterOff {
		q.acks = make([]ackInfo, len(q.nodes))
	}
	q.src.Seed(cfg.Seed)
	k := rng.New(cfg.Seed ^ 0x6a09e667f3bcc909)
	q.key0, q.key1 = k.Uint64(), k.Uint64()|1
	q.len, q.backlog, q.curTin = 0, 0, 0
	q.next, q.failsafe = 0, 0
}

// apply sets every parameter that can change on a running queue.
func (q *Queue[T]) apply(cfg Config) {
	q.cfg = cfg
	q.limit, q.memLimit = cfg.LimitPackets, cfg.MemoryLimitBytes
	q.shaped = cfg.Rate != 0
	q.ingress = cfg.Ingress
	q.ackMode = cfg.ACKFilter
	q.overhead, q.mpu, q.framing = int32(cfg.Overhead), int32(cfg.MPU), cfg.Framing
	rb := uint64(cfg.Rate) / 8
	q.rate = makeRate(rb)
	for i := range q.tins {
		b := &q.tins[i]
		tr := tinRate(cfg.TinMode, i, rb)
		b.rateBytes = tr
		b.rate = makeRate(tr)
		b.quantum = mtuBytes
		var mtuTime time.Duration
		if tr != 0 {
			b.quantum = uint32(min(max(tr>>12, 300), mtuBytes))
			mtuTime = time.Duration(b.rate.dur(mtuBytes))
		}
		b.mtu = mtuTime
		b.target = max(mtuTime*3/2, cfg.Target)
		b.interval = max(cfg.Interval+b.target-cfg.Target, 2*b.target)
		b.target = min(b.target, maxInterval-1)
		b.interval = min(b.interval, maxInterval)
		b.cp = cobalt.Control{
			Target: b.target, Interval: b.interval, MTUTime: mtuTime,
			DisableBlueThreshold: true,
		}.Params()
	}
	q.updateSpans()
}

// flowSeed is the seed of flow i's BLUE stream in a queue seeded with
// seed: distinct per flow, and apart from the queue's own stream and key.
func flowSeed(seed uint64, i int) uint64 { return seed ^ uint64(i+1)*0xbb67ae8584caa73b }

// Config returns the configuration in effect, defaults filled in and the
// seed in use (keep it secret if it was drawn).
func (q *Queue[T]) Config() Config { return q.cfg }

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets. Rate, Target, Interval, the overhead fields,
// Ingress, MemoryLimitBytes and turning the ACK filter off take effect at
// once, on a running queue; flows keep their state. TinMode, FlowMode,
// LimitPackets, turning the ACK filter on and a new non-zero Seed change
// the queue's structure: they are accepted only while the queue is empty
// (the error names the field otherwise), and then rebuild it (it
// allocates). A zero Seed keeps the current key.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	memAuto := cfg.MemoryLimitBytes == 0
	cfg = cfg.withDefaults()
	if cfg.Seed == 0 {
		cfg.Seed = q.cfg.Seed
	}
	old := q.cfg
	structural := cfg.TinMode != old.TinMode || cfg.FlowMode != old.FlowMode ||
		cfg.LimitPackets != old.LimitPackets || cfg.Seed != old.Seed ||
		(old.ACKFilter == ACKFilterOff && cfg.ACKFilter != ACKFilterOff) ||
		cfg.DisableFloodGuard != old.DisableFloodGuard
	if structural {
		if q.len != 0 {
			return &aqm.ConfigError{Pkg: "cake", Field: structuralField(old, cfg), Value: "change",
				Rule: "can only change while the queue is empty"}
		}
		q.build(cfg)
	}
	q.memAuto = memAuto
	q.apply(cfg)
	return nil
}

func structuralField(a, b Config) string {
	switch {
	case a.TinMode != b.TinMode:
		return "TinMode"
	case a.FlowMode != b.FlowMode:
		return "FlowMode"
	case a.LimitPackets != b.LimitPackets:
		return "LimitPackets"
	case a.Seed != b.Seed:
		return "Seed"
	case a.DisableFloodGuard != b.DisableFloodGuard:
		return "DisableFloodGuard"
	}
	return "ACKFilter"
}

// Enqueue offers p without an [Info]: p.Hash is the flow hash, the flow
// takes no part in host fairness (its quantum is the tin's), the tin is
// the best effort one, and the ACK filter does not look at it. In the
// host-only modes (srchost, dsthost, hosts) all such packets share one
// queue per tin. Its burst twin is EnqueueBatch, in batch.go.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	return q.enqueue(p, &Info{}, false, now)
}

// EnqueueInfo offers p at now with the per-packet facts in info: its tin
// comes from info.DSCP, its flow queue from p.Hash and the host hashes as
// the FlowMode says, and with the ACK filter on a queued ACK made
// redundant by p may be dropped. If the packet or byte limit is then
// exceeded, the head packets of the longest flow queue (over all tins)
// are dropped until both hold ([aqm.DroppedOverlimit] to the DropFunc);
// if that removes p itself, p is refused. A packet larger than the byte
// limit is refused.
func (q *Queue[T]) EnqueueInfo(p aqm.Packet[T], info Info, now aqm.Time) aqm.Verdict {
	return q.enqueue(p, &info, true, now)
}

// enqueue is Enqueue (hosts false: the flow gets no host) and EnqueueInfo.
func (q *Queue[T]) enqueue(p aqm.Packet[T], info *Info, hosts bool, now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	tally.NoteSize(&q.stats, p.Size)
	if int64(p.Size) > int64(q.memLimit) || int(p.Segments) > q.limit || q.len > q.limit || q.backlog > q.memLimit {
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	t := 0
	if q.ntins > 1 {
		t = int(q.dscpTin[info.DSCP&63])
	}
	b := &q.tins[t]
	if q.shaped {
		q.reanchor(now)
		if b.pkts == 0 && b.next < now {
			b.next = now
		}
		if q.len == 0 && q.next < now {
			q.next, q.failsafe = now, now
		}
	}
	return q.enqueueFlow(p, info, b, q.classify(t, p.Hash, info, hosts), now)
}

// enqueueFlow is the rest of enqueue once p (stamped and counted) has its
// tin b and flow queue fi.
func (q *Queue[T]) enqueueFlow(p aqm.Packet[T], info *Info, b *tin, fi uint32, now aqm.Time) aqm.Verdict {
	f := &q.flows[fi]
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
	f.backlog += p.Size
	b.pkts += p.SegmentCount()
	b.backlog += int(p.Size)
	q.len += p.SegmentCount()
	q.backlog += int(p.Size)
	if adj := q.adjLenOf(p.Meta); !q.lenSeen(b, p.Size, adj) {
		q.noteNewLen(b, p.Size, adj)
	}
	b.s.arrived.AddMeta(p.Meta)
	if q.acks != nil {
		q.acks[ni] = info.ack
		if q.ackMode != ACKFilterOff && info.ack.TCP && fi < q.g.base { // the shared queue stays a FIFO
			q.ackFilter(b, fi, ni, now)
		}
	}
	if q.overTTL > 0 { // the ACK filter may have shrunk the flow instead
		q.siftUp(int(q.heapPos[fi]))
		q.siftDown(int(q.heapPos[fi]))
	}
	switch f.state {
	case stNone, stDecaying:
		if fi >= q.g.base {
			q.activateShared(b, f, fi)
			break
		}
		if f.state == stNone {
			q.pushTail(&b.newL, fi)
		} else {
			b.decaying--
			q.unlink(&b.decL, fi)
			q.pushTail(&b.newL, fi)
		}
		f.state = stSparse
		b.sparse++
		f.deficit = q.flowQuantum(b, f)
	case stSparseWait:
		f.state = stBulk
		b.sparse--
		b.bulk++
		q.bulkInc(b, f)
	}
	if fi >= q.g.base {
		q.trimShared(b, fi, now)
	}
	if q.backlog > q.d.memPeak {
		q.d.memPeak = q.backlog
	}
	for q.len > q.limit || q.backlog > q.memLimit {
		if q.prune(now, ni) {
			b.s.drops += uint64(p.SegmentCount())
			tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
			return aqm.DroppedOverlimit
		}
	}
	q.stats.Enqueued.AddMeta(p.Meta)
	return aqm.Enqueued
}

// lenSeen reports whether a packet of size bytes, adj adjusted, changes
// none of the size extremes noted so far (and so needs no noteNewLen).
func (q *Queue[T]) lenSeen(b *tin, size, adj uint32) bool {
	d := &q.d
	return d.maxLen != 0 && size-d.minLen <= d.maxLen-d.minLen &&
		d.maxAdj != 0 && adj-d.minAdj <= d.maxAdj-d.minAdj &&
		adj <= b.s.maxAdj && adj <= q.maxAdj
}

func (q *Queue[T]) noteNewLen(b *tin, size, adj uint32) {
	if q.d.maxLen == 0 && q.d.minLen == 0 || size < q.d.minLen {
		q.d.minLen = size
	}
	q.d.maxLen = max(q.d.maxLen, size)
	if q.d.maxAdj == 0 && q.d.minAdj == 0 || adj < q.d.minAdj {
		q.d.minAdj = adj
	}
	q.d.maxAdj = max(q.d.maxAdj, adj)
	b.s.maxAdj = max(b.s.maxAdj, adj)
	if adj > q.maxAdj {
		q.maxAdj = adj
		q.updateSpans()
	}
}

// Dequeue returns the next packet at now, or false if the queue is empty
// or the shaper holds its packets back until [Queue.NextDeparture]. The
// tin is chosen by the shaper's clocks (by weight when unshaped), the
// flow by DRR++ (sparse flows first), and the flow's COBALT may drop
// packets (to the DropFunc, [aqm.DroppedEarly]) or mark one CE; the last
// packet of a flow queue is always sent. Its burst twins are DequeueBatch
// and dequeueTo, in batch.go.
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if q.len == 0 {
		return p, false
	}
	if q.shaped {
		q.reanchor(now)
		if q.next > now && q.failsafe > now {
			return p, false
		}
	}
	return q.dequeue(now, true)
}

// Len returns the number of queued packets.
func (q *Queue[T]) Len() int { return q.len }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.len, q.backlog
	return s
}
