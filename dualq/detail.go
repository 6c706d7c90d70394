package dualq

import (
	"iter"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Detail is a snapshot of a [Queue]'s algorithm state, the analogue of
// Linux's tc_dualpi2_xstats.
type Detail struct {
	// Prob is the base probability p', in [0, 1].
	Prob float64
	// ProbRaw is p' scaled to 2^32 (1<<32 is 100 %), the value the hot path
	// derives its decisions from.
	ProbRaw uint64
	// ProbClassic is the Classic drop/mark probability p_C = p'^2.
	ProbClassic float64
	// ProbL4SCoupled is the coupled L4S mark probability p_CL = min(k·p', 1).
	ProbL4SCoupled float64
	// Overloaded reports whether k·p' ≥ 1 with overload drops on: ECN-capable
	// packets are then dropped with probability p_C instead of marked.
	Overloaded bool
	// DelayClassic and DelayL4S are the ages of the two head packets at the
	// latest instant passed to Enqueue or Dequeue (zero for an empty queue).
	DelayClassic, DelayL4S time.Duration
	// PacketsClassic and PacketsL4S are the queue lengths in packets.
	PacketsClassic, PacketsL4S int
	// BytesClassic and BytesL4S are the queue lengths in bytes.
	BytesClassic, BytesL4S int
	// MaxPackets is the largest total length seen (Linux maxq).
	MaxPackets int
	// ECNMarks counts every packet set to CE (Linux ecn_mark); StepMarks
	// counts the subset marked by the native L4S AQM (the step or ramp).
	ECNMarks, StepMarks uint64
	// DroppedEarly, DroppedOverload and DroppedOverlimit count drops in
	// packets by reason: Not-ECT Classic packets dropped with p_C,
	// ECN-capable packets dropped in overload, and arrivals refused at the
	// limit.
	DroppedEarly, DroppedOverload, DroppedOverlimit uint64
	// Credit is the WRR credit in byte-percent: > 0 means the Classic queue
	// is served next when both are backlogged.
	Credit int64
	// MemoryUsed is the bytes queued, MaxMemoryUsed its peak and MemoryLimit
	// the shared byte limit.
	MemoryUsed, MaxMemoryUsed, MemoryLimit int
	// Updates counts the PI updates run so far.
	Updates uint64
	// NextUpdate is the instant of the next PI update (zero before the
	// first packet operation).
	NextUpdate aqm.Time
	// MemoryBytes is the memory the queue preallocated: two rings of
	// LimitPackets packets each.
	MemoryBytes int
}

// Metrics lists d's values for exporters, with units in the names:
// probabilities (base_probability, classic_probability,
// l4s_coupled_probability), the overload flag (overloaded, 0 or 1), head
// delays (classic_delay_seconds, l4s_delay_seconds), queue lengths
// (classic_backlog_packets, l4s_backlog_packets, classic_backlog_bytes,
// l4s_backlog_bytes, max_backlog_packets), counters (marked_step_packets,
// updates), the WRR credit (wrr_credit), memory (max_memory_used_bytes,
// memory_limit_bytes, memory_bytes) and next_update_time_seconds. The
// values that repeat [aqm.Stats] (ECNMarks, the drops, MemoryUsed) are not
// listed again.
func (d Detail) Metrics() iter.Seq[aqm.Metric] {
	b := 0.0
	if d.Overloaded {
		b = 1
	}
	ms := [...]aqm.Metric{
		{Name: "base_probability", Kind: aqm.Gauge, Value: d.Prob},
		{Name: "classic_probability", Kind: aqm.Gauge, Value: d.ProbClassic},
		{Name: "l4s_coupled_probability", Kind: aqm.Gauge, Value: d.ProbL4SCoupled},
		{Name: "overloaded", Kind: aqm.Gauge, Value: b},
		{Name: "classic_delay_seconds", Kind: aqm.Gauge, Value: d.DelayClassic.Seconds()},
		{Name: "l4s_delay_seconds", Kind: aqm.Gauge, Value: d.DelayL4S.Seconds()},
		{Name: "classic_backlog_packets", Kind: aqm.Gauge, Value: float64(d.PacketsClassic)},
		{Name: "l4s_backlog_packets", Kind: aqm.Gauge, Value: float64(d.PacketsL4S)},
		{Name: "classic_backlog_bytes", Kind: aqm.Gauge, Value: float64(d.BytesClassic)},
		{Name: "l4s_backlog_bytes", Kind: aqm.Gauge, Value: float64(d.BytesL4S)},
		{Name: "max_backlog_packets", Kind: aqm.Gauge, Value: float64(d.MaxPackets)},
		{Name: "marked_step_packets", Kind: aqm.Counter, Value: float64(d.StepMarks)},
		{Name: "wrr_credit", Kind: aqm.Gauge, Value: float64(d.Credit)},
		{Name: "max_memory_used_bytes", Kind: aqm.Gauge, Value: float64(d.MaxMemoryUsed)},
		{Name: "memory_limit_bytes", Kind: aqm.Gauge, Value: float64(d.MemoryLimit)},
		{Name: "updates", Kind: aqm.Counter, Value: float64(d.Updates)},
		{Name: "next_update_time_seconds", Kind: aqm.Gauge, Value: time.Duration(d.NextUpdate).Seconds()},
		{Name: "memory_bytes", Kind: aqm.Gauge, Value: float64(d.MemoryBytes)},
	}
	return func(yield func(aqm.Metric) bool) {
		for _, m := range ms {
			if !yield(m) {
				return
			}
		}
	}
}

// Detail returns the algorithm state as of the latest call to Enqueue or
// Dequeue (or their burst forms). It runs no pending PI update.
func (q *Queue[T]) Detail() Detail {
	d := Detail{
		Prob:             float64(q.ctl.p48) / float64(one48),
		ProbRaw:          uint64(q.ctl.p48) >> 16,
		ProbClassic:      float64(q.ctl.pC) / float64(one32),
		ProbL4SCoupled:   float64(q.ctl.pCL) / float64(one32),
		Overloaded:       q.ctl.overload,
		PacketsClassic:   q.c.Len(),
		PacketsL4S:       q.l.Len(),
		BytesClassic:     q.bytesC,
		BytesL4S:         q.bytesL,
		MaxPackets:       q.maxLen,
		ECNMarks:         q.stats.Marked.Packets,
		StepMarks:        q.stepMarks,
		DroppedEarly:     q.stats.DroppedEarly.Packets,
		DroppedOverload:  q.stats.DroppedOverload.Packets,
		DroppedOverlimit: q.stats.DroppedOverlimit.Packets,
		Credit:           q.credit,
		MemoryUsed:       q.bytesL + q.bytesC,
		MaxMemoryUsed:    q.maxBacklog,
		MemoryLimit:      q.par.limitBytes,
		Updates:          q.ctl.updates,
		MemoryBytes:      q.memBytes,
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
