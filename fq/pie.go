package fq

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
	"github.com/aqmkit/aqmkit/pie"
)

// PIEConfig configures an FQ-PIE queue ([PIE]). The zero value is Linux
// fq_pie's structure with ns-3's FqPie signalling: 1024 flows, 10240
// packets, quantum 1514 bytes, a 32 MiB memory limit, PIE per flow with
// target 15 ms, update period 15 ms, alpha 0.125, beta 1.25, a 150 ms burst
// allowance and ECN marking below 10% probability, the batch overload drop
// from the fattest flow, and a hash key drawn from crypto/rand.
//
// The default limits suit a fast link (10 Gb/s). On a slower one they hold
// far more than a second of queue, which defeats the AQM's purpose under
// unresponsive traffic: use [PIEConfigForLink] to size them for the link's
// rate.
type PIEConfig struct {
	// Flows is the number of flow queues packets are hashed into. Zero
	// means 1024 (1024); at most 65536. Each flow's state
	// (its PIE controller, packet list and DRR state, 136 bytes) and
	// 32 bytes of overload bookkeeping are allocated up front (see
	// [PIEDetail.MemoryBytes]).
	Flows int
	// LimitPackets is the most packets queued in all flows together; an
	// arrival beyond it makes the queue drop from the fattest flow. Zero
	// means 10240 (10240); at most 2^24. Storage for
	// this many packets is allocated up front. A limit that holds more than
	// a second of queue at the link's rate defeats the purpose of the AQM
	// under unresponsive traffic; see [PIEConfigForLink].
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
	// Control configures each flow's PIE: Target, TUpdate, Alpha, Beta,
	// MaxBurst, DisableBurstAllowance, MeanPacketBytes, DisableECN,
	// ECNThreshold, Derandomize, ByteMode, RateEstimator,
	// DequeueThresholdBytes and HighDelayBoost, with the defaults and ranges
	// of [pie.Control]. The safeguard "no early drop while at most two mean
	// packets are queued" looks at the flow's own backlog, as in Linux
	// fq_pie.
	pie.Control
	// DisableFloodGuard turns the flood guard off, with the cost
	// [CoDelConfig.DisableFloodGuard] describes; it is on by default.
	DisableFloodGuard bool
	// Seed keys the flow hash and seeds every flow's random draws. Zero,
	// the default and the right choice in production, draws a secret from
	// crypto/rand; a fixed seed makes the queue reproducible, for tests and
	// simulations. [PIE.Config] reports the seed in use.
	Seed uint64
}

// PIEConfigForLink returns the FQ-PIE configuration for a link of the given
// rate carrying flows whose round-trip time is about rtt (zero means
// 100 ms): LimitPackets and MemoryLimitBytes hold
// [aqm.Rate.BufferBytes] (four round trips at the rate), and every other
// field keeps its default. A zero rate (unknown or unlimited) gives the
// zero PIEConfig: the defaults.
func PIEConfigForLink(rate aqm.Rate, rtt time.Duration) PIEConfig {
	var c PIEConfig
	c.LimitPackets, c.MemoryLimitBytes = linkLimits(rate, rtt)
	return c
}

// Validate reports every field of c that is out of range, joined, as
// [CoDelConfig.Validate] does.
func (c PIEConfig) Validate() error {
	return joinChecks(validateSched(c.Flows, c.LimitPackets, c.MemoryLimitBytes, c.QuantumBytes, c.DropBatchPackets),
		c.Control.Validate(), c.signalRules())
}

// withDefaults returns c with every zero field that has a default set to it
// (the seed is left alone: NewPIE draws it).
func (c PIEConfig) withDefaults() PIEConfig {
	schedDefaults(&c.Flows, &c.LimitPackets, &c.MemoryLimitBytes, &c.QuantumBytes, &c.DropBatchPackets)
	p := c.Control.Params()
	c.Control = p.Control()
	return c
}

// pieFlowSeed is the seed of flow i's random source in a queue seeded with
// seed: distinct per flow, so flows do not draw in lockstep.
func pieFlowSeed(seed uint64, i int) uint64 { return seed + uint64(i+1)*0x9e3779b97f4a7c15 }

// PIE is FQ-PIE: FQ-CoDel's flow queues and DRR++ scheduler with a PIE
// controller (package pie) per flow, deciding at enqueue, as Linux fq_pie
// and ns-3's FqPieQueueDisc. It implements [aqm.Queue] and
// [aqm.BatchQueue]. It is not safe for concurrent use.
type PIE[T any] struct {
	sched[T, pie.Controller]
	fp  pie.Params
	cfg PIEConfig
	d   PIEDetail
}

var (
	_ aqm.Queue[int]      = (*PIE[int])(nil)
	_ aqm.BatchQueue[int] = (*PIE[int])(nil)
)

// NewPIE returns an empty FQ-PIE queue. PIE refuses packets at enqueue, so
// onDrop receives only the packets the overload dropper evicts
// ([aqm.DroppedOverlimit]); it may be nil. The error wraps
// [aqm.ErrInvalidConfig] for each bad field.
func NewPIE[T any](cfg PIEConfig, onDrop aqm.DropFunc[T]) (*PIE[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Seed = rng.SeedOrRandom(cfg.Seed)
	q := &PIE[T]{}
	q.onDrop = onDrop
	q.build(cfg, cfg.LimitPackets)
	return q, nil
}

// build makes a fresh table for cfg with capacity packets and fresh PIE
// states.
func (q *PIE[T]) build(cfg PIEConfig, capacity int) {
	q.init(cfg.Flows, capacity, cfg.Seed)
	q.apply(cfg)
	for i := range q.flows {
		q.flows[i].cv.Init(&q.fp, pieFlowSeed(cfg.Seed, i))
	}
}

func (q *PIE[T]) apply(cfg PIEConfig) {
	q.cfg = cfg
	q.setLimits(cfg.LimitPackets, cfg.MemoryLimitBytes, cfg.QuantumBytes, cfg.DropBatchPackets)
	q.fp = cfg.Params()
	q.setGuard(!cfg.DisableFloodGuard, cfg.Target)
}

// Config returns the configuration in effect, every default filled in and
// Seed the one in use (drawn from crypto/rand if none was given).
func (q *PIE[T]) Config() PIEConfig { return q.cfg }

// update runs the PIE updates of flow f due at now (the caller checked
// that there is work).
func (q *PIE[T]) update(f *flowOf[pie.Controller], now aqm.Time) {
	var head aqm.Time
	if f.head != cqNone {
		head = q.nodes[f.head].enqueued
	}
	f.cv.Update(&q.fp, now, f.head == cqNone, head, int(f.bytes))
}

// Enqueue classifies p into its flow and lets that flow's PIE decide on it,
// on the flow's own backlog: refused ([aqm.DroppedEarly], or
// [aqm.DroppedOverload] for an ECN-capable packet while the probability is
// at or above ECNThreshold), marked CE and queued ([aqm.Marked]) or queued.
// A queued packet that takes the queue over a limit makes it drop from the
// fattest flow, as [CoDel.Enqueue] does; the arrival is refused
// ([aqm.DroppedOverlimit]) if it was the last packet of that flow.
func (q *PIE[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
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
	if f.cv.Due(&q.fp, now) {
		q.update(f, now)
	}
	v := f.cv.Decide(&q.fp, now, p.Size, int(f.bytes), p.ECN)
	switch v {
	case aqm.Marked:
		p.ECN = aqm.CE
	case aqm.DroppedEarly, aqm.DroppedOverload:
		if mark != 0 {
			q.unroute(mark, p.Hash)
		}
		tally.DropMeta(&q.stats, v, p.Meta, false)
		return v
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
			q.flows[fat].cv.Overflow(&q.fp, now)
			if gone {
				tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
				return aqm.DroppedOverlimit
			}
		}
	}
	if v == aqm.Marked {
		q.stats.Marked.AddMeta(p.Meta)
	}
	q.stats.Enqueued.AddMeta(p.Meta)
	return v
}

// Dequeue returns the next packet by DRR++ over the new then the old flows.
// PIE does not drop at dequeue; with RateEstimator the packet feeds its
// flow's departure-rate estimate.
func (q *PIE[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if q.tracking {
		q.tick()
	}
	for {
		idx := q.head()
		if idx == cqNone {
			return p, false
		}
		f := &q.flows[idx]
		if f.deficit < 0 {
			q.refill(idx)
			continue
		}
		if f.head == cqNone {
			q.retire(idx)
			continue
		}
		if f.cv.Due(&q.fp, now) {
			q.update(f, now)
		}
		backlog := int(f.bytes)
		p = q.pop(f)
		if q.tracking {
			q.reclass(f, idx)
		}
		f.cv.Dequeued(&q.fp, now, p.Size, backlog)
		q.charged(f, p.Size)
		q.stats.Dequeued.AddMeta(p.Meta)
		return p, true
	}
}

// EnqueueBatch offers ps[i] for i in [0, min(len(ps), len(vs))) at now, as
// that many calls of Enqueue would, writing each verdict to vs[i], and
// returns the number accepted ([aqm.BatchQueue]).
func (q *PIE[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	return enqueueBurst(q, &q.sched, ps, vs, now)
}

// DequeueBatch removes up to len(buf) packets at now into buf, as that many
// calls of Dequeue would, and returns how many ([aqm.BatchQueue]).
func (q *PIE[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	return aqm.DequeueLoop[T](q, buf, now)
}

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets. A zero Seed keeps the current key and random
// streams. If Flows and the key are unchanged, every flow keeps its place,
// credit and PIE state (its burst allowance cut to the new MaxBurst, as
// [pie.Queue.Reconfigure] does). Otherwise the packets are re-hashed into
// a new flow table flow by flow, keeping their order, and the PIE states
// start afresh. Limits below the current occupancy keep the queued packets
// and refuse arrivals until the queue drains below them. It allocates when
// the table or the packet capacity changes.
func (q *PIE[T]) Reconfigure(cfg PIEConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	if cfg.Seed == 0 {
		cfg.Seed = q.cfg.Seed
	}
	same := cfg.Flows == q.cfg.Flows && cfg.Seed == q.cfg.Seed
	q.reconfigure(same, cfg.LimitPackets, func() {
		old := q.fp
		q.apply(cfg)
		for i := range q.flows {
			q.flows[i].cv.Reconfigured(&old, &q.fp)
		}
	}, func(need int) { q.build(cfg, need) })
	return nil
}
