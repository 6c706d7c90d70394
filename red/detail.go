package red

import (
	"iter"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
)

// Detail is a snapshot of RED's state, the analogue of Linux's RED xstats.
type Detail struct {
	// Avg is the average queue as of the last arrival (or the last
	// adaptation), in packets, or bytes in ByteMode.
	Avg float64 `metric:"average_queue,gauge,unit=ByteMode"`
	// MaxP is the current max_p; Adaptive RED moves it.
	MaxP float64 `metric:"max_probability,gauge"`
	// Prob is p_b, the early drop probability before the count
	// uniformization and the byte-mode scaling, at the last arrival whose
	// average was at or above MinThreshold; 1 in the forced region.
	Prob float64 `metric:"probability,gauge"`
	// Count is the number of arrivals since the last early signal while the
	// average stayed in the probabilistic band, or −1 when the last
	// arrival's average was outside it.
	Count int64 `metric:"count_packets,gauge"`
	// MinThreshold, MaxThreshold and Weight are the thresholds and w_q in
	// use (after defaults).
	MinThreshold float64 `metric:"min_threshold,gauge,unit=ByteMode"`
	MaxThreshold float64 `metric:"max_threshold,gauge,unit=ByteMode"`
	Weight       float64 `metric:"weight,gauge"`
	// TargetLow and TargetHigh are Adaptive RED's target band for the
	// average: 0.4 and 0.6 of the way from MinThreshold to MaxThreshold.
	TargetLow  float64 `metric:"target_low,gauge,unit=ByteMode"`
	TargetHigh float64 `metric:"target_high,gauge,unit=ByteMode"`
	// DroppedProbabilistic and MarkedProbabilistic count probabilistic
	// early signals, dropped or marked. DroppedForced and MarkedForced count
	// signals where the average was at or above MaxThreshold
	// (2·MaxThreshold with Gentle); DroppedForced includes the ECN-capable
	// packets dropped as [aqm.DroppedOverload]. A signal is counted when
	// decided: a marked packet then refused by a full hard limit is in
	// MarkedProbabilistic or MarkedForced and in
	// Stats.DroppedOverlimit, not in Stats.Marked.
	DroppedProbabilistic uint64 `metric:"dropped_probabilistic_packets,counter"`
	MarkedProbabilistic  uint64 `metric:"marked_probabilistic_packets,counter"`
	DroppedForced        uint64 `metric:"dropped_forced_packets,counter"`
	MarkedForced         uint64 `metric:"marked_forced_packets,counter"`
	// Adaptations counts the changes Adaptive RED made to max_p.
	Adaptations uint64 `metric:"adaptations,counter"`
	// ByteMode reports whether Avg, the thresholds and the targets are in
	// bytes (true) or packets; their metric names end in _bytes or
	// _packets accordingly.
	ByteMode bool `metric:"-"`
	// MemoryBytes is the memory the queue preallocated for its
	// configuration: the packet ring (LimitPackets rounded up to a power of
	// two, times the size of an [aqm.Packet] of T) and the queue itself.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// metrics lists the values of d as [aqm.Metric]s with lower_snake names
// that carry their units ("_packets" or "_bytes" after the average and the
// thresholds, as ByteMode says).
func (d Detail) metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }

// memoryBytes is what the queue preallocates: the ring's slots (its
// capacity rounded up to a power of two, as the ring allocates them) and
// the queue value itself.
func (q *Queue[T]) memoryBytes() int {
	slots := 1
	for slots < q.ring.Cap() {
		slots <<= 1
	}
	return slots*int(unsafe.Sizeof(aqm.Packet[T]{})) + int(unsafe.Sizeof(*q))
}

// Detail returns a snapshot of RED's state.
func (q *Queue[T]) Detail() Detail {
	return Detail{
		Avg:                  q.avg,
		MaxP:                 q.maxP,
		Prob:                 float64(q.lastProb) / one,
		Count:                q.count,
		MinThreshold:         q.p.minTh,
		MaxThreshold:         q.p.maxTh,
		Weight:               q.p.w,
		TargetLow:            q.p.tgtLo,
		TargetHigh:           q.p.tgtHi,
		DroppedProbabilistic: q.cnt.probDrops,
		MarkedProbabilistic:  q.cnt.probMarks,
		DroppedForced:        q.cnt.forcedDrops,
		MarkedForced:         q.cnt.forcedMarks,
		Adaptations:          q.cnt.adaptations,
		ByteMode:             q.p.byteMode,
		MemoryBytes:          q.memoryBytes(),
	}
}
