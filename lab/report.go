package lab

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// CSVHeader is the header of runs.csv: one row per run.
var CSVHeader = []string{
	"test", "config", "rep", "seq", "start", "queue", "rate_bps", "rtt_ms", "ecn", "offloads", "gso", "flows",
	"idle_median_ms", "added_p50_ms", "added_p90_ms", "added_p99_ms", "grade", "grade_p99",
	"probe_sent", "probe_lost", "probe_loss",
	"goodput_up_bps", "goodput_down_bps", "share", "jain",
	"drops", "marks", "router_read", "router_written", "router_dropped", "router_marked", "router_queued", "conserved",
	"cpu_cores", "rss_bytes", "peak_rss_bytes", "recovery_ms", "flow_goodput_bps", "load1", "timer_p99_ms", "timer_lost", "other_labs", "err", "config_json",
}

func fnum(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// CSVRow is r as a runs.csv row, in CSVHeader order. Missing figures are
// empty; recovery_ms and flow_goodput_bps list one value per window or
// flow, separated by spaces; config_json is the exact configuration.
func CSVRow(r Result) []string {
	cfg, _ := json.Marshal(r.Config)
	var rec, fg, others []string
	for _, p := range r.OtherLabs {
		others = append(others, strconv.Itoa(p))
	}
	for _, v := range r.RecoveryMs {
		rec = append(rec, fnum(v))
	}
	for _, f := range r.Flows {
		fg = append(fg, fnum(f.GoodputBps))
	}
	c := r.Config
	return []string{
		c.Test, c.Name(), strconv.Itoa(r.Rep), strconv.Itoa(r.Seq), r.Start.UTC().Format("2006-01-02T15:04:05.000Z"),
		c.Queue.Label(), strconv.FormatUint(uint64(c.Rate), 10), fnum(ms(c.RTT)), strconv.FormatBool(c.ECN),
		map[bool]string{false: "off", true: "on"}[c.Offload.Veth], c.Offload.GSO, strconv.Itoa(len(c.Flows)),
		fnum(r.IdleMedianMs), fnum(r.AddedP50Ms), fnum(r.AddedP90Ms), fnum(r.AddedP99Ms), r.Grade, r.GradeP99,
		strconv.Itoa(r.ProbeSent), strconv.Itoa(r.ProbeLost), fnum(r.ProbeLoss),
		fnum(r.GoodputUpBps), fnum(r.GoodputDownBps), fnum(r.Share), fnum(r.Jain),
		strconv.FormatInt(r.Drops, 10), strconv.FormatInt(r.Marks, 10),
		strconv.FormatInt(r.Router.Read, 10), strconv.FormatInt(r.Router.Written, 10), strconv.FormatInt(r.Router.Dropped, 10),
		strconv.FormatInt(r.Router.Marked, 10), strconv.FormatInt(r.Router.Queued, 10), strconv.FormatBool(r.Conserved),
		fnum(r.CPU), strconv.FormatInt(r.RSSBytes, 10), strconv.FormatInt(r.PeakRSSBytes, 10),
		strings.Join(rec, " "), strings.Join(fg, " "), fnum(r.Load1), fnum(r.TimerLag.P99Ms), fnum(r.TimerLag.Lost), strings.Join(others, " "), r.Err, string(cfg),
	}
}

// WriteCSV writes runs.csv.
func WriteCSV(w io.Writer, rs []Result) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	for _, r := range rs {
		cw.Write(CSVRow(r))
	}
	cw.Flush()
	return cw.Error()
}

// Summary is one configuration's figures over its repetitions.
type Summary struct {
	Test, Config string
	Runs, Failed int
	// Beside counts the runs that had another lab run alongside.
	Beside     int
	AddedP50   Range
	AddedP90   Range
	AddedP99   Range
	ProbeLoss  Range
	Share      Range
	Jain       Range
	Drops      Range
	Marks      Range
	CPU        Range
	PeakRSSMiB Range
	RecoveryMs Range
	Load1      Range  // the machine's 1-minute load average at the end of each run's load
	TimerP99   Range  // the timer-lateness probe's p99, ms
	TimerLost  Range  // the probe's lateness beyond 1 ms, as a share of the run
	Grade      string // of the median added p50
	Conserved  bool   // every run's router counters conserved packets
}

// Summarize groups results by test and configuration, in first-seen order.
func Summaries(rs []Result) []Summary {
	type key struct{ t, c string }
	var order []key
	groups := map[key][]Result{}
	for _, r := range rs {
		k := key{r.Config.Test, r.Config.Name()}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Summary
	for _, k := range order {
		g := groups[k]
		s := Summary{Test: k.t, Config: k.c, Conserved: true}
		col := func(f func(Result) float64) Range {
			var xs []float64
			for _, r := range g {
				if r.Err == "" {
					xs = append(xs, f(r))
				}
			}
			return Summarize(xs)
		}
		for _, r := range g {
			s.Runs++
			if len(r.OtherLabs) > 0 {
				s.Beside++
			}
			if r.Err != "" {
				s.Failed++
			} else if r.Config.Queue.Kernel == nil && !r.Conserved {
				s.Conserved = false
			}
		}
		s.AddedP50 = col(func(r Result) float64 { return r.AddedP50Ms })
		s.AddedP90 = col(func(r Result) float64 { return r.AddedP90Ms })
		s.AddedP99 = col(func(r Result) float64 { return r.AddedP99Ms })
		s.ProbeLoss = col(func(r Result) float64 { return r.ProbeLoss })
		s.Share = col(func(r Result) float64 { return r.Share })
		s.Jain = col(func(r Result) float64 { return r.Jain })
		s.Drops = col(func(r Result) float64 { return float64(r.Drops) })
		s.Marks = col(func(r Result) float64 { return float64(r.Marks) })
		s.CPU = col(func(r Result) float64 { return r.CPU })
		s.PeakRSSMiB = col(func(r Result) float64 { return float64(r.PeakRSSBytes) / (1 << 20) })
		s.RecoveryMs = col(func(r Result) float64 { return Median(r.RecoveryMs) })
		s.Load1 = col(func(r Result) float64 { return r.Load1 })
		s.TimerP99 = col(func(r Result) float64 { return r.TimerLag.P99Ms })
		s.TimerLost = col(func(r Result) float64 { return r.TimerLag.Lost })
		s.Grade = GradeMs(s.AddedP50.Median)
		out = append(out, s)
	}
	return out
}

func rng(r Range, scale float64, prec int) string {
	if r.N == 0 {
		return "-"
	}
	f := func(x float64) string { return strconv.FormatFloat(x*scale, 'f', prec, 64) }
	if r.N == 1 {
		return f(r.Median)
	}
	return f(r.Median) + " [" + f(r.Min) + ", " + f(r.Max) + "]"
}

// WriteSummaryText writes the human table: medians with [min, max] over
// the repetitions.
func WriteSummaryText(w io.Writer, ss []Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "test\tconfig\truns\tadded p50 ms\tadded p99 ms\tgrade\tprobe loss %\tgoodput % of rate\tjain\tdrops\tmarks\trouter cpu %\tpeak rss MiB\trecovery ms\tload\ttimer p99 ms\ttimer late %\tconserved")
	for _, s := range ss {
		runs := strconv.Itoa(s.Runs)
		if s.Failed > 0 {
			runs += fmt.Sprintf(" (%d failed)", s.Failed)
		}
		if s.Beside > 0 {
			runs += fmt.Sprintf(" (%d beside another lab)", s.Beside)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\n", s.Test, s.Config, runs,
			rng(s.AddedP50, 1, 1), rng(s.AddedP99, 1, 1), s.Grade, rng(s.ProbeLoss, 100, 2), rng(s.Share, 100, 1),
			rng(s.Jain, 1, 3), rng(s.Drops, 1, 0), rng(s.Marks, 1, 0), rng(s.CPU, 100, 0), rng(s.PeakRSSMiB, 1, 1),
			rng(s.RecoveryMs, 1, 0), rng(s.Load1, 1, 1), rng(s.TimerP99, 1, 1), rng(s.TimerLost, 100, 1), s.Conserved)
	}
	return tw.Flush()
}

// SummaryCSVHeader is the header of summary.csv: per configuration, the
// median, minimum and maximum of each figure over its repetitions.
func SummaryCSVHeader() []string {
	h := []string{"test", "config", "runs", "failed", "grade", "conserved"}
	for _, m := range summaryMetrics {
		h = append(h, m.name+"_median", m.name+"_min", m.name+"_max")
	}
	return h
}

var summaryMetrics = []struct {
	name string
	get  func(Summary) Range
}{
	{"added_p50_ms", func(s Summary) Range { return s.AddedP50 }},
	{"added_p90_ms", func(s Summary) Range { return s.AddedP90 }},
	{"added_p99_ms", func(s Summary) Range { return s.AddedP99 }},
	{"probe_loss", func(s Summary) Range { return s.ProbeLoss }},
	{"share", func(s Summary) Range { return s.Share }},
	{"jain", func(s Summary) Range { return s.Jain }},
	{"drops", func(s Summary) Range { return s.Drops }},
	{"marks", func(s Summary) Range { return s.Marks }},
	{"cpu_cores", func(s Summary) Range { return s.CPU }},
	{"peak_rss_mib", func(s Summary) Range { return s.PeakRSSMiB }},
	{"recovery_ms", func(s Summary) Range { return s.RecoveryMs }},
	{"load1", func(s Summary) Range { return s.Load1 }},
	{"timer_p99_ms", func(s Summary) Range { return s.TimerP99 }},
	{"timer_lost", func(s Summary) Range { return s.TimerLost }},
}

// WriteSummaryCSV writes summary.csv.
func WriteSummaryCSV(w io.Writer, ss []Summary) error {
	cw := csv.NewWriter(w)
	cw.Write(SummaryCSVHeader())
	for _, s := range ss {
		row := []string{s.Test, s.Config, strconv.Itoa(s.Runs), strconv.Itoa(s.Failed), s.Grade, strconv.FormatBool(s.Conserved)}
		for _, m := range summaryMetrics {
			r := m.get(s)
			row = append(row, fnum(r.Median), fnum(r.Min), fnum(r.Max))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// Report is results.json.
type Report struct {
	Namespaces []string `json:"namespaces"`
	// Offloads is the veths' offload state when the reports were
	// written (each run has its own in Result.Offloads); KernelOffloads
	// the kernel's own settings, which a run with Offload.Veth has.
	Offloads       []string `json:"offloads"`
	KernelOffloads []string `json:"kernel_offloads,omitempty"`
	Skipped        []string `json:"skipped"`
	Runs           []Result `json:"runs"`
}

// WriteReports writes results.json, runs.csv, summary.csv, summary.txt
// and, with plots, the PNG plots into dir.
func WriteReports(dir string, rs []Result, skipped []string, topo *Topology, plots bool) error {
	rep := Report{Skipped: skipped, Runs: rs}
	if topo != nil {
		rep.Namespaces, rep.Offloads, rep.KernelOffloads = topo.Namespaces(), topo.Offloads, topo.KernelOffloads
	}
	b, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return err
		}
		return fh.Close()
	}
	ss := Summaries(rs)
	if err := write("runs.csv", func(w io.Writer) error { return WriteCSV(w, rs) }); err != nil {
		return err
	}
	if err := write("summary.csv", func(w io.Writer) error { return WriteSummaryCSV(w, ss) }); err != nil {
		return err
	}
	if err := write("summary.txt", func(w io.Writer) error {
		if err := WriteSummaryText(w, ss); err != nil {
			return err
		}
		for _, s := range skipped {
			fmt.Fprintln(w, "skipped:", s)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := write("moving.txt", func(w io.Writer) error { return WriteMovingSummary(w, rs) }); err != nil {
		return err
	}
	if plots {
		return WritePlots(filepath.Join(dir, "plots"), rs)
	}
	return nil
}

// sortedTests returns the tests of rs in first-seen order.
func sortedTests(rs []Result) []string {
	seen := map[string]int{}
	for i, r := range rs {
		if _, ok := seen[r.Config.Test]; !ok {
			seen[r.Config.Test] = i
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return seen[out[i]] < seen[out[j]] })
	return out
}
