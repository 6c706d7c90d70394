package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aqmkit/aqmkit/sim"
)

// column is one metric of a table: a name, how to read it from a result,
// its number format, and the CSV column that carries it (the value there
// times scale; an empty CSV cell reads as 0).
type column struct {
	name  string
	get   func(r *sim.Result) float64
	fmt   string
	csv   string
	scale float64
}

func delay(class string, q func(sim.DelayStats) float64) func(r *sim.Result) float64 {
	return func(r *sim.Result) float64 { return q(r.Delay[class]) }
}

func p50(d sim.DelayStats) float64  { return d.P50Ms }
func p99(d sim.DelayStats) float64  { return d.P99Ms }
func mean(d sim.DelayStats) float64 { return d.MeanMs }

var (
	colUtil    = column{"util%", func(r *sim.Result) float64 { return 100 * r.Utilization }, "%.1f", "utilization", 100}
	colGood    = column{"goodput Mb/s", func(r *sim.Result) float64 { return r.GoodputMbps }, "%.2f", "goodput_mbps", 1}
	colJain    = column{"Jain", func(r *sim.Result) float64 { return r.Jain }, "%.3f", "jain", 1}
	colDropPct = column{"drop%", func(r *sim.Result) float64 { return 100 * r.DropFraction }, "%.2f", "drop_fraction", 100}
	colMarkPct = column{"mark%", func(r *sim.Result) float64 { return 100 * r.MarkFraction }, "%.2f", "mark_fraction", 100}
	colPing50  = column{"ping p50 ms", func(r *sim.Result) float64 { return r.Ping.P50Ms }, "%.1f", "ping_p50_ms", 1}
	colPing99  = column{"ping p99 ms", func(r *sim.Result) float64 { return r.Ping.P99Ms }, "%.1f", "ping_p99_ms", 1}
)

// columnsFor returns a scenario's table columns.
func columnsFor(name string) []column {
	switch name {
	case "red-family":
		return []column{
			{"payload Mb/s", func(r *sim.Result) float64 { return r.PayloadGoodputMbps }, "%.3f", "payload_goodput_mbps", 1},
			{"util% wire", func(r *sim.Result) float64 { return 100 * r.Utilization }, "%.1f", "utilization", 100},
			{"util% payload", func(r *sim.Result) float64 { return 100 * r.PayloadUtilization }, "%.1f", "utilization_payload", 100},
			{"CoV% 100ms", func(r *sim.Result) float64 { return 100 * r.GoodputCoV100ms }, "%.1f", "goodput_cov_100ms", 100},
			{"CoV% 1s", func(r *sim.Result) float64 { return 100 * r.GoodputCoV1s }, "%.1f", "goodput_cov_1s", 100},
			{"flow CoV% 100ms", func(r *sim.Result) float64 { return 100 * r.FlowCoV100ms }, "%.1f", "flow_cov_100ms", 100},
			{"flow CoV% 1s", func(r *sim.Result) float64 { return 100 * r.FlowCoV1s }, "%.1f", "flow_cov_1s", 100},
			{"drops (run)", func(r *sim.Result) float64 { return float64(r.DropsWholeRun) }, "%.0f", "drops_run", 1},
			{"queue mean pkts", func(r *sim.Result) float64 { return r.QueueGrid.MeanPackets }, "%.2f", "queue_grid_mean_pkts", 1},
			{"queue p99 pkts", func(r *sim.Result) float64 { return r.QueueGrid.P99Packets }, "%.0f", "queue_grid_p99_pkts", 1},
			{"mean delay ms", delay("all", mean), "%.1f", "delay_all_mean_ms", 1}, colJain}
	case "l4s":
		return []column{
			{"L4S p50 ms", delay("l4s", p50), "%.3f", "delay_l4s_p50_ms", 1}, {"L4S p99 ms", delay("l4s", p99), "%.2f", "delay_l4s_p99_ms", 1},
			{"Classic p50 ms", delay("classic", p50), "%.2f", "delay_classic_p50_ms", 1}, {"Classic p99 ms", delay("classic", p99), "%.1f", "delay_classic_p99_ms", 1},
			{"L4S:Classic", func(r *sim.Result) float64 { return r.L4SClassicRatio }, "%.2f", "l4s_classic_ratio", 1},
			colUtil, colMarkPct, colDropPct}
	case "lab":
		return []column{
			{"added p50 ms", func(r *sim.Result) float64 { return sim.LabProbeAddedMs(r, 0.5) }, "%.1f", "probe_added_p50_ms", 1},
			{"added p99 ms", func(r *sim.Result) float64 { return sim.LabProbeAddedMs(r, 0.99) }, "%.1f", "probe_added_p99_ms", 1},
			{"goodput % of rate", func(r *sim.Result) float64 { return 100 * sim.LabGoodputShare(r) }, "%.1f", "lab_goodput_share_of_rate", 100},
			colJain, colPing50, colPing99, colDropPct}
	case "speedtest":
		test := func(r *sim.Result) sim.GroupResult { return r.Group("test") }
		return []column{
			{"test Mb/s", func(r *sim.Result) float64 { return test(r).GoodputMbps }, "%.1f", "group_test_goodput_mbps", 1},
			{"% of rate", func(r *sim.Result) float64 { return 100 * test(r).GoodputMbps / r.BottleneckMbps }, "%.1f", "group_test_share_of_rate", 100},
			{"inst sd Mb/s", func(r *sim.Result) float64 { return test(r).BinSDMbps }, "%.2f", "group_test_bin_sd_mbps", 1},
			{"inst sd >1s", func(r *sim.Result) float64 { return steadySD(test(r)) }, "%.2f", "group_test_bin_sd_after_1s_mbps", 1},
			{"RTT p50 ms", func(r *sim.Result) float64 { return test(r).RTT.P50Ms }, "%.1f", "group_test_rtt_p50_ms", 1},
			{"RTT p99 ms", func(r *sim.Result) float64 { return test(r).RTT.P99Ms }, "%.1f", "group_test_rtt_p99_ms", 1},
			{"cross Mb/s", func(r *sim.Result) float64 { return r.Group("cross").GoodputMbps }, "%.1f", "group_cross_goodput_mbps", 1},
			colUtil, colDropPct}
	}
	return []column{colUtil, colGood, colJain,
		{"delay p50 ms", delay("all", p50), "%.1f", "delay_all_p50_ms", 1}, {"delay p99 ms", delay("all", p99), "%.1f", "delay_all_p99_ms", 1},
		colPing50, colPing99,
		{"FCT p50 ms", func(r *sim.Result) float64 { return r.FCT.P50Ms }, "%.0f", "fct_p50_ms", 1},
		{"FCT p99 ms", func(r *sim.Result) float64 { return r.FCT.P99Ms }, "%.0f", "fct_p99_ms", 1},
		colDropPct, colMarkPct}
}

// cell aggregates one (group, AQM) over its repetitions.
type cell struct {
	group, aqm string
	results    []*sim.Result
}

func cells(outs []sim.Outcome) []*cell {
	var order []*cell
	idx := map[[2]string]*cell{}
	for _, oc := range outs {
		k := [2]string{oc.Run.Group, oc.Run.AQM}
		c, ok := idx[k]
		if !ok {
			c = &cell{group: k[0], aqm: k[1]}
			idx[k] = c
			order = append(order, c)
		}
		c.results = append(c.results, oc.Result)
	}
	return order
}

// meanSD returns the mean and sample standard deviation of xs.
func meanSD(xs []float64) (m, sd float64) {
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	for _, x := range xs {
		sd += (x - m) * (x - m)
	}
	return m, math.Sqrt(sd / float64(len(xs)-1))
}

func printReport(w io.Writer, sc sim.Scenario, o options, outs []sim.Outcome, reps int, elapsed time.Duration) {
	fmt.Fprintf(w, "scenario %s: %s\n", sc.Name, sc.Desc)
	if sc.Published != "" {
		fmt.Fprintf(w, "published: %s\n", sc.Published)
	}
	if miss := sim.MissingAQMs(sim.ScenarioAQMs(sc.Name)); len(miss) > 0 && len(o.sim.AQMs) == 0 {
		fmt.Fprintf(w, "not built yet, skipped: %s\n", strings.Join(miss, ", "))
	}
	var profiles []string
	for _, oc := range outs {
		if p := oc.Run.Config.TCP.Profile; p != "" && !slices.Contains(profiles, p) {
			profiles = append(profiles, p)
		}
	}
	if len(profiles) > 0 {
		fmt.Fprintf(w, "TCP profile: %s\n", strings.Join(profiles, ", "))
	}
	if reps > 1 {
		fmt.Fprintf(w, "values are mean ± sample standard deviation over %d seeds (%d…%d)\n", reps, o.sim.Seed, o.sim.Seed+uint64(reps)-1)
	} else {
		fmt.Fprintf(w, "seed %d\n", o.sim.Seed)
	}
	fmt.Fprintln(w)
	cols := columnsFor(sc.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := []string{"case", "aqm"}
	for _, c := range cols {
		hdr = append(hdr, c.name)
	}
	fmt.Fprintln(tw, strings.Join(hdr, "\t")+"\t")
	var events, packets uint64
	var wall float64
	last := ""
	for _, c := range cells(outs) {
		g := c.group
		if g == last {
			g = ""
		}
		last = c.group
		row := []string{g, c.aqm}
		for _, col := range cols {
			xs := make([]float64, len(c.results))
			for i, r := range c.results {
				xs[i] = col.get(r)
			}
			m, sd := meanSD(xs)
			s := fmt.Sprintf(col.fmt, m)
			if len(xs) > 1 {
				s += "±" + fmt.Sprintf(col.fmt, sd)
			}
			row = append(row, s)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		for _, r := range c.results {
			events += r.Events
			packets += r.Packets
			wall += r.WallSeconds
		}
	}
	tw.Flush()
	switch sc.Name {
	case "red-family":
		printRedPublished(w, outs)
	case "speedtest":
		printSpeedtestFindings(w, outs)
	case "l4s":
		printL4SBalance(w, outs)
	case "autorate":
		printAutorateFloors(w, outs)
	}
	fmt.Fprintf(w, "\n%d simulations, %.3g simulated packets, %.3g events in %.1fs (%.2g events/s per core)\n",
		len(outs), float64(packets), float64(events), elapsed.Seconds(), float64(events)/wall)
}

// printRedPublished sets the base case of the red-family scenario next to
// the published figures, metric by metric.
func printRedPublished(w io.Writer, outs []sim.Outcome) {
	fmt.Fprintf(w, "\npublished (ns-3 study) against ours (base case, mean ± sd over seeds):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "aqm\tmetric\tpublished\tours\t")
	for _, c := range cells(outs) {
		if c.group != "base" {
			continue
		}
		good, cv, drops, mq, pq := sim.RedFamilyPublished(c.aqm)
		for _, m := range []struct {
			name string
			pub  float64
			get  func(r *sim.Result) float64
			f    string
		}{
			{"goodput Mb/s", good, func(r *sim.Result) float64 { return r.PayloadGoodputMbps }, "%.3f"},
			{"utilization % (payload)", 100 * good / 2, func(r *sim.Result) float64 { return 100 * r.PayloadUtilization }, "%.1f"},
			{"aggregate CoV % (100 ms)", cv, func(r *sim.Result) float64 { return 100 * r.GoodputCoV100ms }, "%.1f"},
			{"aggregate CoV % (1 s)", cv, func(r *sim.Result) float64 { return 100 * r.GoodputCoV1s }, "%.1f"},
			{"per-receiver CoV % (100 ms)", cv, func(r *sim.Result) float64 { return 100 * r.FlowCoV100ms }, "%.1f"},
			{"per-receiver CoV % (1 s)", cv, func(r *sim.Result) float64 { return 100 * r.FlowCoV1s }, "%.1f"},
			{"drops over the run", drops, func(r *sim.Result) float64 { return float64(r.DropsWholeRun) }, "%.0f"},
			{"mean queue pkts", mq, func(r *sim.Result) float64 { return r.QueueGrid.MeanPackets }, "%.2f"},
			{"p99 queue pkts", pq, func(r *sim.Result) float64 { return r.QueueGrid.P99Packets }, "%.0f"},
		} {
			if m.pub == 0 {
				continue
			}
			xs := make([]float64, len(c.results))
			for i, r := range c.results {
				xs[i] = m.get(r)
			}
			mu, sd := meanSD(xs)
			fmt.Fprintf(tw, "%s\t%s\t"+m.f+"\t"+m.f+"±"+m.f+"\t\n", c.aqm, m.name, m.pub, mu, sd)
		}
	}
	tw.Flush()
}

// printSpeedtestFindings condenses the speedtest matrix into the study's
// three findings: burst allowance against throughput per rate, the
// instantaneous-throughput spread of FQ-CoDel at 900 Mb/s, and how each
// queue splits the link between the test and the cross traffic.
func printSpeedtestFindings(w io.Writer, outs []sim.Outcome) {
	type key struct{ tool, rate, burst, cross, aqm string }
	vals := map[key][]*sim.Result{}
	var tools, rates, aqms []string
	seen := map[string]bool{}
	add := func(list *[]string, v string) {
		if !seen[v] {
			seen[v] = true
			*list = append(*list, v)
		}
	}
	for _, oc := range outs {
		p := oc.Run.Params
		if p == nil {
			return // the 8-flow variant has no matrix
		}
		add(&tools, "tool:"+p["tool"])
		add(&rates, "rate:"+p["rate_mbps"])
		add(&aqms, "aqm:"+oc.Run.AQM)
		k := key{p["tool"], p["rate_mbps"], p["burst"], p["cross"], oc.Run.AQM}
		vals[k] = append(vals[k], oc.Result)
	}
	strip := func(xs []string) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = x[strings.Index(x, ":")+1:]
		}
		return out
	}
	tl, rl, al := strip(tools), strip(rates), strip(aqms)
	avg := func(k key, get func(*sim.Result) float64) (float64, float64, bool) {
		rs := vals[k]
		if len(rs) == 0 {
			return 0, 0, false
		}
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = get(r)
		}
		m, sd := meanSD(xs)
		return m, sd, true
	}
	share := func(r *sim.Result) float64 { return 100 * r.Group("test").GoodputMbps / r.BottleneckMbps }

	fmt.Fprintf(w, "\nfinding 1: burst allowance and throughput (test goodput as %% of the shaped rate, no cross traffic, mean over AQMs and seeds):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tool\trate Mb/s\tburst off\tburst on\t")
	for _, t := range tl {
		for _, rate := range rl {
			row := []string{t, rate}
			for _, b := range []string{"off", "on"} {
				var xs []float64
				for _, a := range al {
					for _, r := range vals[key{t, rate, b, "off", a}] {
						xs = append(xs, share(r))
					}
				}
				if len(xs) == 0 {
					row = append(row, "-")
					continue
				}
				m, _ := meanSD(xs)
				row = append(row, fmt.Sprintf("%.1f", m))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	tw.Flush()

	fmt.Fprintf(w, "\nfinding 2: std-dev of instantaneous throughput (100 ms bins, Mb/s), FQ-CoDel at 900 Mb/s, over the whole test and after its first second (published: 138 Mb/s with cross traffic and burst shaping, 1.51 Mb/s with neither):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tool\tcross+burst\tneither\tcross+burst >1s\tneither >1s\t")
	for _, t := range tl {
		sd := func(r *sim.Result) float64 { return r.Group("test").BinSDMbps }
		sd1 := func(r *sim.Result) float64 { return steadySD(r.Group("test")) }
		a, as, ok1 := avg(key{t, "900", "on", "on", "fq-codel"}, sd)
		b, bs, ok2 := avg(key{t, "900", "off", "off", "fq-codel"}, sd)
		c, cs, _ := avg(key{t, "900", "on", "on", "fq-codel"}, sd1)
		d, ds, _ := avg(key{t, "900", "off", "off", "fq-codel"}, sd1)
		if ok1 && ok2 {
			fmt.Fprintf(tw, "%s\t%.2f±%.2f\t%.2f±%.2f\t%.2f±%.2f\t%.2f±%.2f\t\n", t, a, as, b, bs, c, cs, d, ds)
		}
	}
	tw.Flush()

	fmt.Fprintf(w, "\nfinding 3: the test's share of the shaped rate with cross traffic (%%, burst on, mean over rates and seeds):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tool\t"+strings.Join(al, "\t")+"\t")
	for _, t := range tl {
		row := []string{t}
		for _, a := range al {
			var xs []float64
			for _, rate := range rl {
				for _, r := range vals[key{t, rate, "on", "on", a}] {
					xs = append(xs, share(r))
				}
			}
			if len(xs) == 0 {
				row = append(row, "-")
				continue
			}
			m, _ := meanSD(xs)
			row = append(row, fmt.Sprintf("%.1f", m))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

// printL4SBalance sets the L4S:Classic rate ratio per mix, RTT and queue
// with Prague's RTT independence on and off side by side (the DualQ paper
// reports rough balance, a ratio near 1, under DualPI2).
func printL4SBalance(w io.Writer, outs []sim.Outcome) {
	type key struct{ mix, rtt, aqm, classic, indep string }
	vals := map[key][]float64{}
	var order []key
	for _, oc := range outs {
		p := oc.Run.Params
		if p == nil {
			return
		}
		k := key{p["mix"], p["rtt"], oc.Run.AQM, p["classic"], p["rtt_indep"]}
		if _, ok := vals[k]; !ok && k.indep == "on" {
			order = append(order, k)
		}
		vals[k] = append(vals[k], oc.Result.L4SClassicRatio)
	}
	fmt.Fprintf(w, "\nL4S:Classic rate ratio, Prague's RTT independence on and off (DualQ paper: near 1 under DualPI2):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mix\trtt\taqm\tclassic\tindependent\tper own RTT\t")
	ms := func(xs []float64) string {
		m, sd := meanSD(xs)
		if len(xs) > 1 {
			return fmt.Sprintf("%.2f±%.2f", m, sd)
		}
		return fmt.Sprintf("%.2f", m)
	}
	for _, k := range order {
		k2 := k
		k2.indep = "off"
		off := "-"
		if xs := vals[k2]; len(xs) > 0 {
			off = ms(xs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", k.mix, k.rtt, k.aqm, k.classic, ms(vals[k]), off)
	}
	tw.Flush()
}

// steadySD is the population standard deviation of a group's 100 ms
// throughput bins after the first second (the test's start-up ramp).
func steadySD(g sim.GroupResult) float64 {
	skip := int(time.Second / sim.GoodputBin)
	if len(g.BinsMbps) <= skip {
		return 0
	}
	xs := g.BinsMbps[skip:]
	m, _ := meanSD(xs)
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)))
}

// printAutorateFloors gives each trace's empty-queue floor: the delay a
// lone packet waits for the link's next delivery opportunity, which no
// queue or controller removes from the pings' percentiles.
func printAutorateFloors(w io.Writer, outs []sim.Outcome) {
	fmt.Fprintf(w, "\nempty-queue floor (the wait of a lone packet for the next delivery opportunity, one trace period):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trace\tp95 ms\tp99 ms\t")
	seen := map[string]bool{}
	for _, oc := range outs {
		p := oc.Run.Params
		if p == nil || p["floor_p95_ms"] == "" || seen[oc.Run.Group] {
			continue
		}
		seen[oc.Run.Group] = true
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", oc.Run.Group, p["floor_p95_ms"], p["floor_p99_ms"])
	}
	tw.Flush()
}
