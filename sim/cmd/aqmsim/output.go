package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aqmkit/aqmkit/sim"
)

// record is one run in the JSON output: the exact run (configuration,
// seed, AQM and its environment) and every metric.
type record struct {
	Run    sim.Run
	Result *sim.Result
}

func writeOutputs(o options, sc sim.Scenario, outs []sim.Outcome) error {
	base := filepath.Join(o.out, sc.Name)
	recs := make([]record, len(outs))
	for i, oc := range outs {
		recs[i] = record{oc.Run, oc.Result}
	}
	b, err := json.MarshalIndent(recs, "", " ")
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	if err := os.WriteFile(base+".json", b, 0o644); err != nil {
		return err
	}
	if err := writeCSV(base+".csv", outs); err != nil {
		return err
	}
	return writePlots(o, sc, outs)
}

// writeCSV writes one row per simulation: the run's identity and
// configuration, then every scalar metric, including every figure the
// printed tables show, under the same meaning. Counts and rates are over
// the measured period (after the warmup) unless the name says otherwise:
// drops is after the warmup, drops_run over the whole run. Goodput is what
// receivers deliver in order; goodput_mbps counts it on the wire,
// payload_goodput_mbps and the group_* columns as payload. Each named flow
// group has its own columns, group_<name>_…, empty where a run lacks the
// group.
func writeCSV(path string, outs []sim.Outcome) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	classes := []string{"all", "classic", "l4s", "udp", "short", "ping"}
	var groups []string
	for _, oc := range outs {
		for _, gr := range oc.Result.Groups {
			if gr.Group != "" && !slices.Contains(groups, gr.Group) {
				groups = append(groups, gr.Group)
			}
		}
	}
	slices.Sort(groups)
	hdr := []string{"scenario", "case", "aqm", "rep", "seed", "tcp_profile", "rate_bps", "bottleneck_mbps", "mss", "duration_s", "warmup_s", "buffer_pkts",
		"red_min_th", "red_max_th", "flows", "utilization", "goodput_mbps", "jain", "l4s_classic_ratio", "drops", "marks",
		"drops_per_s", "marks_per_s", "drop_fraction", "mark_fraction", "avg_queue_pkts", "avg_queue_bytes",
		"throughput_cov", "payload_goodput_mbps", "utilization_payload", "goodput_cov_100ms", "goodput_cov_1s",
		"flow_cov_100ms", "flow_cov_1s", "drops_run", "queue_grid_samples", "queue_grid_mean_pkts", "queue_grid_p99_pkts",
		"queue_grid_max_pkts"}
	for _, gname := range groups {
		for _, q := range []string{"goodput_mbps", "share_of_rate", "bin_sd_mbps", "bin_sd_after_1s_mbps", "rtt_p50_ms", "rtt_p99_ms"} {
			hdr = append(hdr, "group_"+gname+"_"+q)
		}
	}
	for _, c := range classes {
		for _, q := range []string{"count", "mean_ms", "p50_ms", "p99_ms", "p999_ms", "max_ms"} {
			hdr = append(hdr, "delay_"+c+"_"+q)
		}
	}
	hdr = append(hdr, "ping_count", "ping_mean_ms", "ping_p50_ms", "ping_p99_ms", "ping_p999_ms", "ping_max_ms",
		"fct_count", "fct_mean_ms", "fct_p50_ms", "fct_p99_ms", "fct_p999_ms", "fct_max_ms", "groups_goodput_mbps",
		"probe_added_p50_ms", "probe_added_p99_ms", "lab_goodput_share_of_rate",
		"reverse_utilization", "reverse_delay_p50_ms", "reverse_delay_p99_ms", "reverse_ack_drops", "forward_ack_drops",
		"events", "packets", "wall_s")
	if err := w.Write(hdr); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	ds := func(d sim.DelayStats) []string {
		return []string{u(d.Count), g(d.MeanMs), g(d.P50Ms), g(d.P99Ms), g(d.P999Ms), g(d.MaxMs)}
	}
	for _, oc := range outs {
		r, c := oc.Result, oc.Run.Config
		var specs []string
		for _, f := range c.Flows {
			specs = append(specs, fmt.Sprintf("%dx%v/%v", max(f.Count, 1), f.Kind, f.RTT))
		}
		row := []string{oc.Run.Scenario, oc.Run.Group, oc.Run.AQM, strconv.Itoa(oc.Run.Rep), u(c.Seed), c.TCP.Profile, g(c.RateBps),
			g(r.BottleneckMbps), strconv.Itoa(c.MSS), g(c.Duration.Seconds()), g(c.Warmup.Seconds()), strconv.Itoa(oc.Run.BufferPackets),
			strconv.Itoa(oc.Run.REDMinThreshold), strconv.Itoa(oc.Run.REDMaxThreshold), strings.Join(specs, " "),
			g(r.Utilization), g(r.GoodputMbps), g(r.Jain), g(r.L4SClassicRatio), u(r.Drops), u(r.Marks),
			g(r.DropsPerSec), g(r.MarksPerSec), g(r.DropFraction), g(r.MarkFraction), g(r.AvgQueuePackets),
			g(r.AvgQueueBytes), g(r.ThroughputCoV), g(r.PayloadGoodputMbps), g(r.PayloadUtilization),
			g(r.GoodputCoV100ms), g(r.GoodputCoV1s), g(r.FlowCoV100ms), g(r.FlowCoV1s), u(r.DropsWholeRun),
			u(r.QueueGrid.Samples), g(r.QueueGrid.MeanPackets), g(r.QueueGrid.P99Packets), strconv.Itoa(r.QueueGrid.MaxPackets)}
		for _, gname := range groups {
			has := false
			for _, gr := range r.Groups {
				has = has || gr.Group == gname
			}
			if !has {
				row = append(row, "", "", "", "", "", "")
				continue
			}
			gr := r.Group(gname)
			row = append(row, g(gr.GoodputMbps), g(gr.GoodputMbps/r.BottleneckMbps), g(gr.BinSDMbps), g(steadySD(gr)),
				g(gr.RTT.P50Ms), g(gr.RTT.P99Ms))
		}
		for _, cl := range classes {
			row = append(row, ds(r.Delay[cl])...)
		}
		row = append(row, ds(r.Ping)...)
		row = append(row, ds(r.FCT)...)
		groups := map[string]bool{}
		for _, f := range r.Flows {
			if f.Group != "" {
				groups[f.Group] = true
			}
		}
		var gs []string
		for k := range groups {
			gs = append(gs, k)
		}
		slices.Sort(gs)
		var gv []string
		for _, k := range gs {
			gv = append(gv, k+"="+g(r.GroupGoodputMbps(k)))
		}
		row = append(row, strings.Join(gv, " "), g(sim.LabProbeAddedMs(r, 0.5)), g(sim.LabProbeAddedMs(r, 0.99)),
			g(sim.LabGoodputShare(r)))
		if rv := r.Reverse; rv != nil {
			row = append(row, g(rv.Utilization), g(rv.Delay.P50Ms), g(rv.Delay.P99Ms), u(rv.AckDrops), u(rv.ForwardAckDrops))
		} else {
			row = append(row, "", "", "", "", "")
		}
		row = append(row, u(r.Events), u(r.Packets), g(r.WallSeconds))
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return f.Close()
}
