package lab

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

const ms1 = time.Millisecond

// TestGoodput protects the receiver-count interpolation: linear between
// samples, flat outside them.
func TestGoodput(t *testing.T) {
	s := []ByteSample{{0, 0}, {time.Second, 1000}, {2 * time.Second, 3000}}
	if got := BytesAt(s, 1500*ms1); got != 2000 {
		t.Errorf("BytesAt(1.5s) = %v, want 2000", got)
	}
	if got := BytesAt(s, 5*time.Second); got != 3000 {
		t.Errorf("BytesAt past the end = %v, want 3000", got)
	}
	if got := Goodput(s, 500*ms1, 2*time.Second); math.Abs(got-(3000-500)*8/1.5) > 1e-9 {
		t.Errorf("Goodput = %v, want %v", got, (3000-500)*8/1.5)
	}
	if !math.IsNaN(Goodput(s, time.Second, time.Second)) {
		t.Error("an empty window gave a number")
	}
}

// TestRecovery protects the time-to-idle measure: the first run of
// consecutive good echoes after the load, with losses breaking runs.
func TestRecovery(t *testing.T) {
	var probe []ProbeSample
	for i := 0; i < 40; i++ {
		rtt := 200 * ms1
		switch {
		case i >= 25:
			rtt = 21 * ms1
		case i == 15, i == 16, i == 17:
			rtt = 21 * ms1 // a short dip: not yet recovered
		case i == 26:
		}
		probe = append(probe, ProbeSample{T: time.Duration(i) * 10 * ms1, RTT: rtt})
	}
	probe[27].RTT = -1 // a lost echo breaks the run starting at 25
	got := Recovery(probe, 100*ms1, time.Second, 25*ms1, 5)
	if want := float64(280 - 100); got != want {
		t.Errorf("Recovery = %v ms, want %v", got, want)
	}
	if got := Recovery(probe, 100*ms1, 200*ms1, 25*ms1, 5); !math.IsNaN(got) {
		t.Errorf("no recovery before until: got %v", got)
	}
}

func synthRun() (Config, []ClientResult, time.Time, []ProcStat) {
	cfg := Config{Test: "tcp_nup", Queue: Queue{Router: "fq-codel"}, Rate: 10 * aqm.Mbit, RTT: 20 * ms1,
		Idle: time.Second, Warmup: time.Second, Load: []Window{{From: time.Second, To: 4 * time.Second}}, Tail: time.Second,
		ProbeInterval: 10 * ms1}
	var probe []ProbeSample
	for i := 0; i < 500; i++ {
		tt := time.Duration(i) * 10 * ms1
		rtt := 20 * ms1
		if tt >= time.Second && tt < 4*time.Second {
			rtt = time.Duration(30+i%11) * ms1 // 30..40 ms under load
		}
		if i == 300 {
			rtt = -1
		}
		probe = append(probe, ProbeSample{T: tt, RTT: rtt})
	}
	var flows []FlowResult
	for id, rate := range []int64{6e6, 2e6} { // bits per second
		f := FlowResult{FlowSpec: FlowSpec{ID: id, Dir: "up", CC: "cubic", Start: time.Second, Stop: 4 * time.Second}}
		for k := 0; k <= 50; k++ {
			tt := time.Duration(k) * 100 * ms1
			b := int64(0)
			if tt > time.Second {
				b = rate / 8 * int64(min(tt, 4*time.Second)-time.Second) / int64(time.Second)
			}
			f.Samples = append(f.Samples, ByteSample{T: tt, Bytes: b})
		}
		f.Sender = &SenderInfo{BytesSent: 1000, BytesRetrans: 10, MinRTT: 20 * ms1}
		flows = append(flows, f)
		cfg.Flows = append(cfg.Flows, f.FlowSpec)
	}
	epoch := time.Unix(1000, 0)
	procs := []ProcStat{
		{PID: 9, UTime: 0, At: epoch.Add(1500 * ms1)},
		{PID: 9, UTime: 10, STime: 10, At: epoch.Add(2500 * ms1), RSSBytes: 5 << 20, PeakRSSBytes: 6 << 20},
		{PID: 9, UTime: 40, STime: 20, At: epoch.Add(3500 * ms1), RSSBytes: 4 << 20, PeakRSSBytes: 6 << 20},
	}
	return cfg, []ClientResult{{Flows: flows, Probe: &ProbeResult{Samples: probe}}}, epoch, procs
}

// TestAnalyze protects the figures of a run against values worked out by
// hand from a synthetic probe, two flows and router samples.
func TestAnalyze(t *testing.T) {
	cfg, clients, epoch, procs := synthRun()
	r := Analyze(cfg, clients, epoch, procs)
	if r.IdleMedianMs != 20 {
		t.Errorf("idle median %v, want 20", r.IdleMedianMs)
	}
	// Under load past the warm-up: samples 200..399 less the lost one,
	// RTT 30 + i%11 ms, so added p50 is about 15 ms and p99 about 20.
	if r.AddedP50Ms < 14 || r.AddedP50Ms > 16 || r.AddedP99Ms != 20 {
		t.Errorf("added p50 %v p99 %v, want ~15 and 20", r.AddedP50Ms, r.AddedP99Ms)
	}
	if r.ProbeSent != 200 || r.ProbeLost != 1 || math.Abs(r.ProbeLoss-0.005) > 1e-12 {
		t.Errorf("probe sent %d lost %d loss %v, want 200, 1, 0.005", r.ProbeSent, r.ProbeLost, r.ProbeLoss)
	}
	if r.Grade != "A" || r.GradeP99 != "A" {
		t.Errorf("grades %s %s, want A A", r.Grade, r.GradeP99)
	}
	if math.Abs(r.Flows[0].GoodputBps-6e6) > 1 || math.Abs(r.Flows[1].GoodputBps-2e6) > 1 {
		t.Errorf("goodputs %v %v, want 6e6 2e6", r.Flows[0].GoodputBps, r.Flows[1].GoodputBps)
	}
	if math.Abs(r.Share-0.8) > 1e-9 || math.Abs(r.Jain-Jain([]float64{6, 2})) > 1e-9 {
		t.Errorf("share %v jain %v, want 0.8 %v", r.Share, r.Jain, Jain([]float64{6, 2}))
	}
	if math.Abs(r.Flows[0].Retrans-0.01) > 1e-12 || r.Flows[0].MinRTTMs != 20 {
		t.Errorf("retrans %v min rtt %v", r.Flows[0].Retrans, r.Flows[0].MinRTTMs)
	}
	// CPU: 40 ticks (0.4 s) in the 1 s between the samples at 2.5 s and
	// 3.5 s, the two inside [2 s, 4 s]; the one at 1.5 s is in the warm-up.
	if math.Abs(r.CPU-0.4) > 1e-9 {
		t.Errorf("cpu %v, want 0.4", r.CPU)
	}
	if r.RSSBytes != 5<<20 || r.PeakRSSBytes != 6<<20 {
		t.Errorf("rss %d peak %d", r.RSSBytes, r.PeakRSSBytes)
	}
	if len(r.RecoveryMs) != 1 || r.RecoveryMs[0] != 0 {
		t.Errorf("recovery %v, want [0]: the probe is at idle at once after 4 s", r.RecoveryMs)
	}
}

// TestParseRouterStats protects reading both counter shapes: flat numbers
// (the stand-in) and aqmrouter's objects, and summing per direction.
func TestParseRouterStats(t *testing.T) {
	flat := `{"read": 10, "written": 7, "dropped": 2, "marked": 1, "queued": 1}`
	nested := `{"aqm":"fifo","read":{"packets":10,"bytes":15000},"written":{"packets":7,"bytes":1},
		"dropped":{"total":2,"overlimit":2},"marked":1,"queued":1,"queues":[{"read":{"packets":10}}]}`
	perDir := `{"up":{"read":6,"written":4,"dropped":1,"queued":1},"down":{"read":4,"written":3,"dropped":1,"marked":1}}`
	for _, in := range []string{flat, nested, perDir} {
		st, err := ParseRouterStats([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if st != (RouterStats{Read: 10, Written: 7, Dropped: 2, Marked: 1, Queued: 1}) || !st.Conserved() {
			t.Errorf("%s: %+v", in, st)
		}
	}
	if st, _ := ParseRouterStats([]byte(`{"read":10,"written":7,"dropped":2,"queued":0}`)); st.Conserved() {
		t.Error("a lost packet passed as conserved")
	}
	for _, bad := range []string{``, `[]`, `{"aqm":"fifo"}`} {
		if _, err := ParseRouterStats([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestCSVShape protects runs.csv: a header and one row per run of the
// same width, empty cells for missing figures, and the exact
// configuration in the last column.
func TestCSVShape(t *testing.T) {
	cfg, clients, epoch, procs := synthRun()
	r := Analyze(cfg, clients, epoch, procs)
	failed := Result{Config: cfg, Err: "router exited"}
	failed.AddedP50Ms = math.NaN()
	var buf bytes.Buffer
	if err := WriteCSV(&buf, []Result{r, failed}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want header + 2", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, row := range rows[1:] {
		if len(row) != len(CSVHeader) {
			t.Fatalf("row of %d cells, header of %d", len(row), len(CSVHeader))
		}
	}
	if rows[1][col["test"]] != "tcp_nup" || rows[1][col["config"]] != "fq-codel" || rows[1][col["grade"]] != "A" {
		t.Errorf("row 1: %v", rows[1])
	}
	if rows[2][col["added_p50_ms"]] != "" || rows[2][col["err"]] != "router exited" {
		t.Errorf("failed row: added %q err %q", rows[2][col["added_p50_ms"]], rows[2][col["err"]])
	}
	var back Config
	if err := json.Unmarshal([]byte(rows[1][col["config_json"]]), &back); err != nil || back.Rate != cfg.Rate || len(back.Flows) != 2 {
		t.Errorf("config_json %q: %v", rows[1][col["config_json"]], err)
	}
	if got := strings.Fields(rows[1][col["flow_goodput_bps"]]); len(got) != 2 || got[0] != "6e+06" {
		t.Errorf("flow goodputs %q", rows[1][col["flow_goodput_bps"]])
	}
}

// TestJSONShape protects results.json: valid JSON even with NaN figures
// (written as -1), the configuration whole, the raw samples kept.
func TestJSONShape(t *testing.T) {
	cfg, clients, epoch, procs := synthRun()
	r := Analyze(cfg, clients, epoch, procs)
	r.RecoveryMs = []float64{math.NaN()}
	r.CPU = math.NaN()
	b, err := json.Marshal(Report{Runs: []Result{r}})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	run := back.Runs[0]
	if run["cpu_cores"] != -1.0 || run["recovery_ms"].([]any)[0] != -1.0 {
		t.Errorf("NaN figures: cpu %v recovery %v, want -1", run["cpu_cores"], run["recovery_ms"])
	}
	c := run["config"].(map[string]any)
	if c["test"] != "tcp_nup" || c["rate"] != "10mbit" || c["queue"].(map[string]any)["router"] != "fq-codel" {
		t.Errorf("config %v", c)
	}
	if len(run["probe"].([]any)) != 500 || len(run["flow_samples"].([]any)) != 2 {
		t.Error("raw samples missing")
	}
}

// TestSummaries protects grouping by configuration over repetitions:
// medians and ranges, failed runs counted but left out of the figures.
func TestSummaries(t *testing.T) {
	cfg, clients, epoch, procs := synthRun()
	var rs []Result
	for rep, add := range []float64{10, 30, 20} {
		r := Analyze(cfg, clients, epoch, procs)
		r.AddedP50Ms, r.Rep, r.Conserved = add, rep, true
		rs = append(rs, r)
	}
	rs = append(rs, Result{Config: cfg, Err: "boom"})
	ss := Summaries(rs)
	if len(ss) != 1 {
		t.Fatalf("%d summaries, want 1", len(ss))
	}
	s := ss[0]
	if s.Runs != 4 || s.Failed != 1 || s.AddedP50 != (Range{Median: 20, Min: 10, Max: 30, N: 3}) || s.Grade != "A" {
		t.Errorf("summary %+v", s)
	}
	var buf bytes.Buffer
	if err := WriteSummaryCSV(&buf, ss); err != nil {
		t.Fatal(err)
	}
	rows, _ := csv.NewReader(&buf).ReadAll()
	if len(rows) != 2 || len(rows[1]) != len(SummaryCSVHeader()) {
		t.Errorf("summary.csv shape: %d rows", len(rows))
	}
}

// TestQdiscJSON protects reading tc's JSON counters.
func TestQdiscJSON(t *testing.T) {
	in := `[{"kind":"htb","handle":"1:","root":true,"bytes":0,"packets":10,"drops":3,"overlimits":5,"requeues":0,"backlog":0,"qlen":0},
		{"kind":"fq_codel","handle":"10:","parent":"1:1","packets":10,"drops":3,"backlog":1514,"qlen":1,"ecn_mark":4}]`
	qs, err := parseQdiscJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[1].Kind != "fq_codel" || qs[1].Drops != 3 || qs[1].Marked != 4 || qs[1].Qlen != 1 || qs[0].Overlimits != 5 {
		t.Errorf("%+v", qs)
	}
	var r Result
	r.Config.Queue.Kernel = &KernelQdisc{Kind: "fq_codel"}
	r.SetRouter(RouterStats{}, nil, map[string][]QdiscStats{"r1": qs})
	if r.Drops != 3 || r.Marks != 4 {
		t.Errorf("anchor drops %d marks %d, want the child's 3 and 4 (htb's own count repeats the child's)", r.Drops, r.Marks)
	}
}

// TestKernelArgs protects the anchors' tc arguments: the htb rate scaled
// for the Ethernet header, labels, RED's byte thresholds.
func TestKernelArgs(t *testing.T) {
	if got := HTBRate(50 * aqm.Mbit); got != 50466667 {
		t.Errorf("HTBRate(50mbit) = %d, want 50466667", got)
	}
	k := KernelQdisc{Kind: "red", Limit: 50, RedMin: 5, RedMax: 15, AvgPkt: 588, Adaptive: true}
	args := strings.Join(k.childArgs(2*aqm.Mbit, 40*ms1), " ")
	if args != "red limit 29400 min 2940 max 8820 avpkt 588 burst 9 bandwidth 2000000bit probability 0.1 adaptive" {
		t.Errorf("red args %q", args)
	}
	if l := (KernelQdisc{Kind: "pfifo", Limit: 1000, Burst: 15360}).Label(); l != "htb15k+pfifo1000" {
		t.Errorf("label %q", l)
	}
	if l := k.Label(); l != "htb+ared" {
		t.Errorf("label %q", l)
	}
}

// TestSuites protects the suites' shapes: every test builds valid,
// bounded configurations with the flows its definition asks for.
func TestSuites(t *testing.T) {
	for _, test := range Tests {
		cfgs, err := Suite(test, Options{})
		if err != nil {
			t.Fatalf("%s: %v", test, err)
		}
		if len(cfgs) == 0 {
			t.Fatalf("%s: no configurations", test)
		}
		for _, c := range cfgs {
			if err := c.Validate(); err != nil {
				t.Errorf("%s %s: %v", test, c.Name(), err)
			}
		}
		c := cfgs[0]
		ups, downs := 0, 0
		for _, f := range c.Flows {
			if f.Dir == "up" {
				ups++
			} else {
				downs++
			}
		}
		switch test {
		case "rrul":
			if ups != 4 || downs != 4 {
				t.Errorf("rrul: %d up %d down", ups, downs)
			}
		case "red":
			if ups != 10 || c.Flows[0].MSS != 536 || c.Flows[0].CC != "reno" || c.Rate != 2*aqm.Mbit || c.RTT != 40*ms1 {
				t.Errorf("red: %+v", c)
			}
		case "rtt_fair":
			if len(c.Paths) != 3 || c.Flows[3].Path != 3 {
				t.Errorf("rtt_fair paths %v", c.Paths)
			}
		case "square":
			if len(c.Load) != 2 || ups != 8 {
				t.Errorf("square: %d windows, %d flows", len(c.Load), ups)
			}
		case "flood":
			if len(c.Floods) != 1 || c.Floods[0].Rate != 2*c.Rate {
				t.Errorf("flood: %+v", c.Floods)
			}
		}
	}
	if _, err := Suite("nope", Options{}); err == nil {
		t.Error("an unknown test was accepted")
	}
	bad := Config{Test: "x", Queue: Queue{Router: "fifo"}, Rate: aqm.Mbit, Load: []Window{{0, 11 * time.Minute}},
		Flows: []FlowSpec{{Start: 0, Stop: 11 * time.Minute}}}
	if err := bad.Validate(); err == nil {
		t.Error("an 11-minute run was accepted")
	}
}

// TestCreatorPID protects the leftover cleaner's reading of names.
func TestCreatorPID(t *testing.T) {
	if pid, ok := CreatorPID("aqmlab-4242-a1b2c3-r"); !ok || pid != 4242 {
		t.Errorf("got %d %v", pid, ok)
	}
	for _, n := range []string{"other-4242-x", "aqmlab-x-y", "aqmlab--1"} {
		if _, ok := CreatorPID(n); ok {
			t.Errorf("%q read as a lab namespace", n)
		}
	}
}

// TestRouterHas protects reading a router's flags from its -h text: a
// flag whose name ends another's (-delay-limit) is not -limit.
func TestRouterHas(t *testing.T) {
	rc := RouterCommand{Flags: "Usage:\n  -delay-limit packets\n    \tmost packets\n  -rate rate\n"}
	if rc.Has("limit") || !rc.Has("rate") || !rc.Has("delay-limit") {
		t.Errorf("Has: limit %v rate %v delay-limit %v", rc.Has("limit"), rc.Has("rate"), rc.Has("delay-limit"))
	}
	st, err := StandinRouter()
	if err != nil || !st.Standin() || !st.Has("limit") {
		t.Errorf("stand-in: %+v %v", st, err)
	}
}

// TestAnalyzeSquareShare protects the share of flows that take turns: two
// windows, one flow each at the full rate, make a share of 1, not 2.
func TestAnalyzeSquareShare(t *testing.T) {
	cfg := Config{Test: "square", Queue: Queue{Router: "fifo"}, Rate: 8 * aqm.Mbit, Idle: time.Second,
		Load: []Window{{From: time.Second, To: 3 * time.Second}, {From: 5 * time.Second, To: 7 * time.Second}}}
	var flows []FlowResult
	for k, w := range cfg.Load {
		f := FlowResult{FlowSpec: FlowSpec{ID: k, Dir: "up", Start: w.From, Stop: w.To}}
		f.Samples = []ByteSample{{w.From, 0}, {w.To, 2 * 1e6}} // 1 MB/s = 8 Mb/s
		flows = append(flows, f)
		cfg.Flows = append(cfg.Flows, f.FlowSpec)
	}
	r := Analyze(cfg, []ClientResult{{Flows: flows}}, time.Unix(0, 0), nil)
	if math.Abs(r.Share-1) > 1e-9 || math.Abs(r.GoodputUpBps-8e6) > 1e-3 {
		t.Errorf("share %v up %v, want 1 and 8e6", r.Share, r.GoodputUpBps)
	}
}

// TestBesideAnotherLab protects the flag on runs that shared the machine
// with another lab: the run's line says so and the summary counts them.
func TestBesideAnotherLab(t *testing.T) {
	cfg := Config{Test: "tcp_nup", Queue: Queue{Router: "fq-codel"}}
	rs := []Result{{Config: cfg, OtherLabs: []int{1247}}, {Config: cfg}, {Config: cfg, OtherLabs: []int{9, 1247}}}
	if l := rs[0].Line(); !strings.Contains(l, "BESIDE ANOTHER LAB (pid [1247])") {
		t.Errorf("line %q does not flag the other lab", l)
	}
	if l := rs[1].Line(); strings.Contains(l, "BESIDE") {
		t.Errorf("line %q flags a run alone", l)
	}
	ss := Summaries(rs)
	if len(ss) != 1 || ss[0].Beside != 2 || ss[0].Runs != 3 {
		t.Fatalf("summaries %+v, want 3 runs, 2 beside another lab", ss)
	}
	var b strings.Builder
	WriteSummaryText(&b, ss)
	if !strings.Contains(b.String(), "3 (2 beside another lab)") {
		t.Errorf("summary text %q does not count the runs beside another lab", b.String())
	}
	var c strings.Builder
	WriteCSV(&c, rs[2:])
	if !strings.Contains(c.String(), ",9 1247,") {
		t.Errorf("runs.csv %q lacks other_labs 9 1247", c.String())
	}
}
