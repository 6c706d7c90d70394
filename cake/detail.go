package cake

import (
	"github.com/aqmkit/aqmkit/cobalt"
	"iter"
	"strconv"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
)

// TinStats is one tin's row of [Detail], the analogue of a tin column of
// "tc -s qdisc show" for cake.
type TinStats struct {
	// Name is the tin's name ("Bulk", "Best Effort", "Video", "Voice", or
	// "Tin N" in diffserv8 and precedence); Index its priority index in
	// this package (higher is served first when under its threshold).
	Name  string
	Index int
	// Threshold is the rate up to which the tin has priority (thresh).
	Threshold aqm.Rate
	// Target and Interval are the tin's COBALT parameters, raised from the
	// configured ones at low thresholds.
	Target, Interval time.Duration
	// PeakDelay, AvgDelay and SparseDelay are moving averages of the
	// sojourn times of sent packets: quick to rise, quick to fall and
	// plain (pk_delay, av_delay, sp_delay).
	PeakDelay, AvgDelay, SparseDelay time.Duration
	// Packets and Bytes count arrivals to the tin, including those later
	// dropped (pkts, bytes).
	Packets, Bytes uint64
	// BacklogPackets and BacklogBytes are queued now.
	BacklogPackets, BacklogBytes int
	// WayDirect, WayIndirect, WayMiss and WayCollision count flow lookups
	// that found the flow's home way, found it in another way, took a free
	// way, or shared an occupied one (way_inds, way_miss, way_cols).
	WayDirect, WayIndirect, WayMiss, WayCollision uint64
	// Drops counts COBALT and overload drops, Marks CE marks, ACKDrops the
	// ACK filter's drops.
	Drops, Marks, ACKDrops uint64
	// SparseFlows, BulkFlows, DecayingFlows and UnresponsiveFlows count the
	// tin's flow queues by state (sp_flows counts sparse and decaying ones
	// in tc); unresponsive flows have BLUE's probability above zero.
	SparseFlows, BulkFlows, DecayingFlows, UnresponsiveFlows int
	// MaxAdjustedLen is the largest overhead-adjusted length seen (max_len);
	// Quantum the tin's flow quantum in bytes.
	MaxAdjustedLen int
	Quantum        int
}

// Detail is CAKE's state beyond [aqm.Stats], as rich as tc's statistics.
type Detail struct {
	// MemoryBytes is what the queue preallocated for its configuration:
	// packet storage (LimitPackets+1 slots, plus the ACK summaries when the
	// filter is on), the flow and host tables and the pruner's heap.
	MemoryBytes int
	// MemoryUsed is the peak of the bytes queued (as Linux, a peak), and
	// MemoryLimit the byte limit.
	MemoryUsed, MemoryLimit int
	// Rate is the shaper's rate (zero: unshaped).
	Rate aqm.Rate
	// MinNetworkLen and MaxNetworkLen are the smallest and largest Size
	// seen; MinAdjustedLen and MaxAdjustedLen the same after overhead.
	MinNetworkLen, MaxNetworkLen, MinAdjustedLen, MaxAdjustedLen int
	// OverlimitDrops counts packets the overload pruner removed, ACKDrops
	// those the ACK filter removed.
	OverlimitDrops, ACKDrops uint64
	// NumTins is the number of tins; Tins[:NumTins] are their rows in tc's
	// display order.
	NumTins int
	Tins    [8]TinStats
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
		MemoryBytes: q.memoryBytes(), MemoryUsed: q.d.memPeak, MemoryLimit: q.memLimit, Rate: q.cfg.Rate,
		MinNetworkLen: int(q.d.minLen), MaxNetworkLen: int(q.d.maxLen),
		MinAdjustedLen: int(q.d.minAdj), MaxAdjustedLen: int(q.d.maxAdj),
		OverlimitDrops: q.d.overlimitDrops, ACKDrops: q.d.ackDrops, NumTins: q.ntins,
	}
	for k := range q.ntins {
		i := displayOrder(q.cfg.TinMode, k)
		b := &q.tins[i]
		name := "Tin " + strconv.Itoa(i)
		if n, ok := tinNames[q.cfg.TinMode]; ok {
			name = n[i]
		}
		ts := TinStats{
			Name: name, Index: i, Threshold: aqm.Rate(b.rateBytes * 8),
			Target: b.target, Interval: b.interval,
			PeakDelay: time.Duration(b.s.peakDelay), AvgDelay: time.Duration(b.s.avgDelay),
			SparseDelay: time.Duration(b.s.baseDelay),
			Packets:     b.s.arrived.Packets, Bytes: b.s.arrived.Bytes,
			BacklogPackets: b.pkts, BacklogBytes: b.backlog,
			WayDirect: b.s.wayDirect, WayIndirect: b.s.wayIndirect, WayMiss: b.s.wayMiss,
			WayCollision: b.s.wayCollision,
			Drops:        b.s.drops, Marks: b.s.marks, ACKDrops: b.s.ackDrops,
			SparseFlows: b.sparse, BulkFlows: b.bulk, DecayingFlows: b.decaying,
			MaxAdjustedLen: int(b.s.maxAdj), Quantum: int(b.quantum),
		}
		base := i * queuesPerTin
		for j := base; j < base+queuesPerTin; j++ {
			if q.flows[j].state != stNone && q.flows[j].cv.Active() {
				ts.UnresponsiveFlows++
			}
		}
		d.Tins[k] = ts
	}
	return d
}

// memoryBytes is what build allocated.
func (q *Queue[T]) memoryBytes() int {
	n := len(q.nodes)*int(unsafe.Sizeof(node[T]{})) + len(q.acks)*int(unsafe.Sizeof(ACKInfo{})) +
		len(q.flows)*int(unsafe.Sizeof(flow{})) + len(q.tags)*4 + 2*len(q.heap)*2 +
		len(q.tins)*int(unsafe.Sizeof(tin{}))
	for i := range q.tins {
		n += len(q.tins[i].hosts) * int(unsafe.Sizeof(host{}))
	}
	return n
}

// Metrics lists the values of d with tc-like names, units in the name;
// per-tin values are prefixed "tinK_" with K the display position.
func (d Detail) Metrics() iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		g := func(n string, v float64) bool { return yield(aqm.Metric{Name: n, Kind: aqm.Gauge, Value: v}) }
		c := func(n string, v uint64) bool { return yield(aqm.Metric{Name: n, Kind: aqm.Counter, Value: float64(v)}) }
		if !g("memory_bytes", float64(d.MemoryBytes)) || !g("max_memory_used_bytes", float64(d.MemoryUsed)) ||
			!g("memory_limit_bytes", float64(d.MemoryLimit)) || !g("capacity_estimate_bits_per_second", float64(d.Rate)) ||
			!g("min_network_len_bytes", float64(d.MinNetworkLen)) || !g("max_network_len_bytes", float64(d.MaxNetworkLen)) ||
			!g("min_adjusted_len_bytes", float64(d.MinAdjustedLen)) || !g("max_adjusted_len_bytes", float64(d.MaxAdjustedLen)) ||
			!c("evicted_overlimit_packets", d.OverlimitDrops) || !c("filtered_ack_packets", d.ACKDrops) {
			return
		}
		for k := range d.NumTins {
			t := &d.Tins[k]
			p := "tin" + strconv.Itoa(k) + "_"
			if !g(p+"thresh_bits_per_second", float64(t.Threshold)) || !g(p+"target_seconds", t.Target.Seconds()) ||
				!g(p+"interval_seconds", t.Interval.Seconds()) || !g(p+"peak_delay_seconds", t.PeakDelay.Seconds()) ||
				!g(p+"average_delay_seconds", t.AvgDelay.Seconds()) || !g(p+"sparse_delay_seconds", t.SparseDelay.Seconds()) ||
				!c(p+"arrived_packets", t.Packets) || !c(p+"arrived_bytes", t.Bytes) ||
				!g(p+"backlog_packets", float64(t.BacklogPackets)) || !g(p+"backlog_bytes", float64(t.BacklogBytes)) ||
				!c(p+"way_direct_hits", t.WayDirect) || !c(p+"way_indirect_hits", t.WayIndirect) ||
				!c(p+"way_misses", t.WayMiss) || !c(p+"way_collisions", t.WayCollision) ||
				!c(p+"dropped_packets", t.Drops) || !c(p+"marked_packets", t.Marks) || !c(p+"filtered_ack_packets", t.ACKDrops) ||
				!g(p+"sparse_flows", float64(t.SparseFlows)) || !g(p+"bulk_flows", float64(t.BulkFlows)) ||
				!g(p+"decaying_flows", float64(t.DecayingFlows)) || !g(p+"unresponsive_flows", float64(t.UnresponsiveFlows)) ||
				!g(p+"max_adjusted_len_bytes", float64(t.MaxAdjustedLen)) || !g(p+"quantum_bytes", float64(t.Quantum)) {
				return
			}
		}
	}
}

// FlowStats is the state of one flow queue, the analogue of a class of
// "tc -s class show" for cake.
type FlowStats struct {
	// Tin is the tin's index and Queue the flow queue's way in it
	// (0..1023).
	Tin, Queue int
	// Packets and Bytes are queued now; Deficit is the DRR credit.
	Packets, Bytes, Deficit int
	// State is "idle", "sparse", "sparse-wait", "bulk" or "decaying".
	State string
	// COBALT is the flow's COBALT state (count, dropping, next signal time,
	// BLUE probability).
	COBALT cobalt.State
}

var stateNames = [...]string{"idle", "sparse", "sparse-wait", "bulk", "decaying"}

// Flow returns the flow queue that holds the flow of a packet with the
// given hash and info (as [Queue.EnqueueInfo] would classify it), without
// changing anything. It reports false if no flow queue is tagged with that
// flow (it never arrived, or another flow took its way over).
func (q *Queue[T]) Flow(hash uint32, info Info) (FlowStats, bool) {
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
			return FlowStats{}, false
		}
	}
	f := &q.flows[fi]
	n := 0
	for x := f.head; x != nilIdx; x = q.nodes[x].next {
		n++
	}
	return FlowStats{
		Tin: t, Queue: int(fi - base), Packets: n, Bytes: int(f.backlog), Deficit: int(f.deficit),
		State: stateNames[f.state], COBALT: f.cv.State(),
	}, true
}
