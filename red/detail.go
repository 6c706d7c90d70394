package red

import (
	"iter"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
)

// Detail is a snapshot of RED's state, the analogue of Linux's RED xstats.
type Detail struct {
	// Avg is the average queue as of the last arrival (or the last
	// adaptation), in packets, or bytes in ByteMode.
	Avg float64
	// MaxP is the current max_p; Adaptive RED moves it.
	MaxP float64
	// Prob is p_b, the early drop probability before the count
	// uniformization and the byte-mode scaling, at the last arrival whose
	// average was at or above MinThreshold; 1 in the forced region.
	Prob float64
	// Count is the number of arrivals since the last early signal while the
	// average stayed in the probabilistic band, or −1 when the last
	// arrival's average was outside it.
	Count int64
	// MinThreshold, MaxThreshold and Weight are the thresholds and w_q in
	// use (after defaults).
	MinThreshold, MaxThreshold float64
	Weight                     float64
	// TargetLow and TargetHigh are Adaptive RED's target band for the
	// average: 0.4 and 0.6 of the way from MinThreshold to MaxThreshold.
	TargetLow, TargetHigh float64
	// ProbDrops and ProbMarks count probabilistic early signals, dropped or
	// marked. ForcedDrops and ForcedMarks count signals where the average
	// was at or above MaxThreshold (2·MaxThreshold with Gentle); ForcedDrops
	// includes the ECN-capable packets dropped as [aqm.DroppedOverload]. A
	// signal is counted when decided: a marked packet then refused by a
	// full hard limit is in ProbMarks or ForcedMarks and in
	// Stats.DroppedOverlimit, not in Stats.Marked.
	ProbDrops, ProbMarks, ForcedDrops, ForcedMarks uint64
	// Adaptations counts the changes Adaptive RED made to max_p.
	Adaptations uint64
	// ByteMode reports whether Avg, the thresholds and the targets are in
	// bytes (true) or packets.
	ByteMode bool
	// MemoryBytes is the memory the queue preallocated for its
	// configuration: the packet ring (LimitPackets rounded up to a power of
	// two, times the size of an [aqm.Packet] of T) and the queue itself.
	MemoryBytes int
}

// Metrics lists the values of d as [aqm.Metric]s with lower_snake names
// that carry their units ("_packets" or "_bytes" after the average and the
// thresholds, as ByteMode says).
func (d Detail) Metrics() iter.Seq[aqm.Metric] {
	unit := "_packets"
	if d.ByteMode {
		unit = "_bytes"
	}
	ms := [...]aqm.Metric{
		{Name: "average_queue" + unit, Kind: aqm.Gauge, Value: d.Avg},
		{Name: "max_probability", Kind: aqm.Gauge, Value: d.MaxP},
		{Name: "probability", Kind: aqm.Gauge, Value: d.Prob},
		{Name: "count_packets", Kind: aqm.Gauge, Value: float64(d.Count)},
		{Name: "min_threshold" + unit, Kind: aqm.Gauge, Value: d.MinThreshold},
		{Name: "max_threshold" + unit, Kind: aqm.Gauge, Value: d.MaxThreshold},
		{Name: "weight", Kind: aqm.Gauge, Value: d.Weight},
		{Name: "target_low" + unit, Kind: aqm.Gauge, Value: d.TargetLow},
		{Name: "target_high" + unit, Kind: aqm.Gauge, Value: d.TargetHigh},
		{Name: "early_dropped_packets", Kind: aqm.Counter, Value: float64(d.ProbDrops)},
		{Name: "early_marked_packets", Kind: aqm.Counter, Value: float64(d.ProbMarks)},
		{Name: "forced_dropped_packets", Kind: aqm.Counter, Value: float64(d.ForcedDrops)},
		{Name: "forced_marked_packets", Kind: aqm.Counter, Value: float64(d.ForcedMarks)},
		{Name: "adaptations", Kind: aqm.Counter, Value: float64(d.Adaptations)},
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
		Avg:          q.avg,
		MaxP:         q.maxP,
		Prob:         float64(q.lastProb) / one,
		Count:        q.count,
		MinThreshold: q.p.minTh,
		MaxThreshold: q.p.maxTh,
		Weight:       q.p.w,
		TargetLow:    q.p.tgtLo,
		TargetHigh:   q.p.tgtHi,
		ProbDrops:    q.cnt.probDrops,
		ProbMarks:    q.cnt.probMarks,
		ForcedDrops:  q.cnt.forcedDrops,
		ForcedMarks:  q.cnt.forcedMarks,
		Adaptations:  q.cnt.adaptations,
		ByteMode:     q.p.byteMode,
		MemoryBytes:  q.memoryBytes(),
	}
}
