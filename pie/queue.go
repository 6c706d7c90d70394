package pie

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
)

// Queue is a FIFO managed by PIE. It implements [aqm.Queue]. PIE decides at
// enqueue: a packet is accepted, marked or refused, and every accepted
// packet leaves through Dequeue, so the DropFunc is never called by the
// algorithm itself. It is not safe for concurrent use.
type Queue[T any] struct {
	ring    ring.Ring[aqm.Packet[T]]
	backlog int
	pp      params
	ctl     controller
	seed    uint64
	onDrop  aqm.DropFunc[T]
	stats   aqm.Stats
}

var _ aqm.Queue[int] = (*Queue[int])(nil)

// New returns an empty PIE queue configured by cfg (see [Config] for the
// defaults of zero fields). onDrop may be nil; PIE drops only arriving
// packets, so it is kept only for the [aqm.Queue] contract. The error joins
// one [*aqm.ConfigError] per bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &Queue[T]{pp: cfg.derive(), seed: cfg.Seed, onDrop: onDrop}
	q.ring.Init(cfg.LimitPackets)
	q.ctl.init(&q.pp, cfg.Seed)
	return q, nil
}

// advance runs the periodic updates due at now. The common case, none due,
// inlines into Enqueue and Dequeue.
func (q *Queue[T]) advance(now aqm.Time) {
	if now >= q.ctl.next {
		q.catchUp(now)
	}
}

// catchUp runs the updates due at now (at least one).
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
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	q.stats.NoteSize(p.Size)
	q.advance(now)
	size := int(p.Size)
	pp := &q.pp
	if q.ring.Len() >= pp.limitPackets || (pp.limitBytes > 0 && (size > pp.limitBytes || q.backlog+size > pp.limitBytes)) {
		q.ctl.accu = 0
		q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
		return aqm.DroppedOverlimit
	}
	v := aqm.Enqueued
	if q.ctl.burst == 0 && q.ctl.dropEarly(pp, p.Size, q.backlog) {
		// Every positive decision, mark or drop, restarts the
		// derandomization (a mark that left accu in place would mark
		// every later packet).
		q.ctl.accu = 0
		capable := p.ECN != aqm.NotECT
		switch {
		case pp.ecn && capable && q.ctl.p < pp.ecnTh:
			p.ECN = aqm.CE
			q.stats.Marked.Add(p.Size)
			v = aqm.Marked
		case pp.ecn && capable:
			q.stats.CountDrop(aqm.DroppedOverload, p.Size, false)
			return aqm.DroppedOverload
		default:
			q.stats.CountDrop(aqm.DroppedEarly, p.Size, false)
			return aqm.DroppedEarly
		}
	}
	q.ring.PushBack(p) // room: the limits were checked above
	q.backlog += size
	q.stats.Enqueued.Add(p.Size)
	return v
}

// Dequeue returns the oldest packet at time now, after applying the updates
// due. With the rate estimator it also feeds the departure-rate measurement.
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	q.advance(now)
	if p, ok = q.ring.PopFront(); !ok {
		return p, false
	}
	if q.pp.rate {
		q.ctl.onDequeue(&q.pp, now, p.Size, q.backlog)
	}
	q.backlog -= int(p.Size)
	q.stats.Dequeued.Add(p.Size)
	return p, true
}

// Len returns the number of queued packets.
func (q *Queue[T]) Len() int { return q.ring.Len() }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return q.backlog }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.ring.Len(), q.backlog
	return s
}

// Detail is a snapshot of PIE's internal state, the analogue of Linux's
// sch_pie xstats. It reflects the updates applied so far: updates due since
// the last Enqueue or Dequeue run at the next one.
type Detail struct {
	// Prob is drop_prob_, the drop probability in [0, 1].
	Prob float64
	// QueueDelay is the delay estimate of the last update (qdelay_old_).
	QueueDelay time.Duration
	// BurstAllowance is the burst allowance left (burst_allowance_).
	BurstAllowance time.Duration
	// AccuProb is the derandomization accumulator (accu_prob_).
	AccuProb float64
	// AvgDequeueTime is the rate estimator's average time to dequeue
	// DequeueThresholdBytes (avg_dq_time_); zero without an estimate.
	AvgDequeueTime time.Duration
	// DequeueRate is the estimated departure rate in bytes per second,
	// DequeueThresholdBytes/AvgDequeueTime; zero without an estimate.
	DequeueRate float64
	// Measuring reports whether a departure-rate cycle is in progress.
	Measuring bool
	// Updates counts the periodic updates applied since New.
	Updates uint64
	// NextUpdate is the instant of the next periodic update; zero before
	// the first packet operation.
	NextUpdate aqm.Time
}

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
// allowance is cut to the new MaxBurst; a changed Seed restarts the random
// stream. A LimitPackets below the current length keeps the queued packets
// and refuses arrivals until the queue is below it. On error nothing
// changes. It may allocate.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	pp := cfg.derive()
	q.ring.Resize(cfg.LimitPackets) // keeps every queued packet, in order
	if pp.rate != q.pp.rate || pp.dqThresh != q.pp.dqThresh {
		q.ctl.measuring, q.ctl.dqCount, q.ctl.avgDq = false, 0, 0
	}
	q.ctl.burst = min(q.ctl.burst, pp.maxBurst)
	if cfg.Seed != q.seed {
		q.ctl.rng.Seed(cfg.Seed)
		q.seed = cfg.Seed
	}
	q.pp = pp
	return nil
}
