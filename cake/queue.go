package cake

import (
	"math"
	"math/bits"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/rng"
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
	// ACK summarises the TCP header for the ACK filter; the zero value
	// means "not TCP", which the filter never touches.
	ACK ACKInfo
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

// maxCharge caps what one packet costs a flow's or a tin's DRR deficit,
// 64 KiB (above any GSO packet), so that a packet with an absurd Size
// cannot make the schedulers rotate millions of times.
const maxCharge = 1 << 16

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

type list struct{ head, tail uint32 }

var emptyList = list{nilIdx, nilIdx}

type host struct {
	srcTag, dstTag   uint32
	srcBulk, dstBulk uint16
}

// shRate is a rate as nanoseconds per byte in fixed point: dur(n) =
// n·ns >> shift. ns == 0 means unlimited.
type shRate struct {
	ns    uint64
	shift uint8
}

// makeRate converts bytes per second to ns per byte with 34 fractional
// bits, fewer if the value would not fit 34 bits (slow rates), so that
// n·ns never needs more than 64+34 bits. Rates below 64 B/s count as 64.
func makeRate(bps uint64) shRate {
	if bps == 0 {
		return shRate{}
	}
	ns := (uint64(time.Second) << 34) / max(bps, minRateBytes) // 1e9·2^34 < 2^64
	shift := uint8(34)
	for ns >= 1<<34 {
		ns >>= 1
		shift--
	}
	return shRate{ns, shift}
}

// dur returns how long n bytes take, saturating.
func (r shRate) dur(n uint32) int64 {
	hi, lo := bits.Mul64(uint64(n), r.ns)
	if hi>>r.shift != 0 {
		return math.MaxInt64
	}
	v := lo >> r.shift
	if r.shift > 0 {
		v |= hi << (64 - r.shift)
	}
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
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
	acks    []ACKInfo // per node, only with the ACK filter on
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
		q.acks = make([]ACKInfo, len(q.nodes))
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
		b.quantum = MTU
		var mtuTime time.Duration
		if tr != 0 {
			b.quantum = uint32(min(max(tr>>12, 300), MTU))
			mtuTime = time.Duration(b.rate.dur(MTU))
		}
		b.mtu = mtuTime
		b.target = max(mtuTime*3/2, cfg.Target)
		b.interval = max(cfg.Interval+b.target-cfg.Target, 2*b.target)
		b.target = min(b.target, MaxInterval-1)
		b.interval = min(b.interval, MaxInterval)
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

// updateSpans recomputes how far ahead of now the shaper clocks may be
// before the time policy pulls them back: one second plus the time of the
// largest packet charged so far.
func (q *Queue[T]) updateSpans() {
	q.span = addSpan(int64(time.Second), q.rate.dur(q.maxAdj))
	for i := range q.tins {
		q.tins[i].span = addSpan(int64(time.Second), q.tins[i].rate.dur(q.maxAdj))
	}
}

func addSpan(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

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

// SetRate changes the shaper's rate at now on a running queue, as tc's
// "change bandwidth": every tin's threshold, COBALT target and interval,
// flow quantum and (unless set explicitly) the byte limit follow. The
// clocks already scheduled are kept; the new rate applies from the next
// packet. Zero makes the queue unshaped.
func (q *Queue[T]) SetRate(rate aqm.Rate) {
	c := q.cfg
	c.Rate = rate
	if q.memAuto {
		c.MemoryLimitBytes = 0
		c = c.withDefaults()
	}
	q.apply(c)
}

// mix returns h keyed with the queue's secret: the SplitMix64 finaliser
// over h plus the first key word, then an odd keyed multiply.
func (q *Queue[T]) mix(h uint32) uint32 {
	z := uint64(h) + q.key0
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * q.key1
	return uint32((z ^ z>>31) >> 32)
}

// adjLen returns the length charged for a packet of size bytes: plus the
// overhead, at least the MPU, then cell framing (ATM: whole 53-byte cells
// of 48 bytes; PTM: 65 bytes per started 64).
func (q *Queue[T]) adjLen(size uint32) uint32 {
	n := int64(size) + int64(q.overhead)
	n = max(n, int64(q.mpu), 0)
	switch q.framing {
	case ATM:
		n = (n + 47) / 48 * 53
	case PTM:
		n += (n + 63) / 64
	}
	return uint32(min(n, math.MaxUint32))
}

// Enqueue offers p without an [Info]: p.Hash is the flow hash, the flow
// takes no part in host fairness (its quantum is the tin's), the tin is
// the best effort one, and the ACK filter does not look at it. In the
// host-only modes (srchost, dsthost, hosts) all such packets share one
// queue per tin.
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
	q.stats.NoteSize(p.Size)
	if int64(p.Size) > int64(q.memLimit) || q.len > q.limit || q.backlog > q.memLimit {
		q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
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
	b.pkts++
	b.backlog += int(p.Size)
	q.len++
	q.backlog += int(p.Size)
	if adj := q.adjLen(p.Size); !q.lenSeen(b, p.Size, adj) {
		q.noteNewLen(b, p.Size, adj)
	}
	b.s.arrived.Add(p.Size)
	if q.acks != nil {
		q.acks[ni] = info.ACK
		if q.ackMode != ACKFilterOff && info.ACK.TCP && fi < q.g.base { // the shared queue stays a FIFO
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
			b.s.drops++
			q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
			return aqm.DroppedOverlimit
		}
	}
	q.stats.Enqueued.Add(p.Size)
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

// classify returns the flow queue (global index) for a packet of tin t.
func (q *Queue[T]) classify(t int, hash uint32, info *Info, hosts bool) uint32 {
	base := uint32(t) * queuesPerTin
	m := q.mode
	if m == 0 {
		return base
	}
	var fh uint32
	if m&bitFlows != 0 {
		fh = hash
	} else {
		if m&bitSrc != 0 {
			fh ^= info.SrcHost
		}
		if m&bitDst != 0 {
			fh ^= info.DstHost
		}
	}
	return q.lookup(t, base, fh, info, hosts)
}

// lookup is the 8-way set-associative search of tin t's flow queues for
// flow hash fh (Linux's scheme): the home way if it holds this flow,
// else a way of the set tagged with it, else a free way, else the home
// way is taken over (a collision: the two flows share it).
func (q *Queue[T]) lookup(t int, base, fh uint32, info *Info, hosts bool) uint32 {
	b := &q.tins[t]
	h := q.mix(fh)
	home := uint32(uint64(h) * queuesPerTin >> 32)
	set := home &^ (ways - 1)
	inner := home & (ways - 1)
	if q.tags[base+home] == h && q.flows[base+home].state != stNone {
		b.s.wayDirect++
		return base + home
	}
	alloc := false
	k := inner
	found := false
	for i := range uint32(ways) {
		k = (inner + i) & (ways - 1)
		if q.tags[base+set+k] == h {
			if i > 0 {
				b.s.wayIndirect++
			}
			alloc = q.flows[base+set+k].state == stNone
			found = true
			break
		}
	}
	if !found {
		for i := range uint32(ways) {
			k = (inner + i) & (ways - 1)
			if q.flows[base+set+k].state == stNone {
				alloc, found = true, true
				break
			}
		}
		if q.g.on {
			// A new flow: it claims a free way only if the guard admits
			// it, and never takes a busy one over.
			if s := (base + set) / ways; !q.admitNew(t, s, h, found) {
				return q.divert(t, s, h)
			}
		}
		if found {
			b.s.wayMiss++
		}
	}
	if !found {
		b.s.wayCollision++
		k = inner
		alloc = true
		if f := &q.flows[base+set+k]; f.state == stBulk {
			q.bulkDec(b, f)
		}
	}
	fi := base + set + k
	q.tags[fi] = h
	if alloc && b.hosts != nil {
		if f := &q.flows[fi]; hosts {
			q.attachHosts(b, f, info)
		} else {
			f.src, f.dst = noHost, noHost
		}
	}
	return fi
}

// attachHosts finds or claims the host table entries of f's source and
// destination (8-way search by tag, else an entry without bulk flows,
// else the home entry is shared).
func (q *Queue[T]) attachHosts(b *tin, f *flow, info *Info) {
	f.src, f.dst = 0, 0
	if q.mode&bitSrc != 0 {
		h := q.mix(info.SrcHost ^ 0x5bd1e995)
		f.src = uint16(hostSlot(b.hosts, h, true))
		if f.state == stBulk {
			b.hosts[f.src].srcBulk = min(b.hosts[f.src].srcBulk+1, queuesPerTin)
		}
	}
	if q.mode&bitDst != 0 {
		h := q.mix(info.DstHost ^ 0x5bd1e995)
		f.dst = uint16(hostSlot(b.hosts, h, false))
		if f.state == stBulk {
			b.hosts[f.dst].dstBulk = min(b.hosts[f.dst].dstBulk+1, queuesPerTin)
		}
	}
}

func hostSlot(hs []host, h uint32, src bool) uint32 {
	home := uint32(uint64(h) * hostsPerTin >> 32)
	set := home &^ (ways - 1)
	inner := home & (ways - 1)
	for i := range uint32(ways) {
		k := set + (inner+i)&(ways-1)
		if src && hs[k].srcTag == h || !src && hs[k].dstTag == h {
			return k
		}
	}
	k := set + inner
	for i := range uint32(ways) {
		j := set + (inner+i)&(ways-1)
		if src && hs[j].srcBulk == 0 || !src && hs[j].dstBulk == 0 {
			k = j
			break
		}
	}
	if src {
		hs[k].srcTag = h
	} else {
		hs[k].dstTag = h
	}
	return k
}

// noHost marks a flow queued by plain Enqueue: no host table entry, no
// host fairness.
const noHost = 0xffff

// bulkInc and bulkDec keep the per-host bulk flow counts, clamped to
// [0, 1024].
func (q *Queue[T]) bulkInc(b *tin, f *flow) {
	if b.hosts == nil || f.src == noHost {
		return
	}
	if q.mode&bitSrc != 0 {
		b.hosts[f.src].srcBulk = min(b.hosts[f.src].srcBulk+1, queuesPerTin)
	}
	if q.mode&bitDst != 0 {
		b.hosts[f.dst].dstBulk = min(b.hosts[f.dst].dstBulk+1, queuesPerTin)
	}
}

func (q *Queue[T]) bulkDec(b *tin, f *flow) {
	if b.hosts == nil || f.src == noHost {
		return
	}
	if q.mode&bitSrc != 0 && b.hosts[f.src].srcBulk > 0 {
		b.hosts[f.src].srcBulk--
	}
	if q.mode&bitDst != 0 && b.hosts[f.dst].dstBulk > 0 {
		b.hosts[f.dst].dstBulk--
	}
}

// flowQuantum is f's DRR quantum: the tin's flow quantum divided by the
// bulk flows of its busier host (dual and triple modes), dithered with 16
// random bits so that the mean is exact: (quantum·⌊65535/load⌋ + r) >> 16.
func (q *Queue[T]) flowQuantum(b *tin, f *flow) int32 {
	load := uint32(1)
	if b.hosts != nil && f.src != noHost {
		if q.mode&bitSrc != 0 {
			load = max(load, uint32(b.hosts[f.src].srcBulk))
		}
		if q.mode&bitDst != 0 {
			load = max(load, uint32(b.hosts[f.dst].dstBulk))
		}
	}
	r := uint32(q.src.Uint64() >> 48)
	share := uint32(65535)
	if load > 1 { // a division costs tens of cycles; most flows have load 1
		share = 65535 / load
	}
	return int32((b.quantum*share + r) >> 16)
}

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
	b.pkts--
	b.backlog -= int(p.Size)
	q.len--
	q.backlog -= int(p.Size)
	if q.overTTL > 0 {
		q.siftDown(int(q.heapPos[fi]))
	}
	if fi >= q.g.base {
		q.g.tins[fi-q.g.base].leftSeq++
	}
	return p, ni
}

// charge advances the shaper clocks for adj bytes sent (or dropped, in
// ingress mode) from tin b at now. The tin clock keeps its lag, so a tin
// behind may catch up; the failsafe clock runs at 2/3 of the rate and
// ignores drops.
func (q *Queue[T]) charge(b *tin, adj uint32, now aqm.Time, drop bool) {
	if !q.shaped {
		return
	}
	td := b.rate.dur(adj)
	if b.next < now {
		b.next = addSat(b.next, td)
	} else if e := addSat(now, td); b.next < e {
		b.next = e
	}
	gd := q.rate.dur(adj)
	q.next = addSat(q.next, gd)
	if !drop {
		q.failsafe = addSat(q.failsafe, addSpan(gd, gd>>1))
	}
}

func addSat(t aqm.Time, d int64) aqm.Time {
	if s := t + aqm.Time(d); s >= t {
		return s
	}
	return math.MaxInt64
}

// reanchor applies the time policy to the shaper clocks: the link clock
// further ahead of now than a second plus the largest packet's time is
// brought back to now. The failsafe clock legitimately runs ahead of the
// link clock under a backlog (by half the busy time) but then never
// decides the gate; it is kept within the same span of the link clock.
func (q *Queue[T]) reanchor(now aqm.Time) {
	q.next, q.failsafe = q.clocks(now)
}

func (q *Queue[T]) clocks(now aqm.Time) (next, failsafe aqm.Time) {
	next, failsafe = q.next, q.failsafe
	if next > addSat(now, q.span) {
		next = now
	}
	if lim := addSat(max(next, now), q.span); failsafe > lim {
		failsafe = lim
	}
	return next, failsafe
}

// pickTin returns the tin to serve. Shaped: the highest tin whose clock
// is due, else the one whose clock is earliest (ties to the higher).
// Unshaped: weighted deficit round robin over the tins with flows.
func (q *Queue[T]) pickTin(now aqm.Time) int {
	if q.ntins == 1 {
		return 0
	}
	if q.shaped {
		best, bestT := 0, int64(math.MaxInt64)
		for i := range q.tins {
			b := &q.tins[i]
			if b.sparse+b.bulk == 0 {
				continue
			}
			if b.next > addSat(now, b.span) {
				b.next = now
			}
			d := max(int64(b.next)-int64(now), 0)
			if b.next < now {
				d = 0
			}
			if d <= bestT {
				best, bestT = i, d
			}
		}
		return best
	}
	cur, tins := q.curTin, q.tins
	for {
		b := &tins[cur]
		if b.deficit >= 0 && b.sparse+b.bulk > 0 {
			q.curTin = cur
			return cur
		}
		if b.deficit <= 0 {
			b.deficit += b.weight
		}
		if cur++; cur == len(tins) {
			cur = 0
		}
	}
}

// Dequeue returns the next packet at now, or false if the queue is empty
// or the shaper holds its packets back until [Queue.NextDeparture]. The
// tin is chosen by the shaper's clocks (by weight when unshaped), the
// flow by DRR++ (sparse flows first), and the flow's COBALT may drop
// packets (to the DropFunc, [aqm.DroppedEarly]) or mark one CE; the last
// packet of a flow queue is always sent.
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
						b.s.marks++
						q.stats.Marked.Add(p.Size)
					}
					q.sent(b, f, p, now)
					return p, true
				}
				b.s.drops++
				q.stats.CountDrop(aqm.DroppedEarly, p.Size, true)
				if q.onDrop != nil {
					q.onDrop(p, aqm.DroppedEarly)
				}
				if q.ingress {
					adj := q.adjLen(p.Size)
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
	adj := q.adjLen(p.Size)
	if q.shaped {
		q.charge(b, adj, now, false)
	}
	c := int32(min(adj, maxCharge))
	f.deficit -= c
	b.deficit -= c
	if q.overTTL > 0 {
		q.overTTL--
	}
	q.stats.Dequeued.Add(p.Size)
}

// ewma moves avg towards v by 1/2^shift.
func ewma(avg, v uint64, shift uint) uint64 { return avg - avg>>shift + v>>shift }

// stillDecaying tells f's COBALT that its queue was found empty at now
// and reports whether it is not yet at rest.
func (q *Queue[T]) stillDecaying(b *tin, f *flow, now aqm.Time) bool {
	f.cv.Empty(&b.cp, now)
	st := f.cv.State()
	return f.cv.Active() || st.Count > 0 || now < st.Next
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
		q.charge(b, q.adjLen(p.Size), now, true)
	}
	if ni == arrival {
		return true
	}
	b.s.drops++
	q.d.overlimitDrops++
	q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, true)
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

// NextDeparture returns when Dequeue can next return a packet if nothing
// else arrives: now if it can at once, the instant the shaper releases the
// next packet if it is holding them back, or the zero Time if the queue
// is empty. A caller driving a shaped queue sleeps until then.
func (q *Queue[T]) NextDeparture(now aqm.Time) aqm.Time {
	if q.len == 0 {
		return 0
	}
	if !q.shaped {
		return now
	}
	next, fs := q.clocks(now)
	if next > now && fs > now {
		return min(next, fs)
	}
	return now
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
		if int64(size) > int64(q.memLimit) || q.len > q.limit || q.backlog > q.memLimit {
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
		q.stats.NoteSize(size)
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
		if f.state != stSparse && f.state != stBulk || q.len >= q.limit ||
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
		b.pkts++
		b.backlog += int(size)
		q.len++
		q.backlog += int(size)
		if adj := q.adjLen(size); !q.lenSeen(b, size, adj) {
			q.noteNewLen(b, size, adj)
		}
		b.s.arrived.Add(size)
		if q.backlog > q.d.memPeak {
			q.d.memPeak = q.backlog
		}
		q.stats.Enqueued.Add(size)
		vs[i] = aqm.Enqueued
		acc++
	}
	return acc
}

// EnqueueInfoBatch is [Queue.EnqueueBatch] with an [Info] per packet:
// ps[i] goes with infos[i], for i below the shortest of the three slices.
func (q *Queue[T]) EnqueueInfoBatch(ps []aqm.Packet[T], infos []Info, vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs), len(infos))
	acc := 0
	for i := range n {
		v := q.EnqueueInfo(ps[i], infos[i], now)
		vs[i] = v
		if v <= aqm.Marked {
			acc++
		}
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
				b.s.marks++
				q.stats.Marked.Add(p.Size)
			}
			q.sent(b, f, p, now)
			buf[i] = p
			continue
		}
		b.s.drops++
		q.stats.CountDrop(aqm.DroppedEarly, p.Size, true)
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
