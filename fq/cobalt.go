package fq

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/dropcap"
	"github.com/aqmkit/aqmkit/internal/frame"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// CobaltConfig configures an FQ-COBALT queue ([Cobalt]). The zero value is
// ns-3's FqCobalt: 1024 flows, 10240 packets, quantum 1514 bytes, COBALT
// per flow with target 5 ms, interval 100 ms, ECN, BLUE steps 1/256 and
// 1/4096 and a 400 ms BLUE ceiling, the batch overload drop from the
// fattest flow and a 32 MiB memory limit, and a hash key drawn from
// crypto/rand.
//
// The default limits suit a fast link (10 Gb/s). On a slower one they hold
// far more than a second of queue, which defeats the AQM's purpose under
// unresponsive traffic: use [CobaltConfigForLink] to size them for the
// link's rate.
type CobaltConfig struct {
	// Flows is the number of flow queues packets are hashed into. Zero
	// means 1024 (1024); at most 65536. Each takes 56 bytes,
	// plus 32 bytes of overload bookkeeping, allocated up front (see
	// [CobaltDetail.MemoryBytes]).
	Flows int
	// LimitPackets is the most packets queued in all flows together; an
	// arrival beyond it makes the queue drop from the fattest flow. Zero
	// means 10240 (10240); at most 2^24. Storage for
	// this many packets is allocated up front. A limit that holds more than
	// a second of queue at the link's rate defeats the purpose of the AQM
	// under unresponsive traffic; see [CobaltConfigForLink].
	LimitPackets int
	// MemoryLimitBytes is the most bytes (sum of Size) queued in all flows;
	// beyond it the queue drops from the fattest flow, and a packet larger
	// than it is refused. Zero means 32 MiB
	// (32 MiB); at most 2^31.
	MemoryLimitBytes int
	// QuantumBytes is the DRR quantum. Zero means
	// 1514 (1514); in [256, 2^20].
	QuantumBytes int
	// DropBatchPackets is the most packets one overload drop removes from
	// the fattest flow (it stops earlier once half that flow's bytes are
	// gone). Zero means 64 (64); at most 65536.
	DropBatchPackets int
	// Control configures each flow's COBALT: Target, Interval, MTUTime,
	// BlueIncrement, BlueDecrement, BlueThreshold, DisableBlueThreshold and
	// DisableECN, with the defaults and ranges of [cobalt.Control].
	cobalt.Control
	// DisableFloodGuard turns the flood guard off, with the cost
	// [CoDelConfig.DisableFloodGuard] describes; it is on by default.
	DisableFloodGuard bool
	// Seed keys the flow hash and seeds BLUE's random draws. Zero, the
	// default and the right choice in production, draws a secret from
	// crypto/rand; a fixed seed makes the queue reproducible, for tests and
	// simulations. [Cobalt.Config] reports the seed in use.
	Seed uint64
}

// CobaltConfigForLink returns the FQ-COBALT configuration for a link of the
// given rate carrying flows whose round-trip time is about rtt (zero means
// 100 ms): LimitPackets and MemoryLimitBytes hold
// [aqm.Rate.BufferBytes] (four round trips at the rate), MTUTime is one
// full-size packet's time at the rate (COBALT's slow-link guard), and every
// other field keeps its default. A zero rate (unknown or unlimited) gives
// the zero CobaltConfig: the defaults.
func CobaltConfigForLink(rate aqm.Rate, rtt time.Duration) CobaltConfig {
	var c CobaltConfig
	c.LimitPackets, c.MemoryLimitBytes = linkLimits(rate, rtt)
	if rate != 0 {
		c.MTUTime = rate.TxTime(frame.FullBytes)
	}
	return c
}

// Validate reports every field of c that is out of range, joined, as
// [CoDelConfig.Validate] does.
func (c CobaltConfig) Validate() error {
	return joinChecks(validateSched(c.Flows, c.LimitPackets, c.MemoryLimitBytes, c.QuantumBytes, c.DropBatchPackets),
		c.Control.Validate(), c.signalRules())
}

// withDefaults returns c with every zero field that has a default set to it
// (the seed is left alone: NewCobalt draws it).
func (c CobaltConfig) withDefaults() CobaltConfig {
	schedDefaults(&c.Flows, &c.LimitPackets, &c.MemoryLimitBytes, &c.QuantumBytes, &c.DropBatchPackets)
	p := c.Control.Params()
	c.Control = p.Control()
	return c
}

// Cobalt is FQ-COBALT: FQ-CoDel's flow queues and DRR++ scheduler with a
// COBALT controller (package cobalt: CoDel plus BLUE) per flow, as ns-3's
// FqCobaltQueueDisc. It implements [aqm.Queue] and [aqm.BatchQueue]. It is
// not safe for concurrent use.
type Cobalt[T any] struct {
	sched[T, cobalt.Controller]
	cp  cobalt.Params
	cfg CobaltConfig
	d   CobaltDetail
}

var (
	_ aqm.Queue[int]      = (*Cobalt[int])(nil)
	_ aqm.BatchQueue[int] = (*Cobalt[int])(nil)
)

// NewCobalt returns an empty FQ-COBALT queue. onDrop receives the packets
// COBALT drops at dequeue (CoDel's drops and BLUE's drops of packets that
// are not ECN-capable as [aqm.DroppedEarly], BLUE's drops of ECN-capable
// ones as [aqm.DroppedOverload]) and those the overload dropper evicts
// ([aqm.DroppedOverlimit]); it may be nil. The error wraps
// [aqm.ErrInvalidConfig] for each bad field.
func NewCobalt[T any](cfg CobaltConfig, onDrop aqm.DropFunc[T]) (*Cobalt[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Seed = rng.SeedOrRandom(cfg.Seed)
	q := &Cobalt[T]{}
	q.onDrop = onDrop
	q.build(cfg, cfg.LimitPackets)
	return q, nil
}

// build makes a fresh table for cfg with capacity packets and fresh COBALT
// states, each drawing from its own stream.
func (q *Cobalt[T]) build(cfg CobaltConfig, capacity int) {
	q.init(cfg.Flows, capacity, cfg.Seed)
	q.apply(cfg)
	for i := range q.flows {
		q.flows[i].cv.Init(&q.cp, cobaltFlowSeed(cfg.Seed, i))
	}
}

// cobaltFlowSeed is the seed of flow i's BLUE stream in a queue seeded
// with seed: distinct per flow, and apart from the hash key and from
// FQ-PIE's streams.
func cobaltFlowSeed(seed uint64, i int) uint64 { return pieFlowSeed(seed^0x5851f42d4c957f2d, i) }

func (q *Cobalt[T]) apply(cfg CobaltConfig) {
	q.cfg = cfg
	q.setLimits(cfg.LimitPackets, cfg.MemoryLimitBytes, cfg.QuantumBytes, cfg.DropBatchPackets)
	q.cp = cfg.Params()
	q.setGuard(!cfg.DisableFloodGuard, cfg.Target)
}

// Config returns the configuration in effect, every default filled in and
// Seed the one in use (drawn from crypto/rand if none was given).
func (q *Cobalt[T]) Config() CobaltConfig { return q.cfg }

// Enqueue classifies p into its flow and appends it, as [CoDel.Enqueue]
// does. An overload drop also tells the fattest flow's COBALT that its
// queue overflowed: its BLUE probability rises and its CoDel half signals
// at once (as CAKE does).
func (q *Cobalt[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
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
	if q.admit(&p, idx, mark) {
		q.d.NewFlowCount++
	}
	if mark == markShared {
		q.trimShared(now)
	}
	if q.over() {
		memory := q.backlog > q.memLim
		for q.over() {
			fat, dropped, gone := q.dropFat(idx)
			q.d.EvictedOverlimit += uint64(dropped)
			if memory {
				q.d.EvictedOvermemory += uint64(dropped)
			}
			q.flows[fat].cv.Overflow(&q.cp, now)
			if gone {
				tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
				return aqm.DroppedOverlimit
			}
		}
	}
	q.stats.Enqueued.AddMeta(p.Meta)
	return aqm.Enqueued
}

// Dequeue returns the next packet by DRR++ over the new then the old flows,
// after the COBALT of the flow it comes from has dropped (through the
// DropFunc) the packets it drops, at most 256 in
// one call. When a flow's last packet leaves, its COBALT is told that its
// queue is empty (BLUE's probability decays, at most once per Target).
func (q *Cobalt[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if q.tracking {
		q.tick()
	}
	drops := 0
	for {
		idx := q.head()
		if idx == cqNone {
			return aqm.Packet[T]{}, false // not a packet dropped on the way
		}
		f := &q.flows[idx]
		if f.deficit < 0 {
			q.refill(idx)
			continue
		}
		for f.head != cqNone {
			p = q.pop(f)
			if q.tracking {
				q.reclass(f, idx)
			}
			act := cobalt.Deliver
			if drops < dropcap.PerDequeue {
				act = f.cv.Decide(&q.cp, now, p.Enqueued.Since(now), p.ECN)
			} else {
				q.d.CappedDequeues++
			}
			if f.head == cqNone {
				// The flow's last packet is leaving: its queue is empty
				// now (BLUE decays), whether or not the scheduler looks
				// at it again before the next arrival.
				f.cv.Empty(&q.cp, now)
			}
			switch act {
			case cobalt.Mark:
				p.ECN = aqm.CE
				q.stats.Marked.AddMeta(p.Meta)
			case cobalt.DropCoDel, cobalt.DropBlue:
				why := aqm.DroppedEarly
				if act == cobalt.DropBlue {
					q.d.DroppedBlue += uint64(p.SegmentCount())
					if p.ECN != aqm.NotECT {
						why = aqm.DroppedOverload
					}
				} else {
					q.d.DroppedCoDel += uint64(p.SegmentCount())
				}
				drops++
				tally.DropMeta(&q.stats, why, p.Meta, true)
				if q.onDrop != nil {
					q.onDrop(p, why)
				}
				continue
			}
			q.charged(f, p.Size)
			q.stats.Dequeued.AddMeta(p.Meta)
			return p, true
		}
		q.retire(idx)
	}
}

// EnqueueBatch offers ps[i] for i in [0, min(len(ps), len(vs))) at now, as
// that many calls of Enqueue would, writing each verdict to vs[i], and
// returns the number accepted ([aqm.BatchQueue]).
func (q *Cobalt[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	return enqueueBurst(q, &q.sched, ps, vs, now)
}

// DequeueBatch removes up to len(buf) packets at now into buf, as that many
// calls of Dequeue would, and returns how many ([aqm.BatchQueue]).
func (q *Cobalt[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	return aqm.DequeueLoop[T](q, buf, now)
}

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets. A zero Seed keeps the current key and random
// streams. If Flows and the key are unchanged, every flow keeps its place,
// credit and COBALT state. Otherwise the packets are re-hashed into a new
// flow table flow by flow, keeping their order, and the COBALT states start
// afresh. Limits below the current occupancy keep the queued packets and
// refuse arrivals until the queue drains below them. It allocates when the
// table or the packet capacity changes.
func (q *Cobalt[T]) Reconfigure(cfg CobaltConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	if cfg.Seed == 0 {
		cfg.Seed = q.cfg.Seed
	}
	same := cfg.Flows == q.cfg.Flows && cfg.Seed == q.cfg.Seed
	q.reconfigure(same, cfg.LimitPackets, func() { q.apply(cfg) }, func(need int) { q.build(cfg, need) })
	return nil
}
