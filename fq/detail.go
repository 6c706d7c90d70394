package fq

import (
	"iter"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/pie"
)

// This file holds the snapshots of [CoDel], [Cobalt] and [PIE], off the hot
// path: what their shared scheduler keeps is written once, generic over the
// per-flow AQM state (SchedulerDetail, FlowQueue, schedDetail, flowQueue),
// and each queue adds its AQM's own counters and state.

// SchedulerDetail is the part of a fair queue's Detail that the DRR++
// scheduler shared by [CoDel], [Cobalt] and [PIE] keeps, after Linux's
// fq_codel statistics. [CoDelDetail], [CobaltDetail] and [PIEDetail] embed
// it, so its fields read as theirs (d.EvictedOverlimit).
type SchedulerDetail struct {
	// EvictedOverlimit counts queued packets the overload dropper evicted from
	// the fattest flow (Linux drop_overlimit); EvictedOvermemory the subset
	// evicted because the memory limit was exceeded (Linux
	// drop_overmemory). An arrival refused because only it would have been
	// left to drop is not counted here, nor in its flow's AQM state (Linux
	// counts it in both): it never entered the queue, and
	// [aqm.Stats.DroppedOverlimit] counts it as a refusal.
	EvictedOverlimit  uint64 `metric:"evicted_overlimit_packets,counter"`
	EvictedOvermemory uint64 `metric:"evicted_overmemory_packets,counter"`
	// NewFlowCount counts flows that became active (joined the new list;
	// Linux new_flow_count).
	NewFlowCount uint64 `metric:"activated_flows,counter"`
	// NewFlowsLen and OldFlowsLen are the lengths of the two lists (Linux
	// new_flows_len and old_flows_len).
	NewFlowsLen int `metric:"new_flows,gauge"`
	OldFlowsLen int `metric:"old_flows,gauge"`
	// MaxFlowBacklog is the byte backlog of the fattest flow (computed by a
	// scan of the flow table).
	MaxFlowBacklog int `metric:"max_flow_backlog_bytes,gauge"`
	// GuardDiverted counts arrivals the flood guard sent to the shared
	// queue, GuardDropped the shared queue's packets it dropped for waiting
	// longer than Target, at most 5 ms ([aqm.DroppedOverlimit]),
	// GuardPromoted the flows that earned a flow queue by recurring (see
	// the package doc).
	GuardDiverted uint64 `metric:"diverted_flood_guard_packets,counter"`
	GuardDropped  uint64 `metric:"dropped_flood_guard_packets,counter"`
	GuardPromoted uint64 `metric:"promoted_flood_guard_flows,counter"`
	// GuardQueueLen is the packets in the flood guard's shared queue.
	GuardQueueLen int `metric:"flood_guard_queue_packets,gauge"`
	// MemoryBytes is the memory the queue's configuration preallocated: one
	// flow state per flow (64 bytes with a CoDel controller, 56 with
	// COBALT's, more with PIE's), 32 bytes per flow of overload
	// bookkeeping, and one node per packet of LimitPackets+1 (the packet
	// plus a 4-byte link).
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// schedDetail returns d with the scheduler's gauges filled in. It scans
// the flow table, O(Flows).
func (q *sched[T, A]) schedDetail(d SchedulerDetail) SchedulerDetail {
	d.NewFlowsLen, d.OldFlowsLen = q.nNew, q.nOld
	d.GuardDiverted, d.GuardDropped, d.GuardPromoted = q.g.diverted, q.g.dropped, q.g.promoted
	d.GuardQueueLen = q.sharedLen()
	d.MaxFlowBacklog = q.maxFlowBytes()
	d.MemoryBytes = q.memoryBytes()
	return d
}

// FlowQueue is the scheduler's part of the state of one flow queue, the
// same in [CoDelFlow], [CobaltFlow] and [PIEFlow], which embed it.
type FlowQueue struct {
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
}

// active reports whether the flow queue holds packets or is on a list.
func (f FlowQueue) active() bool { return f.Packets > 0 || f.New || f.Old }

// flowQueue returns the scheduler's state of the flow queue that packets
// with the given hash go to, and its AQM state. It walks that flow's
// packets to count them.
func (q *sched[T, A]) flowQueue(hash uint32) (FlowQueue, *A) {
	i := q.bucket(hash)
	f := &q.flows[i]
	n, isNew, isOld := q.flowPackets(i)
	return FlowQueue{Bucket: int(i), Packets: n, Bytes: int(f.bytes), Deficit: int(f.deficit), New: isNew, Old: isOld}, &f.cv
}

// CoDelDetail is the FQ-CoDel-specific state of a [CoDel] queue, the
// analogue of Linux's tc_fq_codel_qd_stats.
type CoDelDetail struct {
	// MarkedCoDel counts packets CoDel marked instead of dropping (Linux
	// ecn_mark); CEMarks those marked by the CE threshold (Linux ce_mark).
	// Together they are the queue's Stats.Marked.Packets.
	MarkedCoDel       uint64 `metric:"marked_codel_packets,counter"`
	MarkedCEThreshold uint64 `metric:"marked_ce_threshold_packets,counter"`
	// CappedDequeues counts Dequeue calls that reached
	// 256 drops.
	CappedDequeues uint64 `metric:"capped_dequeues,counter"`
	// SchedulerDetail comes last, its counters first, so that every counter
	// the hot path bumps lies in the first bytes of the struct, ahead of
	// the gauges that Detail fills in.
	SchedulerDetail
}

// Detail returns a snapshot of the FQ-CoDel counters and gauges. It scans
// the flow table, O(Flows).
func (q *CoDel[T]) Detail() CoDelDetail {
	d := q.d
	d.SchedulerDetail = q.schedDetail(d.SchedulerDetail)
	return d
}

// metrics lists the values of d as [aqm.Metric]s, after Linux tc's
// fq_codel statistics with their units: marked_codel_packets,
// marked_ce_threshold_packets and capped_dequeues (counters), then the
// scheduler's evicted_overlimit_packets, evicted_overmemory_packets,
// activated_flows (counters), new_flows, old_flows, max_flow_backlog_bytes
// and memory_bytes (gauges).
func (d CoDelDetail) metrics() iter.Seq[aqm.Metric] { return coDelMetrics.Of(d) }

var coDelMetrics = metrics.Declare[CoDelDetail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [CoDelDetail]'s, from
// one snapshot taken when it is called; a *CoDel is an [aqm.MetricSource].
func (q *CoDel[T]) Metrics() iter.Seq[aqm.Metric] { return coDelMetrics.Queue(q.Stats(), q.Detail()) }

// CoDelFlow is the state of one flow queue of a [CoDel] queue.
type CoDelFlow struct {
	FlowQueue
	// CoDel is its CoDel controller's state.
	CoDel codel.State
}

// Flow returns the state of the flow queue that packets with the given
// hash go to, and whether that flow queue is active (holds packets or is
// on a scheduling list). The state is returned either way: an idle flow
// queue's controller keeps its count for the flow's return. It walks that
// flow's packets to count them.
func (q *CoDel[T]) Flow(hash uint32) (CoDelFlow, bool) {
	f, cv := q.flowQueue(hash)
	return CoDelFlow{FlowQueue: f, CoDel: cv.State()}, f.active()
}

// CobaltDetail is the FQ-COBALT-specific state of a [Cobalt] queue.
type CobaltDetail struct {
	// DroppedCoDel and DroppedBlue count the drops of each half of COBALT.
	DroppedCoDel uint64 `metric:"dropped_codel_packets,counter"`
	DroppedBlue  uint64 `metric:"dropped_blue_packets,counter"`
	// CappedDequeues counts Dequeue calls that reached
	// 256 drops.
	CappedDequeues uint64 `metric:"capped_dequeues,counter"`
	// SchedulerDetail comes last, its counters first, so that every counter
	// the hot path bumps lies in the first bytes of the struct, ahead of
	// the gauges that Detail fills in.
	SchedulerDetail
}

// Detail returns a snapshot of the FQ-COBALT counters and gauges. It scans
// the flow table, O(Flows).
func (q *Cobalt[T]) Detail() CobaltDetail {
	d := q.d
	d.SchedulerDetail = q.schedDetail(d.SchedulerDetail)
	return d
}

// metrics lists the values of d as [aqm.Metric]s with tc-like names and
// their units: dropped_codel_packets, dropped_blue_packets and
// capped_dequeues (counters), then the scheduler's (as
// CoDelDetail.metrics).
func (d CobaltDetail) metrics() iter.Seq[aqm.Metric] { return cobaltMetrics.Of(d) }

var cobaltMetrics = metrics.Declare[CobaltDetail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [CobaltDetail]'s, from
// one snapshot taken when it is called; a *Cobalt is an [aqm.MetricSource].
func (q *Cobalt[T]) Metrics() iter.Seq[aqm.Metric] { return cobaltMetrics.Queue(q.Stats(), q.Detail()) }

// CobaltFlow is the state of one flow queue of a [Cobalt] queue.
type CobaltFlow struct {
	FlowQueue
	// Cobalt is its COBALT controller's state.
	Cobalt cobalt.State
}

// Flow returns the state of the flow queue that packets with the given
// hash go to, and whether that flow queue is active (holds packets or is
// on a scheduling list). The state is returned either way: an idle flow
// queue's controller keeps its count for the flow's return. It walks that
// flow's packets to count them.
func (q *Cobalt[T]) Flow(hash uint32) (CobaltFlow, bool) {
	f, cv := q.flowQueue(hash)
	return CobaltFlow{FlowQueue: f, Cobalt: cv.State()}, f.active()
}

// PIEDetail is the FQ-PIE-specific state of a [PIE] queue, the analogue of
// Linux's tc_fq_pie_xstats.
type PIEDetail struct {
	// SchedulerDetail is the scheduler's state; PIE's own counts (Linux
	// dropped and ecn_mark) are the queue's Stats.DroppedEarly,
	// DroppedOverload and Marked.
	SchedulerDetail
}

// Detail returns a snapshot of the FQ-PIE counters and gauges. It scans the
// flow table, O(Flows).
func (q *PIE[T]) Detail() PIEDetail {
	d := q.d
	d.SchedulerDetail = q.schedDetail(d.SchedulerDetail)
	return d
}

// metrics lists the values of d as [aqm.Metric]s, after Linux tc's fq_pie
// statistics with their units: the scheduler's (as CoDelDetail.metrics);
// PIE's own counters repeat [aqm.Stats].
func (d PIEDetail) metrics() iter.Seq[aqm.Metric] { return pieMetrics.Of(d) }

var pieMetrics = metrics.Declare[PIEDetail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [PIEDetail]'s, from
// one snapshot taken when it is called; a *PIE is an [aqm.MetricSource].
func (q *PIE[T]) Metrics() iter.Seq[aqm.Metric] { return pieMetrics.Queue(q.Stats(), q.Detail()) }

// PIEFlow is the state of one flow queue of a [PIE] queue.
type PIEFlow struct {
	FlowQueue
	// PIE is its PIE controller's state, as of its last update (updates
	// due since then run at the flow's next packet).
	PIE pie.State
}

// Flow returns the state of the flow queue that packets with the given
// hash go to, and whether that flow queue is active (holds packets or is
// on a scheduling list). The state is returned either way: an idle flow
// queue's controller keeps its count for the flow's return. It walks that
// flow's packets to count them.
func (q *PIE[T]) Flow(hash uint32) (PIEFlow, bool) {
	f, cv := q.flowQueue(hash)
	return PIEFlow{FlowQueue: f, PIE: cv.State()}, f.active()
}
