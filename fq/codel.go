package fq

import (
	"math"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/dropcap"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Defaults of [CoDelConfig] (RFC 8290 section 5.2 and Linux fq_codel).
const (
	// defaultCoDelFlows is the number of flow queues (hash buckets), 1024.
	defaultCoDelFlows = 1024
	// defaultCoDelLimitPackets is the packet limit of the whole queue, 10240.
	defaultCoDelLimitPackets = 10240
	// defaultCoDelMemoryLimitBytes is the byte limit of the whole queue,
	// 32 MiB, Linux's default memory_limit (counted here as the sum of
	// Packet.Size, Linux counts skb truesize).
	defaultCoDelMemoryLimitBytes = 32 << 20
	// defaultCoDelQuantumBytes is the DRR quantum, 1514 bytes: an Ethernet
	// MTU plus its 14-byte header.
	defaultCoDelQuantumBytes = 1514
	// defaultCoDelDropBatchPackets is the most packets one overload drop
	// removes from the fattest flow, 64 (Linux drop_batch).
	defaultCoDelDropBatchPackets = 64
)

// Bounds checked by [CoDelConfig.Validate].
const (
	maxCoDelFlows       = 1 << 16 // Linux's limit
	minCoDelQuantum     = 256     // Linux raises smaller quanta to 256
	maxCoDelQuantum     = 1 << 20 // Linux rejects larger ones (a huge quantum spins the credit loop)
	maxCoDelLimit       = 1 << 24
	maxCoDelMemoryLimit = min(1<<31, math.MaxInt) // Linux's cap; keeps per-flow byte counts in uint32
	maxCoDelBatch       = 1 << 16
	// cqChargeQuanta caps what one packet costs its flow's deficit at 64
	// quanta (97 KB at the default quantum, above any GSO packet), so a
	// packet with an absurd Size cannot make the scheduler rotate 2^24 times.
	cqChargeQuanta = 64
)

// CoDelConfig configures an FQ-CoDel queue ([CoDel]). The zero value is
// RFC 8290's FQ-CoDel: 1024 flows, 10240 packets, quantum 1514 bytes, CoDel
// with target 5 ms, interval 100 ms and ECN, Linux's batch overload drop
// and 32 MiB memory limit, and a hash key drawn from crypto/rand.
//
// The default limits suit a fast link (10 Gb/s). On a slower one they hold
// far more than a second of queue, and an unresponsive flow, which CoDel's
// drops do not slow down, can fill them and keep that delay standing: use
// [CoDelConfigForLink] to size the limits for the link's rate.
type CoDelConfig struct {
	// Flows is the number of flow queues packets are hashed into. Zero means
	// 1024; at most 65536. Each takes 64 bytes, plus 32
	// bytes of overload bookkeeping and 28 of flood guard state, allocated
	// up front (see [CoDelDetail.MemoryBytes]).
	Flows int
	// LimitPackets is the most packets queued in all flows together; an
	// arrival beyond it makes the queue drop from the fattest flow. Zero
	// means 10240; at most 2^24. Storage for this many
	// packets (32 bytes each for a word-sized payload) is allocated up
	// front. A limit that holds more than a second of queue at the link's
	// rate defeats the purpose of the AQM under unresponsive traffic; see
	// [CoDelConfigForLink].
	LimitPackets int
	// MemoryLimitBytes is the most bytes (sum of Size) queued in all flows;
	// beyond it the queue drops from the fattest flow. A packet larger than
	// it is refused. Zero means 32 MiB; at most 2^31.
	// Like LimitPackets it should hold well under a second at the link rate.
	MemoryLimitBytes int
	// QuantumBytes is the DRR quantum: the bytes a flow may send per round.
	// Zero means 1514; in [256, 2^20].
	QuantumBytes int
	// DropBatchPackets is the most packets one overload drop removes from
	// the fattest flow (it stops earlier once half that flow's bytes are
	// gone). 1 gives RFC 8290's single-packet drop. Zero means
	// 64; at most 65536.
	DropBatchPackets int
	// Control configures each flow's CoDel: Target, Interval, MTUBytes,
	// DisableECN, CEThreshold, CEThresholdECT1Only, CEThresholdNQB (see
	// [CoDel.EnqueueDSCP]), StrictDeadline and LinuxCount, with the
	// defaults and ranges of [codel.Control].
	codel.Control
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
	// DisableFloodGuard turns the flood guard off (see the package doc's
	// Flood guard section): every packet then joins its own flow queue and
	// a flow queue that was empty gets sparse-flow priority, as in RFC 8290
	// and Linux, so a sender that uses a new flow hash for every packet can
	// starve the other flows. With the guard on, the default, packets of
	// flows that have not recurred wait in one shared queue once they
	// arrive faster than the guard admits new flows.
	DisableFloodGuard bool
	// Seed keys the hash that maps Packet.Hash to a flow queue, so that a
	// sender who does not know it cannot aim hash collisions at a victim
	// flow (RFC 8290 section 4.1's random salt). Zero, the default and the
	// right choice in production, draws a secret key from crypto/rand, so
	// two queues map flows differently; a fixed seed gives the same mapping
	// and so the same decisions every run, for tests and simulations.
	Seed uint64
}

// CoDelConfigForLink returns the FQ-CoDel configuration for a link of the
// given rate carrying flows whose round-trip time is about rtt (zero means
// 100 ms): LimitPackets and MemoryLimitBytes hold
// [aqm.Rate.BufferBytes] (four round trips at the rate, between 64 KiB and
// 32 MiB), and every other field keeps its default. At 8 Mb/s and 100 ms
// that is 400 kB and 265 full-size packets. A zero rate (unknown or
// unlimited) gives the zero CoDelConfig: the defaults.
func CoDelConfigForLink(rate aqm.Rate, rtt time.Duration) CoDelConfig {
	var c CoDelConfig
	c.LimitPackets, c.MemoryLimitBytes = linkLimits(rate, rtt)
	return c
}

// Validate reports every field that is out of range, one [aqm.ConfigError]
// each, joined; the error wraps [aqm.ErrInvalidConfig]. It does not change
// c: zero fields are valid and mean their defaults.
func (c CoDelConfig) Validate() error {
	return joinChecks(validateSched(c.Flows, c.LimitPackets, c.MemoryLimitBytes, c.QuantumBytes, c.DropBatchPackets),
		c.Control.Validate(), c.signalRules())
}

// withDefaults returns c with every zero field that has a default set to it
// (the seed is left alone: NewCoDel draws it).
func (c CoDelConfig) withDefaults() CoDelConfig {
	schedDefaults(&c.Flows, &c.LimitPackets, &c.MemoryLimitBytes, &c.QuantumBytes, &c.DropBatchPackets)
	p := c.Control.Params()
	c.Control = p.Control()
	return c
}

// cqFlow is one FQ-CoDel flow queue: 64 bytes, one cache line
// (TestCoDelFlowSize).
type cqFlow = flowOf[codel.Controller]

// CoDel is FQ-CoDel (RFC 8290): packets are hashed into flow queues, each
// with its own CoDel controller, served by deficit round robin with priority
// for new (sparse) flows. It implements [aqm.Queue] and [aqm.BatchQueue].
// It is not safe for concurrent use.
type CoDel[T any] struct {
	sched[T, codel.Controller]
	global bool
	keep   bool
	cp     codel.Params
	cfg    CoDelConfig
	d      CoDelDetail // counters; the gauges are filled in by Detail
}

var (
	_ aqm.Queue[int]      = (*CoDel[int])(nil)
	_ aqm.BatchQueue[int] = (*CoDel[int])(nil)
)

// NewCoDel returns an empty FQ-CoDel queue. onDrop receives the packets that
// CoDel drops at dequeue ([aqm.DroppedEarly]) and those the overload dropper
// evicts ([aqm.DroppedOverlimit]); it may be nil. The error wraps
// [aqm.ErrInvalidConfig] for each bad field.
func NewCoDel[T any](cfg CoDelConfig, onDrop aqm.DropFunc[T]) (*CoDel[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Seed = rng.SeedOrRandom(cfg.Seed)
	q := &CoDel[T]{}
	q.onDrop = onDrop
	q.build(cfg, cfg.LimitPackets)
	return q, nil
}

// build (re)allocates the flow table, nodes and class stacks for cfg
// (defaults applied, seed drawn), empty.
func (q *CoDel[T]) build(cfg CoDelConfig, capacity int) {
	q.init(cfg.Flows, capacity, cfg.Seed)
	q.apply(cfg)
}

func (q *CoDel[T]) apply(cfg CoDelConfig) {
	q.cfg = cfg
	q.setLimits(cfg.LimitPackets, cfg.MemoryLimitBytes, cfg.QuantumBytes, cfg.DropBatchPackets)
	q.global, q.keep = cfg.GlobalBacklogGuard, cfg.KeepCountOnOverload
	q.cp = cfg.Params()
	q.setGuard(!cfg.DisableFloodGuard, cfg.Target)
}

// Config returns the configuration in effect, every default filled in and
// Seed the key in use (the one drawn from crypto/rand if none was given).
func (q *CoDel[T]) Config() CoDelConfig { return q.cfg }

// Enqueue classifies p into its flow and appends it. A flow that was not
// on a list joins the tail of the new-flows list with a full quantum. If the
// packet or byte limit is then exceeded, packets are dropped from the head
// of the fattest flow (see [CoDelConfig] and the package doc); they reach
// the DropFunc as [aqm.DroppedOverlimit] and the arrival is accepted, unless
// it was the last packet of that flow: then it is refused. A packet larger
// than MemoryLimitBytes is refused, and so is every arrival while a
// Reconfigure has left the queue above its limits.
func (q *CoDel[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	tally.NoteSize(&q.stats, p.Size)
	if q.refuses(p.Meta) {
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	idx := q.bucket(p.Hash)
	var mark uint8
	if q.guard && !q.direct(p.Hash, idx) {
		idx, mark = q.route(p.Hash, idx)
	}
	f := &q.flows[idx]
	// Append p to its flow. A node is free: there are limit+1 and used ≤
	// limit.
	i := q.free
	nd := &q.nodes[i]
	q.free = nd.next
	nd.set(&p)
	nd.next, nd.mark = cqNone, mark
	if f.head == cqNone {
		f.head = i
	} else {
		q.nodes[f.tail].next = i
	}
	f.tail = i
	q.used += p.SegmentCount()
	f.bytes += p.Size
	q.backlog += int(p.Size)
	if f.tag&cqListMask == cqInactive<<cqListShift {
		if idx == q.g.shared {
			q.activateShared(f, idx)
		} else {
			q.activate(f, idx)
			q.d.NewFlowCount++
		}
	}
	if q.tracking {
		q.reclass(f, idx)
	}
	if mark == markShared {
		q.trimShared(now)
	}
	if !q.tracking && (q.used > q.onPkts || q.backlog > q.onBytes) {
		q.startTracking()
	}
	if q.used > q.limit || q.backlog > q.memLim {
		if q.overload(idx, q.backlog > q.memLim) {
			tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
			return aqm.DroppedOverlimit
		}
	}
	q.stats.Enqueued.AddMeta(p.Meta)
	return aqm.Enqueued
}

// EnqueueDSCP is Enqueue for a packet whose DSCP the caller read (the six
// high bits of the IPv4 TOS or IPv6 Traffic Class byte, as package iphdr's
// Flow.DSCP gives it): with CEThresholdNQB (and CEThreshold and
// CEThresholdECT1Only), an ECN-capable packet with DSCP [aqm.DSCPNQB]
// (45) is selected for the CE threshold as an L4S packet is. Every other
// packet is treated as Enqueue treats it; Enqueue and EnqueueBatch, which
// see no DSCP, select on ECN alone. The selection travels with the queued
// packet in a bit above the two ECN bits, cleared before the packet
// leaves, by Dequeue or through the DropFunc.
func (q *CoDel[T]) EnqueueDSCP(p aqm.Packet[T], dscp uint8, now aqm.Time) aqm.Verdict {
	// Enqueue takes its first node from the free list for p, and p stays
	// in it if accepted: an overload drop that would take p refuses it, and
	// the flood guard's trim spares the newest packet of the shared queue.
	i := q.free
	v := q.Enqueue(p, now)
	if v.Accepted() {
		q.nodes[i].ecn = q.cp.SelectDSCP(p.ECN, dscp)
	}
	return v
}

// EnqueueBatch offers ps[i] for i in [0, min(len(ps), len(vs))) at now, as
// that many calls of Enqueue would, writing each verdict to vs[i], and
// returns the number accepted ([aqm.BatchQueue]).
func (q *CoDel[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	ps, vs = ps[:n], vs[:n]
	accepted := 0
	var idxs [touchAhead]uint32
	for i := range ps {
		p := &ps[i]
		k := i % touchAhead
		if k == 0 {
			// Classify the next touchAhead packets first and load a word of
			// each flow's line: the loads are independent, so a table larger
			// than the cache costs about one memory latency per group
			// instead of one per packet.
			q.touch(ps[i:min(i+touchAhead, n)], &idxs)
		}
		// The common case, an arrival that fits under both limits, inline;
		// the rest (refusals, overload) through Enqueue.
		if q.used+p.SegmentCount() > q.onPkts || q.backlog+int(p.Size) > q.onBytes || int64(p.Size) > int64(q.memLim) {
			v := q.Enqueue(*p, now)
			vs[i] = v
			if v.Accepted() {
				accepted++
			}
			continue
		}
		size := p.Size
		idx := idxs[k]
		if q.guard && !q.direct(p.Hash, idx) {
			// Not its bucket's owner: the flood guard decides, on the
			// single path.
			v := q.Enqueue(*p, now)
			vs[i] = v
			if v.Accepted() {
				accepted++
			}
			continue
		}
		f := &q.flows[idx]
		j := q.free
		nd := &q.nodes[j]
		q.free = nd.next
		nd.payload, nd.enqueued, nd.size, nd.hash, nd.ecn, nd.segs = p.Payload, now, size, p.Hash, p.ECN&aqm.ECNMask, p.Segments
		nd.next = cqNone
		if f.head == cqNone {
			f.head = j
		} else {
			q.nodes[f.tail].next = j
		}
		f.tail = j
		q.used += p.SegmentCount()
		f.bytes += size
		q.backlog += int(size)
		if f.tag&cqListMask == cqInactive<<cqListShift {
			q.activate(f, idx)
			q.d.NewFlowCount++
		}
		if q.tracking {
			q.reclass(f, idx)
		}
		tally.NoteSize(&q.stats, size)
		q.stats.Enqueued.AddMeta(p.Meta)
		vs[i] = aqm.Enqueued
		accepted++
	}
	return accepted
}

// overload drops from the fattest flows until the limits hold again. It
// reports whether the arrival (the last packet of flow arrival) had to go
// too; it is then removed without reaching the DropFunc.
func (q *CoDel[T]) overload(arrival uint32, memory bool) bool {
	for q.used > q.limit || q.backlog > q.memLim {
		fat, dropped, gone := q.dropFat(arrival)
		q.bumpCount(&q.flows[fat], dropped, memory)
		if gone {
			return true
		}
	}
	return false
}

func (q *CoDel[T]) bumpCount(f *cqFlow, dropped uint32, memory bool) {
	q.d.EvictedOverlimit += uint64(dropped)
	if memory {
		q.d.EvictedOvermemory += uint64(dropped)
	}
	if !q.keep {
		f.cv.AddCount(dropped)
	}
}

// Dequeue returns the next packet by DRR++ over the new then the old flows,
// after the CoDel of the flow it comes from has dropped (through the
// DropFunc, as [aqm.DroppedEarly]) the packets its control law drops, at
// most 256 in one call.
//
// It runs DRR++ as sched.head, refill and retire do, written out: FQ-CoDel's
// per-packet cost is the one the package is measured by, and the calls
// (which the compiler does not inline into this loop) add about 9% of
// instructions per packet. Cobalt and PIE call the shared helpers.
func (q *CoDel[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if q.tracking {
		q.tick()
	}
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
				setList(f, cqOld)
				q.nNew--
				q.nOld++
			}
			continue
		}
		for f.head != cqNone {
			p = q.pop(f)
			if q.tracking {
				q.reclass(f, idx)
			}
			guard := int(f.bytes)
			if q.global {
				guard = q.backlog
			}
			// A packet EnqueueDSCP selected (a bit above the ECN bits) never
			// takes the fast path, which needs no CE threshold where the
			// selection needs one (Reconfigure clears the bits when the
			// threshold goes): the other two ways clear it, so that it
			// reaches neither the caller nor the DropFunc.
			act := codel.Deliver
			if sj := p.Enqueued.Since(now); drops < dropcap.PerDequeue {
				if !f.cv.DeliverIfBelowTarget(&q.cp, sj) {
					act = f.cv.Decide(&q.cp, now, sj, guard, p.ECN)
					p.ECN &= aqm.ECNMask
				}
			} else {
				f.cv.Resync(&q.cp, now)
				q.d.CappedDequeues++
				p.ECN &= aqm.ECNMask
			}
			switch act {
			case codel.Drop:
				drops++
				tally.DropMeta(&q.stats, aqm.DroppedEarly, p.Meta, true)
				if q.onDrop != nil {
					q.onDrop(p, aqm.DroppedEarly)
				}
				continue
			case codel.Mark:
				p.ECN = aqm.CE
				q.d.MarkedCoDel += uint64(p.SegmentCount())
				q.stats.Marked.AddMeta(p.Meta)
			case codel.MarkCE:
				p.ECN = aqm.CE
				q.d.MarkedCEThreshold += uint64(p.SegmentCount())
				q.stats.Marked.AddMeta(p.Meta)
			}
			f.deficit -= int32(min(p.Size, q.charge))
			q.stats.Dequeued.AddMeta(p.Meta)
			return p, true
		}
		f.cv.Empty(&q.cp, now)
		// The flow is empty: a new flow goes to the old list (RFC 8290, so
		// it cannot come back as new at once), an old flow is deactivated.
		q.popHead(l)
		if fromNew {
			q.pushTail(&q.oldL, idx)
			setList(f, cqOld)
			q.nNew--
			q.nOld++
		} else {
			setList(f, cqInactive)
			q.nOld--
		}
	}
}

// DequeueBatch removes up to len(buf) packets at now into buf, as that many
// calls of Dequeue would, and returns how many ([aqm.BatchQueue]).
func (q *CoDel[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	for i := range buf {
		p, ok := q.Dequeue(now)
		if !ok {
			return i
		}
		buf[i] = p
	}
	return len(buf)
}

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets. A zero Seed keeps the current key. If Flows and
// the key are unchanged, every flow keeps its place, credit and CoDel state.
// Otherwise the packets are re-hashed into a new flow table flow by flow,
// keeping their order (packets of one hash stay in one flow), and the CoDel
// states start afresh. Limits below the current occupancy keep the queued
// packets and refuse arrivals until the queue drains below them. It
// allocates when the table or the packet capacity changes.
func (q *CoDel[T]) Reconfigure(cfg CoDelConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	if cfg.Seed == 0 {
		cfg.Seed = q.cfg.Seed
	}
	unselect := q.cfg.SelectsNQB() && !cfg.SelectsNQB()
	same := cfg.Flows == q.cfg.Flows && cfg.Seed == q.cfg.Seed
	q.reconfigure(same, cfg.LimitPackets, func() { q.apply(cfg) }, func(need int) { q.build(cfg, need) })
	if unselect {
		// Queued NQB packets stop being selected, and Dequeue's fast path
		// (no CE threshold) does not clear the selection bit.
		q.clearSelected()
	}
	return nil
}
