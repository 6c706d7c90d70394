package dualq

import (
	"iter"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
)

// Detail is a snapshot of a [Queue]'s algorithm state, the analogue of
// Linux's tc_dualpi2_xstats.
type Detail struct {
	// Prob is the base probability p', in [0, 1].
	Prob float64 `metric:"base_probability,gauge"`
	// ProbRaw is p' scaled to 2^32 (1<<32 is 100 %), the value the hot path
	// derives its decisions from.
	ProbRaw uint64 `metric:"-"`
	// ProbClassic is the Classic drop/mark probability p_C = p'^2.
	ProbClassic float64 `metric:"classic_probability,gauge"`
	// ProbL4SCoupled is the coupled L4S mark probability p_CL = min(k·p', 1).
	ProbL4SCoupled float64 `metric:"l4s_coupled_probability,gauge"`
	// Overloaded reports whether k·p' ≥ 1 with overload drops on: ECN-capable
	// packets are then dropped with probability p_C instead of marked.
	Overloaded bool `metric:"overloaded,gauge"`
	// DelayClassic and DelayL4S are the ages of the two head packets at the
	// latest instant passed to Enqueue or Dequeue (zero for an empty queue).
	DelayClassic time.Duration `metric:"classic_delay_seconds,gauge"`
	DelayL4S     time.Duration `metric:"l4s_delay_seconds,gauge"`
	// PacketsClassic and PacketsL4S are the queue lengths in wire packets
	// (a GSO super-packet counts its segments).
	PacketsClassic int `metric:"classic_backlog_packets,gauge"`
	PacketsL4S     int `metric:"l4s_backlog_packets,gauge"`
	// BytesClassic and BytesL4S are the queue lengths in bytes.
	BytesClassic int `metric:"classic_backlog_bytes,gauge"`
	BytesL4S     int `metric:"l4s_backlog_bytes,gauge"`
	// MaxPackets is the largest total length seen, in wire packets (Linux
	// maxq).
	MaxPackets int `metric:"max_backlog_packets,gauge"`
	// MarkedStep counts the packets marked by the native L4S AQM (the step
	// or ramp), a subset of the queue's Stats.Marked.
	MarkedStep uint64 `metric:"marked_step_packets,counter"`
	// Credit is the WRR credit in byte-percent: > 0 means the Classic queue
	// is served next when both are backlogged.
	Credit int64 `metric:"wrr_credit,gauge"`
	// MaxMemoryUsed is the peak of the bytes queued (the bytes queued now
	// are the queue's Stats.Backlog) and MemoryLimit the shared byte limit.
	MaxMemoryUsed int `metric:"max_memory_used_bytes,gauge"`
	MemoryLimit   int `metric:"memory_limit_bytes,gauge"`
	// Updates counts the PI updates run so far.
	Updates uint64 `metric:"updates,counter"`
	// NextUpdate is the instant of the next PI update (zero before the
	// first packet operation).
	NextUpdate aqm.Time `metric:"next_update_time_seconds,gauge"`
	// MemoryBytes is the memory the queue preallocated: two rings of
	// LimitPackets packets each.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// metrics lists d's values for exporters, with units in the names:
// probabilities (base_probability, classic_probability,
// l4s_coupled_probability), the overload flag (overloaded, 0 or 1), head
// delays (classic_delay_seconds, l4s_delay_seconds), queue lengths
// (classic_backlog_packets, l4s_backlog_packets, classic_backlog_bytes,
// l4s_backlog_bytes, max_backlog_packets), counters (marked_step_packets,
// updates), the WRR credit (wrr_credit), memory (max_memory_used_bytes,
// memory_limit_bytes, memory_bytes) and next_update_time_seconds.
func (d Detail) metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }

// Detail returns the algorithm state as of the latest call to Enqueue or
// Dequeue (or their burst forms). It runs no pending PI update.
func (q *Queue[T]) Detail() Detail {
	d := Detail{
		Prob:           float64(q.ctl.p48) / float64(one48),
		ProbRaw:        uint64(q.ctl.p48) >> 16,
		ProbClassic:    float64(q.ctl.pC) / float64(one32),
		ProbL4SCoupled: float64(q.ctl.pCL) / float64(one32),
		Overloaded:     q.ctl.overload,
		PacketsClassic: q.segsC,
		PacketsL4S:     q.segsL,
		BytesClassic:   q.bytesC,
		BytesL4S:       q.bytesL,
		MaxPackets:     q.maxLen,
		MarkedStep:     q.stepMarks,
		Credit:         q.credit,
		MaxMemoryUsed:  q.maxBacklog,
		MemoryLimit:    q.par.limitBytes,
		Updates:        q.ctl.updates,
		MemoryBytes:    q.memBytes,
	}
	if q.ctl.started {
		d.NextUpdate = q.ctl.nextUpd
	}
	if h := q.c.Front(); h != nil {
		d.DelayClassic = h.Enqueued.Since(q.lastNow)
	}
	if h := q.l.Front(); h != nil {
		d.DelayL4S = h.Enqueued.Since(q.lastNow)
	}
	return d
}
