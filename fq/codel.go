package fq

import (
	"errors"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/pktlist"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Defaults of [CoDelConfig] (RFC 8290 section 5.2 and Linux fq_codel).
const (
	// DefaultCoDelFlows is the number of flow queues (hash buckets), 1024.
	DefaultCoDelFlows = 1024
	// DefaultCoDelLimitPackets is the packet limit of the whole queue, 10240.
	DefaultCoDelLimitPackets = 10240
	// DefaultCoDelMemoryLimitBytes is the byte limit of the whole queue,
	// 32 MiB, Linux's default memory_limit (counted here as the sum of
	// Packet.Size, Linux counts skb truesize).
	DefaultCoDelMemoryLimitBytes = 32 << 20
	// DefaultCoDelQuantumBytes is the DRR quantum, 1514 bytes: an Ethernet
	// MTU plus its 14-byte header.
	DefaultCoDelQuantumBytes = 1514
	// DefaultCoDelDropBatchPackets is the most packets one overload drop
	// removes from the fattest flow, 64 (Linux drop_batch).
	DefaultCoDelDropBatchPackets = 64
)

// Bounds checked by [CoDelConfig.Validate].
const (
	maxCoDelFlows       = 1 << 16 // Linux's limit
	minCoDelQuantum     = 256     // Linux raises smaller quanta to 256
	maxCoDelQuantum     = 1 << 20 // Linux rejects larger ones (a huge quantum spins the credit loop)
	maxCoDelLimit       = 1 << 24
	maxCoDelMemoryLimit = 1 << 31 // Linux's cap; keeps per-flow byte counts in uint32
	maxCoDelBatch       = 1 << 16
	// cqChargeQuanta caps what one packet costs its flow's deficit at 64
	// quanta (97 KB at the default quantum, above any GSO packet), so a
	// packet with an absurd Size cannot make the scheduler rotate 2^24 times.
	cqChargeQuanta = 64
)

// CoDelConfig configures an FQ-CoDel queue ([CoDel]). The zero value is
// RFC 8290's FQ-CoDel: 1024 flows, 10240 packets, quantum 1514 bytes, CoDel
// with target 5 ms, interval 100 ms and ECN, and Linux's batch overload drop
// and 32 MiB memory limit.
type CoDelConfig struct {
	// Flows is the number of flow queues packets are hashed into. Zero means
	// [DefaultCoDelFlows]; at most 65536. Storage of 64 bytes per flow plus
	// 4 bytes of backlog is allocated up front.
	Flows int
	// LimitPackets is the most packets queued in all flows together; an
	// arrival beyond it makes the queue drop from the fattest flow. Zero
	// means [DefaultCoDelLimitPackets]; at most 2^24.
	LimitPackets int
	// MemoryLimitBytes is the most bytes (sum of Size) queued in all flows;
	// beyond it the queue drops from the fattest flow. A packet larger than
	// it is refused. Zero means [DefaultCoDelMemoryLimitBytes]; at most 2^31.
	MemoryLimitBytes int
	// QuantumBytes is the DRR quantum: the bytes a flow may send per round.
	// Zero means [DefaultCoDelQuantumBytes]; in [256, 2^20].
	QuantumBytes int
	// DropBatchPackets is the most packets one overload drop removes from
	// the fattest flow (it stops earlier once half that flow's bytes are
	// gone). 1 gives RFC 8290's single-packet drop. Zero means
	// [DefaultCoDelDropBatchPackets]; at most 65536.
	DropBatchPackets int
	// Target, Interval, MTUBytes, DisableECN, CEThreshold,
	// CEThresholdECT1Only, StrictDeadline and LinuxCount configure each
	// flow's CoDel as in [codel.Config], with the same defaults.
	Target              time.Duration
	Interval            time.Duration
	MTUBytes            int
	DisableECN          bool
	CEThreshold         time.Duration
	CEThresholdECT1Only bool
	StrictDeadline      bool
	LinuxCount          bool
	// GlobalBacklogGuard makes CoDel's "less than one MTU queued" guard look
	// at the bytes queued in all flows, as Linux does (so that thin flows can
	// still be signalled). By default it looks at the flow's own bytes, as
	// RFC 8290's per-queue CoDel and ns-3 do.
	GlobalBacklogGuard bool
	// KeepCountOnOverload leaves a flow's CoDel count unchanged by overload
	// drops (ns-3). By default the packets an overload drop removes are added
	// to the flow's count so its CoDel escalates faster afterwards, as in
	// Linux since 2019 (with the cached inverse square root recomputed,
	// which Linux omits).
	KeepCountOnOverload bool
	// Seed keys the hash that maps Packet.Hash to a flow queue, so that a
	// sender who does not know the seed cannot aim hash collisions at a
	// victim flow (RFC 8290 section 4.1's random salt). Draw it from a
	// random source (crypto/rand) in production; the same seed gives the
	// same mapping and so the same decisions.
	Seed uint64
}

func (c *CoDelConfig) codel() codel.Config {
	return codel.Config{
		Target: c.Target, Interval: c.Interval, MTUBytes: c.MTUBytes, DisableECN: c.DisableECN,
		CEThreshold: c.CEThreshold, CEThresholdECT1Only: c.CEThresholdECT1Only,
		StrictDeadline: c.StrictDeadline, LinuxCount: c.LinuxCount,
	}
}

// Validate applies the defaults to the zero fields and reports every field
// that is out of range, one [aqm.ConfigError] each, joined.
func (c *CoDelConfig) Validate() error {
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "fq", Field: field, Value: v, Rule: rule})
	}
	if c.Flows < 0 || c.Flows > maxCoDelFlows {
		bad("Flows", c.Flows, "must be in [0, 65536]")
	}
	if c.LimitPackets < 0 || c.LimitPackets > maxCoDelLimit {
		bad("LimitPackets", c.LimitPackets, "must be in [0, 16777216]")
	}
	if c.MemoryLimitBytes < 0 || c.MemoryLimitBytes > maxCoDelMemoryLimit {
		bad("MemoryLimitBytes", c.MemoryLimitBytes, "must be in [0, 2147483648]")
	}
	if c.QuantumBytes != 0 && (c.QuantumBytes < minCoDelQuantum || c.QuantumBytes > maxCoDelQuantum) {
		bad("QuantumBytes", c.QuantumBytes, "must be 0 or in [256, 1048576]")
	}
	if c.DropBatchPackets < 0 || c.DropBatchPackets > maxCoDelBatch {
		bad("DropBatchPackets", c.DropBatchPackets, "must be in [0, 65536]")
	}
	cc := c.codel()
	if err := cc.Validate(); err != nil {
		for _, err := range err.(interface{ Unwrap() []error }).Unwrap() {
			var ce *aqm.ConfigError
			if errors.As(err, &ce) {
				bad(ce.Field, ce.Value, ce.Rule)
			}
		}
	}
	c.Target, c.Interval, c.MTUBytes = cc.Target, cc.Interval, cc.MTUBytes
	if c.Flows == 0 {
		c.Flows = DefaultCoDelFlows
	}
	if c.LimitPackets == 0 {
		c.LimitPackets = DefaultCoDelLimitPackets
	}
	if c.MemoryLimitBytes == 0 {
		c.MemoryLimitBytes = DefaultCoDelMemoryLimitBytes
	}
	if c.QuantumBytes == 0 {
		c.QuantumBytes = DefaultCoDelQuantumBytes
	}
	if c.DropBatchPackets == 0 {
		c.DropBatchPackets = DefaultCoDelDropBatchPackets
	}
	return errors.Join(errs...)
}

// cqNone is the nil index of the flow lists.
const cqNone = ^uint32(0)

// Which list a flow is on.
const (
	cqInactive = iota
	cqNew
	cqOld
)

// cqFlow is one flow queue: its packets, its DRR credit, its link in the
// new or old list and its CoDel state. 64 bytes, one cache line
// (TestCoDelFlowSize).
type cqFlow struct {
	cv      codel.Controller // 40 bytes
	q       pktlist.List     // 12 bytes
	deficit int32            // DRR credit in bytes
	next    uint32           // next flow on the same list
	list    uint8            // cqInactive, cqNew or cqOld
}

type cqList struct{ head, tail uint32 }

// CoDel is FQ-CoDel (RFC 8290): packets are hashed into flow queues, each
// with its own CoDel controller, served by deficit round robin with priority
// for new (sparse) flows. It implements [aqm.Queue]. It is not safe for
// concurrent use.
type CoDel[T any] struct {
	flows    []cqFlow
	backlogs []uint32 // bytes per flow, dense for the fattest-flow scan
	slab     *pktlist.Slab[T]
	newL     cqList
	oldL     cqList
	nNew     int
	nOld     int
	key0     uint64
	key1     uint64
	nflows   uint64
	backlog  int
	limit    int
	memLimit int
	quantum  int32
	charge   uint32 // most bytes one packet costs its deficit
	batch    int
	global   bool
	keep     bool
	cp       codel.Params
	cfg      CoDelConfig
	onDrop   aqm.DropFunc[T]
	stats    aqm.Stats
	d        CoDelDetail // counters; the gauges are filled in by Detail
}

var _ aqm.Queue[int] = (*CoDel[int])(nil)

// NewCoDel returns an empty FQ-CoDel queue. onDrop receives the packets that
// CoDel drops at dequeue ([aqm.DroppedEarly]) and those the overload dropper
// evicts ([aqm.DroppedOverlimit]); it may be nil. The error wraps
// [aqm.ErrInvalidConfig] for each bad field.
func NewCoDel[T any](cfg CoDelConfig, onDrop aqm.DropFunc[T]) (*CoDel[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &CoDel[T]{onDrop: onDrop}
	q.build(cfg, cfg.LimitPackets)
	return q, nil
}

// build (re)allocates the flow table and slab for cfg, empty.
func (q *CoDel[T]) build(cfg CoDelConfig, capacity int) {
	q.flows = make([]cqFlow, cfg.Flows)
	for i := range q.flows {
		q.flows[i].q = pktlist.Empty
	}
	q.backlogs = make([]uint32, cfg.Flows)
	// One node more than the limit: an arrival is added before the overload
	// drop makes room (the arrival counts towards its flow's backlog).
	q.slab = pktlist.New[T](capacity + 1)
	q.newL, q.oldL = cqList{cqNone, cqNone}, cqList{cqNone, cqNone}
	q.nNew, q.nOld, q.backlog = 0, 0, 0
	src := rng.New(cfg.Seed)
	q.key0, q.key1 = src.Uint64(), src.Uint64()|1
	q.nflows = uint64(cfg.Flows)
	q.apply(cfg)
}

func (q *CoDel[T]) apply(cfg CoDelConfig) {
	q.cfg = cfg
	q.limit, q.memLimit = cfg.LimitPackets, cfg.MemoryLimitBytes
	q.quantum = int32(cfg.QuantumBytes)
	q.charge = uint32(cfg.QuantumBytes) * cqChargeQuanta
	q.batch = cfg.DropBatchPackets
	q.global, q.keep = cfg.GlobalBacklogGuard, cfg.KeepCountOnOverload
	q.cp = cfg.codel().ControllerParams()
}

// bucket maps a flow hash to a flow queue: the hash is mixed with the
// instance's secret 128-bit key (add, then the SplitMix64 finaliser, then a
// keyed odd multiply) and the top 32 bits are scaled into [0, Flows) by a
// multiply-shift, as Linux's reciprocal_scale, so no modulo.
func (q *CoDel[T]) bucket(h uint32) uint32 {
	z := uint64(h) + q.key0
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * q.key1
	z ^= z >> 31
	return uint32((z >> 32) * q.nflows >> 32)
}

func (q *CoDel[T]) pushTail(l *cqList, i uint32) {
	q.flows[i].next = cqNone
	if l.tail == cqNone {
		l.head = i
	} else {
		q.flows[l.tail].next = i
	}
	l.tail = i
}

func (q *CoDel[T]) popHead(l *cqList) uint32 {
	i := l.head
	l.head = q.flows[i].next
	if l.head == cqNone {
		l.tail = cqNone
	}
	return i
}

// Enqueue classifies p into its flow and appends it. A flow that was not
// on a list joins the tail of the new-flows list with a full quantum. If the
// packet or byte limit is then exceeded, packets are dropped from the head
// of the flow with the largest byte backlog (see [CoDelConfig]); they reach
// the DropFunc as [aqm.DroppedOverlimit] and the arrival is accepted, unless
// it was the last packet of that flow: then it is refused. A packet larger
// than MemoryLimitBytes is refused, and so is every arrival while a
// Reconfigure has left the queue above its limits.
func (q *CoDel[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	q.stats.NoteSize(p.Size)
	if int64(p.Size) > int64(q.memLimit) || q.slab.Used() > q.limit || q.backlog > q.memLimit {
		q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
		return aqm.DroppedOverlimit
	}
	idx := q.bucket(p.Hash)
	f := &q.flows[idx]
	q.slab.PushBack(&f.q, p) // a free node: the slab holds limit+1 packets and Used ≤ limit
	q.backlogs[idx] += p.Size
	q.backlog += int(p.Size)
	if f.list == cqInactive {
		q.activate(idx)
		q.d.NewFlowCount++
	}
	if q.slab.Used() > q.limit || q.backlog > q.memLimit {
		if q.overload(idx, q.backlog > q.memLimit) {
			q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
			return aqm.DroppedOverlimit
		}
	}
	q.stats.Enqueued.Add(p.Size)
	return aqm.Enqueued
}

// overload drops from the fattest flows until the limits hold again. It
// reports whether the arrival (the last packet of flow arrival) had to go
// too; it is then removed without reaching the DropFunc.
func (q *CoDel[T]) overload(arrival uint32, memory bool) bool {
	for q.slab.Used() > q.limit || q.backlog > q.memLimit {
		fat := q.fattest()
		f := &q.flows[fat]
		threshold := q.backlogs[fat] / 2
		var dropped, bytes uint32
		for {
			if fat == arrival && f.q.Len() == 1 { // only the arrival is left
				p, _ := q.slab.PopFront(&f.q)
				q.backlogs[fat] -= p.Size
				q.backlog -= int(p.Size)
				q.bumpCount(f, dropped, memory)
				return true
			}
			p, _ := q.slab.PopFront(&f.q)
			q.backlogs[fat] -= p.Size
			q.backlog -= int(p.Size)
			dropped++
			bytes += p.Size
			q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, true)
			if q.onDrop != nil {
				q.onDrop(p, aqm.DroppedOverlimit)
			}
			if int(dropped) >= q.batch || bytes >= threshold || f.q.Len() == 0 {
				break
			}
		}
		q.bumpCount(f, dropped, memory)
	}
	return false
}

func (q *CoDel[T]) bumpCount(f *cqFlow, dropped uint32, memory bool) {
	q.d.DropOverlimit += uint64(dropped)
	if memory {
		q.d.DropOvermemory += uint64(dropped)
	}
	if !q.keep {
		f.cv.AddCount(dropped)
	}
}

// fattest returns the flow with the largest byte backlog, the lowest index
// among equals (Linux's strict > scan over the dense backlog array). If every
// flow has zero bytes it returns the one with the most packets.
func (q *CoDel[T]) fattest() uint32 {
	var best uint32
	var most uint32
	for i, b := range q.backlogs {
		if b > most {
			most, best = b, uint32(i)
		}
	}
	if most == 0 { // only zero-size packets: pick by packet count
		n := 0
		for i := range q.flows {
			if l := q.flows[i].q.Len(); l > n {
				n, best = l, uint32(i)
			}
		}
	}
	return best
}

// Dequeue returns the next packet by DRR++ over the new then the old flows,
// after the CoDel of the flow it comes from has dropped (through the
// DropFunc, as [aqm.DroppedEarly]) the packets its control law drops, at
// most [codel.MaxDropsPerDequeue] in one call.
func (q *CoDel[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	drops := 0
	for {
		var l *cqList
		fromNew := false
		switch {
		case q.newL.head != cqNone:
			l, fromNew = &q.newL, true
		case q.oldL.head != cqNone:
			l = &q.oldL
		default:
			return p, false
		}
		idx := l.head
		f := &q.flows[idx]
		if f.deficit < 0 {
			// Out of credit (RFC 8290: a negative deficit): one more
			// quantum and to the back of the old list.
			f.deficit += q.quantum
			q.popHead(l)
			q.pushTail(&q.oldL, idx)
			if fromNew {
				f.list = cqOld
				q.nNew--
				q.nOld++
			}
			continue
		}
		for {
			if p, ok = q.slab.PopFront(&f.q); !ok {
				f.cv.Empty()
				break
			}
			q.backlogs[idx] -= p.Size
			q.backlog -= int(p.Size)
			guard := int(q.backlogs[idx])
			if q.global {
				guard = q.backlog
			}
			act := codel.Deliver
			if sj := p.Enqueued.Since(now); drops < codel.MaxDropsPerDequeue {
				if !f.cv.DeliverIfBelowTarget(&q.cp, sj) {
					act = f.cv.Examine(&q.cp, now, sj, guard, p.ECN)
				}
			} else {
				f.cv.Resync(&q.cp, now)
				q.d.DropCapHits++
			}
			switch act {
			case codel.Drop:
				drops++
				q.stats.CountDrop(aqm.DroppedEarly, p.Size, true)
				if q.onDrop != nil {
					q.onDrop(p, aqm.DroppedEarly)
				}
				continue
			case codel.Mark:
				p.ECN = aqm.CE
				q.d.ECNMarks++
				q.stats.Marked.Add(p.Size)
			case codel.MarkCE:
				p.ECN = aqm.CE
				q.d.CEMarks++
				q.stats.Marked.Add(p.Size)
			}
			f.deficit -= int32(min(p.Size, q.charge))
			q.stats.Dequeued.Add(p.Size)
			return p, true
		}
		// The flow is empty: a new flow goes to the old list (RFC 8290, so
		// it cannot come back as new at once), an old flow is deactivated.
		q.popHead(l)
		if fromNew {
			q.pushTail(&q.oldL, idx)
			f.list = cqOld
			q.nNew--
			q.nOld++
		} else {
			f.list = cqInactive
			q.nOld--
		}
	}
}

// Len returns the number of queued packets.
func (q *CoDel[T]) Len() int { return q.slab.Used() }

// Backlog returns the number of queued bytes.
func (q *CoDel[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *CoDel[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.slab.Used(), q.backlog
	return s
}

// activate puts the idle flow idx at the tail of the new list with one
// quantum of credit (RFC 8290 §4.1).
func (q *CoDel[T]) activate(idx uint32) {
	f := &q.flows[idx]
	f.list = cqNew
	f.deficit = q.quantum
	q.pushTail(&q.newL, idx)
	q.nNew++
}

// CoDelDetail is the FQ-CoDel-specific state of a [CoDel] queue, the
// analogue of Linux's tc_fq_codel_qd_stats.
type CoDelDetail struct {
	// DropOverlimit counts queued packets the overload dropper removed
	// (Linux drop_overlimit); DropOvermemory the subset removed because the
	// memory limit was exceeded (Linux drop_overmemory). An arrival refused
	// because only it would have been left to drop is not counted here, nor
	// in its flow's CoDel count (Linux counts it in both): it never entered
	// the queue, and [aqm.Stats.DroppedOverlimit] counts it as a refusal.
	DropOverlimit  uint64
	DropOvermemory uint64
	// NewFlowCount counts flows that became active (joined the new list).
	NewFlowCount uint64
	// ECNMarks counts packets CoDel marked instead of dropping (Linux
	// ecn_mark); CEMarks those marked by the CE threshold (Linux ce_mark).
	ECNMarks uint64
	CEMarks  uint64
	// DropCapHits counts Dequeue calls that reached
	// [codel.MaxDropsPerDequeue].
	DropCapHits uint64
	// NewFlowsLen and OldFlowsLen are the lengths of the two lists.
	NewFlowsLen int
	OldFlowsLen int
	// MaxFlowBacklog is the byte backlog of the fattest flow (Linux
	// maxpacket's neighbour in tc -s output; computed by a scan).
	MaxFlowBacklog int
	// MemoryUsage is the bytes queued (Linux memory_usage; here the sum of
	// Size).
	MemoryUsage int
}

// Detail returns a snapshot of the FQ-CoDel counters and gauges. It scans
// the flow table, O(Flows).
func (q *CoDel[T]) Detail() CoDelDetail {
	d := q.d
	d.NewFlowsLen, d.OldFlowsLen = q.nNew, q.nOld
	d.MaxFlowBacklog = int(q.backlogs[q.fattest()])
	d.MemoryUsage = q.backlog
	return d
}

// CoDelFlow is the state of one flow queue of a [CoDel] queue.
type CoDelFlow struct {
	// Bucket is the flow queue's index in [0, Flows).
	Bucket int
	// Packets and Bytes are its backlog.
	Packets int
	Bytes   int
	// Deficit is its DRR credit in bytes.
	Deficit int
	// New and Old report which scheduling list it is on (neither: idle).
	New bool
	Old bool
	// CoDel is its CoDel controller's state.
	CoDel codel.State
}

// Flow returns the state of the flow queue that packets with the given
// hash go to.
func (q *CoDel[T]) Flow(hash uint32) CoDelFlow {
	i := q.bucket(hash)
	f := &q.flows[i]
	return CoDelFlow{
		Bucket: int(i), Packets: f.q.Len(), Bytes: int(q.backlogs[i]), Deficit: int(f.deficit),
		New: f.list == cqNew, Old: f.list == cqOld, CoDel: f.cv.State(),
	}
}

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets. If Flows and Seed are unchanged, every flow
// keeps its place, credit and CoDel state. Otherwise the packets are
// re-hashed into a new flow table flow by flow, keeping their order (packets
// of one hash stay in one flow), and the CoDel states start afresh. Limits
// below the current occupancy keep the queued packets and refuse arrivals
// until the queue drains below them. It allocates when the table or the
// packet capacity changes.
func (q *CoDel[T]) Reconfigure(cfg CoDelConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	need := max(cfg.LimitPackets, q.slab.Used())
	if cfg.Flows == q.cfg.Flows && cfg.Seed == q.cfg.Seed {
		if need+1 > q.slab.Cap() || cfg.LimitPackets+1 < q.slab.Cap() {
			slab := pktlist.New[T](need + 1)
			for i := range q.flows {
				f := &q.flows[i]
				nl := pktlist.Empty
				for {
					p, ok := q.slab.PopFront(&f.q)
					if !ok {
						break
					}
					slab.PushBack(&nl, p)
				}
				f.q = nl
			}
			q.slab = slab
		}
		q.apply(cfg)
		return nil
	}
	old := *q
	q.build(cfg, need)
	q.d = old.d
	q.stats = old.stats
	// Move the packets flow by flow, in scheduling order, then the idle
	// flows (which are empty).
	move := func(i uint32) {
		f := &old.flows[i]
		for {
			p, ok := old.slab.PopFront(&f.q)
			if !ok {
				return
			}
			idx := q.bucket(p.Hash)
			nf := &q.flows[idx]
			q.slab.PushBack(&nf.q, p)
			q.backlogs[idx] += p.Size
			q.backlog += int(p.Size)
			if nf.list == cqInactive {
				q.activate(idx)
			}
		}
	}
	for _, l := range []cqList{old.newL, old.oldL} {
		for i := l.head; i != cqNone; i = old.flows[i].next {
			move(i)
		}
	}
	return nil
}
