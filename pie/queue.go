package pie

import (
	"iter"
	"math/bits"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/taildrop"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Queue is a FIFO managed by PIE. It implements [aqm.Queue] and its burst
// path [aqm.BatchQueue]. PIE decides at enqueue: a packet is accepted,
// marked or refused, and every accepted packet leaves through Dequeue, so
// the DropFunc is never called by the algorithm itself. It is not safe for
// concurrent use.
type Queue[T any] struct {
	ring    ring.Ring[aqm.Packet[T]]
	backlog int
	segs    int // wire packets queued: a super-packet counts its segments
	pp      params
	ctl     Controller
	cfg     Config // effective: defaults and the seed in use filled in
	onDrop  aqm.DropFunc[T]
	stats   aqm.Stats
}

var _ aqm.BatchQueue[int] = (*Queue[int])(nil)

// New returns an empty PIE queue configured by cfg (see [Config] for the
// defaults of zero fields). onDrop may be nil; PIE drops only arriving
// packets, so it is kept only for the [aqm.Queue] contract. The error joins
// one [*aqm.ConfigError] per bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Seed = rng.SeedOrRandom(cfg.Seed)
	q := &Queue[T]{pp: cfg.derive(), cfg: cfg, onDrop: onDrop}
	q.ring.Init(cfg.LimitPackets)
	q.ctl.init(&q.pp, cfg.Seed)
	return q, nil
}

// Config returns the effective configuration: the one given to New or
// Reconfigure with every default filled in and Seed set to the seed in use
// (the one drawn at random if Seed was zero).
func (q *Queue[T]) Config() Config { return q.cfg }

// due reports whether the controller needs attention at now: an update is
// due (now ≥ next) or the next update lies further ahead than one TUpdate,
// which only a reading far in the future can have caused. One unsigned
// compare: next−now−1 < TUpdate exactly when 0 < next−now ≤ TUpdate, also
// when the subtraction wraps.
func (q *Queue[T]) due(now aqm.Time) bool {
	return uint64(q.ctl.next-now-1) >= uint64(q.pp.tupdate)
}

// advance runs the periodic updates due at now. The common case, none due,
// inlines into Enqueue and Dequeue.
func (q *Queue[T]) advance(now aqm.Time) {
	if uint64(q.ctl.next-now-1) >= uint64(q.pp.tupdate) { // due(now)
		q.catchUp(now)
	}
}

// catchUp runs the updates due at now, or re-anchors a schedule left in the
// future by a bad reading.
func (q *Queue[T]) catchUp(now aqm.Time) {
	var head aqm.Time
	if f := q.ring.Front(); f != nil {
		head = f.Enqueued
	}
	q.ctl.catchUp(&q.pp, now, q.ring.Len() == 0, head, q.backlog)
}

// Enqueue offers p at time now. It first applies the updates due, then:
// a full queue refuses p with [aqm.DroppedOverlimit]; otherwise, once the
// burst allowance is spent, PIE's early decision may mark an ECN-capable p
// ([aqm.Marked], while the probability is below ECNThreshold) or refuse it
// with [aqm.DroppedEarly] ([aqm.DroppedOverload] for an ECN-capable packet
// refused because the probability is at or above ECNThreshold).
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	q.advance(now)
	return q.enqueue(p, now)
}

// enqueue is Enqueue once the updates due at now have run.
func (q *Queue[T]) enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	tally.NoteSize(&q.stats, p.Size)
	size := int(p.Size)
	pp := &q.pp
	segs := p.SegmentCount()
	if q.segs+segs > pp.limitPackets || (pp.limitBytes > 0 && (size > pp.limitBytes || q.backlog+size > pp.limitBytes)) {
		q.ctl.accu = 0
		tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
		return aqm.DroppedOverlimit
	}
	if q.ctl.burst == 0 && q.ctl.dropEarly(pp, p.Size, q.backlog) {
		return q.signal(p)
	}
	q.ring.PushBack(p) // room: the limits were checked above
	q.backlog += size
	q.segs += segs
	q.stats.Enqueued.AddMeta(p.Meta)
	return aqm.Enqueued
}

// signal applies a positive early decision to p, which fits the limits:
// it marks p and queues it, or refuses it.
func (q *Queue[T]) signal(p aqm.Packet[T]) aqm.Verdict {
	// Every positive decision, mark or drop, restarts the derandomization
	// (a mark that left accu in place would mark every later packet).
	q.ctl.accu = 0
	pp := &q.pp
	capable := p.ECN != aqm.NotECT
	switch {
	case pp.ecn && capable && q.ctl.p < pp.ecnTh:
		p.ECN = aqm.CE
		q.stats.Marked.AddMeta(p.Meta)
		q.ring.PushBack(p) // room: the caller checked the limits
		q.backlog += int(p.Size)
		q.segs += p.SegmentCount()
		q.stats.Enqueued.AddMeta(p.Meta)
		return aqm.Marked
	case pp.ecn && capable:
		tally.DropMeta(&q.stats, aqm.DroppedOverload, p.Meta, false)
		return aqm.DroppedOverload
	default:
		tally.DropMeta(&q.stats, aqm.DroppedEarly, p.Meta, false)
		return aqm.DroppedEarly
	}
}

// Dequeue returns the oldest packet at time now, after applying the updates
// due. With the rate estimator it also feeds the departure-rate measurement.
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	q.advance(now)
	return q.dequeue(now)
}

// dequeue is Dequeue once the updates due at now have run.
func (q *Queue[T]) dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if p, ok = q.ring.PopFront(); !ok {
		return p, false
	}
	if q.pp.rate {
		q.ctl.onDequeue(&q.pp, now, p.Size, q.backlog)
	}
	q.backlog -= int(p.Size)
	q.segs -= p.SegmentCount()
	q.stats.Dequeued.AddMeta(p.Meta)
	return p, true
}

// EnqueueBatch offers ps[i] for i < n = min(len(ps), len(vs)) at now, as n
// calls of Enqueue would, writes each verdict into vs[i] and returns the
// number accepted ([aqm.BatchQueue]). The updates due run once, for the
// whole burst; while PIE cannot drop early (burst allowance left, or the
// safeguard of a low delay and probability) packets take a tight loop.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	switch n {
	case 0:
		return 0 // the loop makes no call
	case 1: // no run to share the set-up with
		return tally.Single(vs, q.Enqueue(ps[0], now))
	}
	ps, vs = ps[:n], vs[:n]
	q.advance(now)
	c, pp := &q.ctl, &q.pp
	quiet := c.burst != 0 || (2*c.old < pp.target && c.p < safeProb)
	if again := q.due(now); again || !quiet && (pp.derand || pp.byteMode) {
		// An update is still due after the updates (now is at the end of
		// the time range, where every call runs one), or early decisions
		// with derandomization or byte mode: the single path.
		acc := 0
		for i := range ps {
			if again && i > 0 {
				q.advance(now)
			}
			v := q.enqueue(ps[i], now)
			vs[i] = v
			if v.Accepted() {
				acc++
			}
		}
		return acc
	}
	// burst, old and p change only in updates, so the first test of
	// dropEarly gives the same answer for the whole burst. When it holds
	// (quiet), no packet sees an early decision, accu and the random
	// stream stay untouched, and only the limits refuse packets. When it
	// does not, each packet above the two-packet safeguard draws one
	// number against p, as dropEarly does without derandomization and
	// byte mode; a hit goes to signal.
	room := pp.limitPackets - q.segs // wire packets; may be negative after Reconfigure
	limitBytes := int64(pp.limitBytes)
	if limitBytes == 0 {
		limitBytes = 1<<63 - 1
	}
	if quiet {
		// Only the limits refuse packets, and a refusal resets accu as
		// Enqueue's does. Nothing in the loop reads accu, so one reset
		// after it, when any packet was refused, is the same; the loop
		// then makes no call on its common path.
		acc := taildrop.EnqueueBatch(taildrop.Queue[T]{Ring: &q.ring, Stats: &q.stats, Segs: &q.segs, Backlog: &q.backlog,
			LimitPackets: pp.limitPackets, LimitBytes: pp.limitBytes}, ps, vs, now, nil)
		if acc < n {
			c.accu = 0
		}
		return acc
	}
	safe, prob := int64(pp.safeBytes), c.p
	backlog := int64(q.backlog)
	maxSize := q.stats.MaxSize
	var pk, sg, by uint64
	acc := 0
	for i := range ps {
		p := ps[i]
		p.ECN &= aqm.ECNMask
		p.Enqueued = now
		size, segs := p.Size, p.SegmentCount()
		maxSize = max(maxSize, size)
		if segs > room || backlog+int64(size) > limitBytes {
			c.accu = 0
			tally.DropMeta(&q.stats, aqm.DroppedOverlimit, p.Meta, false)
			vs[i] = aqm.DroppedOverlimit
			continue
		}
		if !quiet && backlog > safe && int64(c.rng.Uint64()>>(64-probShift)) < prob {
			q.backlog = int(backlog)
			q.segs = pp.limitPackets - room
			v := q.signal(p)
			backlog = int64(q.backlog)
			room = pp.limitPackets - q.segs
			if v.Accepted() {
				acc++
			}
			vs[i] = v
			continue
		}
		q.ring.PushBack(p) // room: checked above
		room -= segs
		backlog += int64(size)
		pk++
		sg += uint64(segs)
		by += uint64(size)
		vs[i] = aqm.Enqueued
	}
	q.backlog = int(backlog)
	q.segs = pp.limitPackets - room
	q.stats.MaxSize = maxSize
	q.stats.Enqueued.Packets += sg
	q.stats.Enqueued.Bytes += by
	return acc + int(pk)
}

// DequeueBatch removes up to len(buf) packets at now into buf[:n], as n
// calls of Dequeue would, and returns n; n < len(buf) only when the queue
// is empty ([aqm.BatchQueue]). The updates due run once, for the whole
// burst.
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	switch len(buf) {
	case 0:
		return 0 // the loop makes no call
	case 1: // no run to share the set-up with
		p, ok := q.Dequeue(now)
		if !ok {
			return 0
		}
		buf[0] = p
		return 1
	}
	q.advance(now)
	if again := q.due(now); again || q.pp.rate {
		// The end of the time range (see EnqueueBatch), or the rate
		// estimator, which watches every departure: the single path.
		for i := range buf {
			if again && i > 0 {
				q.advance(now)
			}
			p, ok := q.dequeue(now)
			if !ok {
				return i
			}
			buf[i] = p
		}
		return len(buf)
	}
	n := q.ring.PopFrontN(buf)
	var by uint64
	segs := 0
	for i := range buf[:n] {
		by += uint64(buf[i].Size)
		segs += buf[i].SegmentCount()
	}
	q.backlog -= int(by)
	q.segs -= segs
	q.stats.Dequeued.Packets += uint64(segs)
	q.stats.Dequeued.Bytes += by
	return n
}

// Len returns the number of queued wire packets: a GSO super-packet counts
// as its segments.
func (q *Queue[T]) Len() int { return q.segs }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.segs, q.backlog
	return s
}

// Detail is a snapshot of PIE's internal state, the analogue of Linux's
// sch_pie xstats. It reflects the updates applied so far: updates due since
// the last Enqueue or Dequeue run at the next one.
type Detail struct {
	// Prob is drop_prob_, the drop probability in [0, 1].
	Prob float64 `metric:"probability,gauge"`
	// QueueDelay is the delay estimate of the last update (qdelay_old_).
	QueueDelay time.Duration `metric:"delay_seconds,gauge"`
	// BurstAllowance is the burst allowance left (burst_allowance_).
	BurstAllowance time.Duration `metric:"burst_allowance_seconds,gauge"`
	// AccuProb is the derandomization accumulator (accu_prob_).
	AccuProb float64 `metric:"accumulated_probability,gauge"`
	// AvgDequeueTime is the rate estimator's average time to dequeue
	// DequeueThresholdBytes (avg_dq_time_); zero without an estimate.
	AvgDequeueTime time.Duration `metric:"average_dequeue_time_seconds,gauge"`
	// DequeueRate is the estimated departure rate in bytes per second,
	// DequeueThresholdBytes/AvgDequeueTime; zero without an estimate.
	DequeueRate float64 `metric:"dequeue_rate_bytes_per_second,gauge"`
	// Measuring reports whether a departure-rate cycle is in progress.
	Measuring bool `metric:"measuring,gauge"`
	// Updates counts the periodic updates applied since New.
	Updates uint64 `metric:"updates,counter"`
	// NextUpdate is the instant of the next periodic update; zero before
	// the first packet operation.
	NextUpdate aqm.Time `metric:"next_update_time_seconds,gauge"`
	// MemoryBytes is the memory the queue preallocated for packets: room
	// for LimitPackets packets, rounded up to a power of two, times the
	// size of an [aqm.Packet] of the queue's payload type.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// metrics lists the values of d as [aqm.Metric]s in the words of Linux
// tc's pie statistics, units in the name: probability (the drop
// probability, in [0, 1]), delay_seconds, burst_allowance_seconds,
// accumulated_probability, average_dequeue_time_seconds,
// dequeue_rate_bytes_per_second, measuring (0 or 1), updates,
// next_update_time_seconds (an instant in the caller's clock, 0 when
// unset) and memory_bytes.
func (d Detail) metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }

// Detail returns PIE's internal state.
func (q *Queue[T]) Detail() Detail {
	c := &q.ctl
	d := Detail{
		Prob:           float64(c.p) / float64(probOne),
		QueueDelay:     time.Duration(c.old),
		BurstAllowance: time.Duration(c.burst),
		AccuProb:       float64(c.accu) / float64(probOne),
		AvgDequeueTime: time.Duration(c.avgDq >> avgShift),
		Measuring:      c.measuring,
		Updates:        c.updates,
	}
	var p aqm.Packet[T]
	if mem := q.ring.Cap(); mem > 0 {
		d.MemoryBytes = 1 << bits.Len(uint(mem-1)) * int(unsafe.Sizeof(p))
	}
	if c.avgDq != 0 {
		d.DequeueRate = float64(q.pp.dqThresh) * 1e9 * (1 << avgShift) / float64(c.avgDq)
	}
	if c.next != minTime {
		d.NextUpdate = c.next
	}
	return d
}

// Reconfigure validates cfg and applies it without losing, duplicating or
// reordering queued packets. The drop probability, delay history and
// departure-rate estimate carry over (as Linux's "tc change"); the burst
// allowance is cut to the new MaxBurst. A non-zero Seed that differs from
// the one in use restarts the random stream from it; a zero Seed keeps the
// current stream. A smaller TUpdate takes effect at the next call: an
// update scheduled further ahead than it is rescheduled one TUpdate from
// that call's now. A LimitPackets below the current length keeps the queued
// packets and refuses arrivals until the queue is below it. On error
// nothing changes. It may allocate.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	pp := cfg.derive()
	q.ring.Resize(cfg.LimitPackets) // keeps every queued packet, in order
	if pp.rate != q.pp.rate || pp.dqThresh != q.pp.dqThresh {
		q.ctl.measuring, q.ctl.dqCount, q.ctl.avgDq, q.ctl.dqEnd = false, 0, 0, minTime
	}
	q.ctl.burst = min(q.ctl.burst, pp.maxBurst)
	switch cfg.Seed {
	case 0:
		cfg.Seed = q.cfg.Seed
	case q.cfg.Seed:
	default:
		q.ctl.rng.Seed(cfg.Seed)
	}
	q.pp = pp
	q.cfg = cfg
	return nil
}
