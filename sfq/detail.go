package sfq

import (
	"iter"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
)

// Detail is the SFQ-specific state returned by [Queue.Detail].
type Detail struct {
	// ActiveFlows is the number of flows (buckets) holding packets.
	ActiveFlows int `metric:"active_flows,gauge"`
	// LongestFlowPackets is the packet count of a longest flow.
	LongestFlowPackets int `metric:"longest_flow_packets,gauge"`
	// Perturbations counts hash-key replacements.
	Perturbations uint64 `metric:"perturbations,counter"`
	// NextPerturb is when the key is next replaced (checked on Enqueue);
	// zero if perturbation is off or not yet armed by a first Enqueue.
	NextPerturb aqm.Time `metric:"next_perturbation_time_seconds,gauge"`
	// DroppedDepth counts arrivals to a flow at DepthPackets: refused, or with
	// HeadDrop, replacing the flow's oldest packet.
	DroppedDepth uint64 `metric:"dropped_depth_packets,counter"`
	// DroppedOverflow counts packets dropped from a longest flow because the
	// queue was over LimitPackets or LimitBytes, arrivals included.
	DroppedOverflow uint64 `metric:"dropped_overflow_packets,counter"`
	// MemoryBytes is the memory the queue preallocated for its
	// configuration: (LimitPackets+1)·(size of a Packet[T] + 8) for the
	// packet slab plus 8·(LimitPackets+2) for the depth lists' heads,
	// 4·Divisor for the bucket table, and 48 bytes per flow slot,
	// min(Divisor, LimitPackets+1) of them. It does not change with the
	// traffic.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// metrics lists d's values for exporters: active_flows,
// longest_flow_packets and memory_bytes (gauges), perturbations,
// dropped_depth_packets and dropped_overflow_packets (counters), and
// next_perturbation_time_seconds (a gauge: the instant of the next re-key,
// 0 if none).
func (d Detail) metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }

// Detail returns a snapshot of the SFQ-specific state.
func (q *Queue[T]) Detail() Detail {
	d := q.detail
	d.ActiveFlows = q.active
	d.LongestFlowPackets = int(q.curDepth)
	d.MemoryBytes = q.memBytes
	d.NextPerturb = 0
	if q.p.period > 0 && q.armed {
		d.NextPerturb = q.nextPerturb
	}
	return d
}

// FlowDetail is the state of one flow, the analogue of Linux's per-class
// SFQ statistics.
type FlowDetail struct {
	// Packets and Bytes are the flow's backlog.
	Packets int
	Bytes   int
	// AllotBytes is the flow's round-robin credit: it may send while this
	// is positive.
	AllotBytes int64
}

// Flow returns the state of the flow (bucket) that packets with the given
// hash are classified into under the current key, and false if that bucket
// holds no packets.
func (q *Queue[T]) Flow(hash uint32) (FlowDetail, bool) {
	x := q.ht[q.bucket(hash)]
	if x == none {
		return FlowDetail{}, false
	}
	s := &q.slots[x]
	return FlowDetail{Packets: int(s.n), Bytes: int(s.backlog), AllotBytes: s.allot}, true
}
