package sfq

import (
	"iter"

	"github.com/aqmkit/aqmkit/aqm"
)

// Detail is the SFQ-specific state returned by [Queue.Detail].
type Detail struct {
	// ActiveFlows is the number of flows (buckets) holding packets.
	ActiveFlows int
	// LongestFlowPackets is the packet count of a longest flow.
	LongestFlowPackets int
	// Perturbations counts hash-key replacements.
	Perturbations uint64
	// NextPerturb is when the key is next replaced (checked on Enqueue);
	// zero if perturbation is off or not yet armed by a first Enqueue.
	NextPerturb aqm.Time
	// DepthDrops counts arrivals to a flow at DepthPackets: refused, or with
	// HeadDrop, replacing the flow's oldest packet.
	DepthDrops uint64
	// OverflowDrops counts packets dropped from a longest flow because the
	// queue was over LimitPackets or LimitBytes, arrivals included.
	OverflowDrops uint64
	// MemoryBytes is the memory the queue preallocated for its
	// configuration: (LimitPackets+1)·(size of a Packet[T] + 8) for the
	// packet slab plus 8·(LimitPackets+2) for the depth lists' heads,
	// 4·Divisor for the bucket table, and 48 bytes per flow slot,
	// min(Divisor, LimitPackets+1) of them. It does not change with the
	// traffic.
	MemoryBytes int
}

// Metrics lists d's values for exporters: active_flows,
// longest_flow_packets and memory_bytes (gauges), perturbations,
// depth_drops_packets and overflow_drops_packets (counters), and
// next_perturb_ns (a gauge: the instant of the next re-key, 0 if none).
func (d Detail) Metrics() iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		_ = yield(aqm.Metric{Name: "active_flows", Kind: aqm.Gauge, Value: float64(d.ActiveFlows)}) &&
			yield(aqm.Metric{Name: "longest_flow_packets", Kind: aqm.Gauge, Value: float64(d.LongestFlowPackets)}) &&
			yield(aqm.Metric{Name: "perturbations", Kind: aqm.Counter, Value: float64(d.Perturbations)}) &&
			yield(aqm.Metric{Name: "next_perturb_ns", Kind: aqm.Gauge, Value: float64(d.NextPerturb)}) &&
			yield(aqm.Metric{Name: "depth_drops_packets", Kind: aqm.Counter, Value: float64(d.DepthDrops)}) &&
			yield(aqm.Metric{Name: "overflow_drops_packets", Kind: aqm.Counter, Value: float64(d.OverflowDrops)}) &&
			yield(aqm.Metric{Name: "memory_bytes", Kind: aqm.Gauge, Value: float64(d.MemoryBytes)})
	}
}

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
