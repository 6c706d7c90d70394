package cake

import (
	"iter"
	"strconv"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/metrics"

	"github.com/aqmkit/aqmkit/aqm"
)

// TinDetail is one tin's row of [Detail], the analogue of a tin column of
// "tc -s qdisc show" for cake.
type TinDetail struct {
	// Name is the tin's name ("Bulk", "Best Effort", "Video", "Voice", or
	// "Tin N" in diffserv8 and precedence); Index its priority index in
	// this package (higher is served first when under its threshold).
	Name  string `metric:"-"`
	Index int    `metric:"-"`
	// Threshold is the rate up to which the tin has priority (thresh).
	Threshold aqm.Rate `metric:"thresh_bits_per_second,gauge"`
	// Target and Interval are the tin's COBALT parameters, raised from the
	// configured ones at low thresholds.
	Target   time.Duration `metric:"target_seconds,gauge"`
	Interval time.Duration `metric:"interval_seconds,gauge"`
	// PeakDelay, AvgDelay and SparseDelay are moving averages of the
	// sojourn times of sent packets: quick to rise, quick to fall and
	// plain (pk_delay, av_delay, sp_delay).
	PeakDelay   time.Duration `metric:"peak_delay_seconds,gauge"`
	AvgDelay    time.Duration `metric:"average_delay_seconds,gauge"`
	SparseDelay time.Duration `metric:"sparse_delay_seconds,gauge"`
	// Packets and Bytes count arrivals to the tin, including those later
	// dropped (pkts, bytes).
	Packets uint64 `metric:"arrived_packets,counter"`
	Bytes   uint64 `metric:"arrived_bytes,counter"`
	// BacklogPackets and BacklogBytes are queued now.
	BacklogPackets int `metric:"backlog_packets,gauge"`
	BacklogBytes   int `metric:"backlog_bytes,gauge"`
	// WayDirect, WayIndirect, WayMiss and WayCollision count flow lookups
	// that found the flow's home way, found it in another way, took a free
	// way, or shared an occupied one (way_inds, way_miss, way_cols).
	WayDirect    uint64 `metric:"way_direct_hits,counter"`
	WayIndirect  uint64 `metric:"way_indirect_hits,counter"`
	WayMiss      uint64 `metric:"way_misses,counter"`
	WayCollision uint64 `metric:"way_collisions,counter"`
	// Dropped counts COBALT and overload drops, Marked CE marks,
	// FilteredACKs the ACK filter's drops.
	Dropped      uint64 `metric:"dropped_packets,counter"`
	Marked       uint64 `metric:"marked_packets,counter"`
	FilteredACKs uint64 `metric:"filtered_ack_packets,counter"`
	// SparseFlows, BulkFlows, DecayingFlows and UnresponsiveFlows count the
	// tin's flow queues by state (sp_flows counts sparse and decaying ones
	// in tc); unresponsive flows have BLUE's probability above zero.
	SparseFlows       int `metric:"sparse_flows,gauge"`
	BulkFlows         int `metric:"bulk_flows,gauge"`
	DecayingFlows     int `metric:"decaying_flows,gauge"`
	UnresponsiveFlows int `metric:"unresponsive_flows,gauge"`
	// MaxAdjustedLen is the largest overhead-adjusted length seen (max_len);
	// Quantum the tin's flow quantum in bytes.
	MaxAdjustedLen int `metric:"max_adjusted_len_bytes,gauge"`
	Quantum        int `metric:"quantum_bytes,gauge"`
}

// Detail is CAKE's state beyond [aqm.Stats], as rich as tc's statistics.
type Detail struct {
	// MemoryBytes is what the queue preallocated for its configuration:
	// packet storage (LimitPackets+1 slots, plus the ACK summaries when the
	// filter is on), the flow and host tables and the pruner's heap.
	MemoryBytes int `metric:"memory_bytes,gauge"`
	// MaxMemoryUsed is the peak of the bytes queued (Linux memory_used, also a peak), and
	// MemoryLimit the byte limit.
	MaxMemoryUsed int `metric:"max_memory_used_bytes,gauge"`
	MemoryLimit   int `metric:"memory_limit_bytes,gauge"`
	// Rate is the shaper's rate (zero: unshaped).
	Rate aqm.Rate `metric:"capacity_estimate_bits_per_second,gauge"`
	// MinNetworkLen and MaxNetworkLen are the smallest and largest Size
	// seen; MinAdjustedLen and MaxAdjustedLen the same after overhead.
	MinNetworkLen  int `metric:"min_network_len_bytes,gauge"`
	MaxNetworkLen  int `metric:"max_network_len_bytes,gauge"`
	MinAdjustedLen int `metric:"min_adjusted_len_bytes,gauge"`
	MaxAdjustedLen int `metric:"max_adjusted_len_bytes,gauge"`
	// EvictedOverlimit counts packets the overload pruner removed,
	// FilteredACKs those the ACK filter removed.
	EvictedOverlimit uint64 `metric:"evicted_overlimit_packets,counter"`
	FilteredACKs     uint64 `metric:"filtered_ack_packets,counter"`
	// GuardDiverted counts packets the flood guard sent to a tin's shared
	// queue, GuardDropped those it dropped from a shared queue's head for
	// waiting longer than the tin's target, GuardPromoted the new flows
	// that earned a way by recurring (see the package doc).
	GuardDiverted uint64 `metric:"diverted_flood_guard_packets,counter"`
	GuardDropped  uint64 `metric:"dropped_flood_guard_packets,counter"`
	GuardPromoted uint64 `metric:"promoted_flood_guard_flows,counter"`
	// NumTins is the number of tins; Tins[:NumTins] are their rows in tc's
	// display order, listed by Metrics with the prefix "tinK_" (K the
	// display position).
	NumTins int          `metric:"-"`
	Tins    [8]TinDetail `metric:"tin,each=NumTins"`
}

var tinNames = map[TinMode][]string{
	DiffServ3:  {"Best Effort", "Bulk", "Voice"},
	DiffServ4:  {"Best Effort", "Bulk", "Video", "Voice"},
	BestEffort: {"Tin 0"},
}

// Detail returns a snapshot of CAKE's statistics. It scans the flow
// table, O(flows).
func (q *Queue[T]) Detail() Detail {
	d := Detail{
		MemoryBytes: q.memoryBytes(), MaxMemoryUsed: q.d.memPeak, MemoryLimit: q.memLimit, Rate: q.cfg.Rate,
		MinNetworkLen: int(q.d.minLen), MaxNetworkLen: int(q.d.maxLen),
		MinAdjustedLen: int(q.d.minAdj), MaxAdjustedLen: int(q.d.maxAdj),
		EvictedOverlimit: q.d.overlimitDrops, FilteredACKs: q.d.ackDrops, NumTins: q.ntins,
		GuardDiverted: q.g.diverted, GuardDropped: q.g.dropped, GuardPromoted: q.g.promoted,
	}
	for k := range q.ntins {
		i := displayOrder(q.cfg.TinMode, k)
		b := &q.tins[i]
		name := "Tin " + strconv.Itoa(i)
		if n, ok := tinNames[q.cfg.TinMode]; ok {
			name = n[i]
		}
		ts := TinDetail{
			Name: name, Index: i, Threshold: aqm.Rate(b.rateBytes * 8),
			Target: b.target, Interval: b.interval,
			PeakDelay: time.Duration(b.s.peakDelay), AvgDelay: time.Duration(b.s.avgDelay),
			SparseDelay: time.Duration(b.s.baseDelay),
			Packets:     b.s.arrived.Packets, Bytes: b.s.arrived.Bytes,
			BacklogPackets: b.pkts, BacklogBytes: b.backlog,
			WayDirect: b.s.wayDirect, WayIndirect: b.s.wayIndirect, WayMiss: b.s.wayMiss,
			WayCollision: b.s.wayCollision,
			Dropped:      b.s.drops, Marked: b.s.marks, FilteredACKs: b.s.ackDrops,
			SparseFlows: b.sparse, BulkFlows: b.bulk, DecayingFlows: b.decaying,
			MaxAdjustedLen: int(b.s.maxAdj), Quantum: int(b.quantum),
		}
		base := i * queuesPerTin
		for j := base; j < base+queuesPerTin; j++ {
			if q.flows[j].state != stNone && q.flows[j].cv.State().BlueProbability > 0 {
				ts.UnresponsiveFlows++
			}
		}
		d.Tins[k] = ts
	}
	return d
}

// memoryBytes is what build allocated.
func (q *Queue[T]) memoryBytes() int {
	n := len(q.nodes)*int(unsafe.Sizeof(node[T]{})) + len(q.acks)*int(unsafe.Sizeof(ackInfo{})) +
		len(q.flows)*int(unsafe.Sizeof(flow{})) + len(q.tags)*4 + 2*len(q.heap)*2 +
		len(q.tins)*int(unsafe.Sizeof(tin{})) +
		len(q.g.sets)*int(unsafe.Sizeof(guardSet{})) + len(q.g.tins)*int(unsafe.Sizeof(guardTin{}))
	for i := range q.tins {
		n += len(q.tins[i].hosts) * int(unsafe.Sizeof(host{}))
	}
	return n
}

// metrics lists the values of d with tc-like names, units in the name;
// per-tin values are prefixed "tinK_" with K the display position.
func (d Detail) metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }

// FlowDetail is the state of one flow queue, the analogue of a class of
// "tc -s class show" for cake.
type FlowDetail struct {
	// Tin is the tin's index and Queue the flow queue's way in it
	// (0..1023).
	Tin, Queue int
	// Packets and Bytes are queued now; Deficit is the DRR credit.
	Packets, Bytes, Deficit int
	// State is the flow queue's place in the DRR++ lists.
	State FlowState
	// Cobalt is the flow's COBALT state (count, dropping, next signal time,
	// BLUE probability).
	Cobalt cobalt.State
}

// FlowState is where a flow queue stands in CAKE's DRR++ scheduler.
type FlowState uint8

// The states of a flow queue (Linux's flow sets).
const (
	FlowIdle       FlowState = iota // no packets, on no list
	FlowSparse                      // on the new list
	FlowSparseWait                  // counted sparse, already on the old list
	FlowBulk                        // on the old list with packets
	FlowDecaying                    // empty, its COBALT not yet at rest
)

var stateNames = [...]string{"idle", "sparse", "sparse-wait", "bulk", "decaying"}

// String returns tc's word for s: "idle", "sparse", "sparse-wait", "bulk"
// or "decaying".
func (s FlowState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "FlowState(" + strconv.Itoa(int(s)) + ")"
}

// Flow returns the flow queue that holds the flow of a packet with the
// given hash and info (as [Queue.EnqueueInfo] would classify it), without
// changing anything. It reports false if no flow queue is tagged with that
// flow (it never arrived, or another flow took its way over).
func (q *Queue[T]) Flow(hash uint32, info Info) (FlowDetail, bool) {
	t := 0
	if q.ntins > 1 {
		t = int(q.dscpTin[info.DSCP&63])
	}
	base := uint32(t) * queuesPerTin
	fi := base
	if q.mode != 0 {
		fh := hash
		if q.mode&bitFlows == 0 {
			fh = 0
			if q.mode&bitSrc != 0 {
				fh ^= info.SrcHost
			}
			if q.mode&bitDst != 0 {
				fh ^= info.DstHost
			}
		}
		h := q.mix(fh)
		home := uint32(uint64(h) * queuesPerTin >> 32)
		set := home &^ (ways - 1)
		found := false
		for i := range uint32(ways) {
			w := set + (home+i)&(ways-1)
			if q.tags[base+w] == h {
				fi, found = base+w, true
				break
			}
		}
		if !found {
			return FlowDetail{}, false
		}
	}
	f := &q.flows[fi]
	n := 0
	for x := f.head; x != nilIdx; x = q.nodes[x].next {
		n++
	}
	return FlowDetail{
		Tin: t, Queue: int(fi - base), Packets: n, Bytes: int(f.backlog), Deficit: int(f.deficit),
		State: FlowState(f.state), Cobalt: f.cv.State(),
	}, true
}
