package lab

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// flentFile writes a flent-shaped data file: a ping at 10 ms idle that
// doubles under load (with two missing samples), two uploads and one
// download at a constant rate, and the aggregates flent adds.
func flentFile(t *testing.T, upMbps, downMbps float64) []byte {
	t.Helper()
	const step = 0.2
	var x []float64
	for v := 0.0; v <= 20+1e-9; v += step {
		x = append(x, math.Round(v*10)/10)
	}
	f := func(v float64) *float64 { return &v }
	series := map[string][]*float64{}
	for _, n := range []string{"Ping (ms) ICMP", "TCP upload BE", "TCP upload BE2", "TCP download BE", "TCP upload sum", "TCP download sum", "TCP upload avg", "TCP totals"} {
		series[n] = make([]*float64, len(x))
	}
	for i, at := range x {
		// A flow's sample is its rate over the step ending at its time.
		load := at > 5+1e-9 && at <= 15+1e-9
		ping := 10.0
		if at >= 5 && at < 15 {
			ping = 20
		}
		series["Ping (ms) ICMP"][i] = f(ping)
		if i == 60 || i == 61 { // 12.0 s and 12.2 s: lost under load
			series["Ping (ms) ICMP"][i] = nil
		}
		for _, n := range []string{"TCP upload BE", "TCP upload BE2", "TCP download BE"} {
			rate := 0.0
			if load {
				rate = upMbps / 2
				if strings.Contains(n, "download") {
					rate = downMbps
				}
			}
			series[n][i] = f(rate)
		}
		series["TCP upload sum"][i] = f(upMbps)
		series["TCP download sum"][i] = f(downMbps)
		series["TCP upload avg"][i] = f(upMbps / 2)
		series["TCP totals"][i] = f(upMbps + downMbps)
	}
	obj := map[string]any{"x_values": x, "results": series, "metadata": map[string]any{"T0": "2026-12-07T16:40:00.250000", "NAME": "rrul"}}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	z.Write(raw)
	z.Close()
	return buf.Bytes()
}

// TestReadFlent protects the reading of flent's data file: the ICMP
// series becomes the probe (a missing sample a lost probe), each TCP
// flow's Mbit/s is integrated to bytes, and sums, averages and totals
// are not taken for flows.
func TestReadFlent(t *testing.T) {
	d, err := readFlent(bytes.NewReader(flentFile(t, 80, 40)))
	if err != nil {
		t.Fatal(err)
	}
	t0, ok := d.start()
	if !ok || !t0.Equal(time.Date(2026, 12, 7, 16, 40, 0, 250e6, time.UTC)) {
		t.Errorf("start = %v, %v; want 16:40:00.25 UTC", t0, ok)
	}
	cr := d.clientResult(Window{From: 5 * time.Second, To: 15 * time.Second})
	if cr.Probe == nil || cr.Probe.Sent != len(d.X) || cr.Probe.Lost != 2 {
		t.Fatalf("probe = %+v; want %d sent, 2 lost", cr.Probe, len(d.X))
	}
	if len(cr.Flows) != 3 {
		t.Fatalf("%d flows; want 3 (two uploads, one download)", len(cr.Flows))
	}
	var up, down int64
	for _, f := range cr.Flows {
		switch f.Dir {
		case "up":
			up += f.Bytes
		case "down":
			down += f.Bytes
		}
		if f.Start != 5*time.Second || f.Stop != 15*time.Second {
			t.Errorf("flow %d spans %v..%v; want the load window", f.ID, f.Start, f.Stop)
		}
	}
	// 10 s at 80 and 40 Mbit/s; flent's samples are rates over the step
	// before them, so one step at each edge may count or not.
	if want := 80e6 / 8 * 10; math.Abs(float64(up)-want) > 80e6/8*0.2+1 {
		t.Errorf("upload bytes %d; want %.0f ± one step", up, want)
	}
	if want := 40e6 / 8 * 10; math.Abs(float64(down)-want) > 40e6/8*0.2+1 {
		t.Errorf("download bytes %d; want %.0f ± one step", down, want)
	}
}

// TestReadFlentErrors protects against a damaged data file: each is an
// error, never a panic or an empty result taken as a run.
func TestReadFlentErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":    "{",
		"no samples":  `{"x_values": [], "results": {}}`,
		"short":       `{"x_values": [0, 0.2], "results": {"Ping (ms) ICMP": [1]}}`,
		"not gzipped": "\x1f\x8b garbage",
	} {
		if _, err := readFlent(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestFlentAnalyze protects the figures of a flent run: the lab's own
// analysis of flent's data gives the added latency over flent's idle
// ping and the goodput share over both directions.
func TestFlentAnalyze(t *testing.T) {
	cfgs, err := Suite("flent-rrul", Options{Rate: 100e6, Duration: 10 * time.Second, Warmup: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cfgs[0]
	d, err := readFlent(bytes.NewReader(flentFile(t, 90, 80)))
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(cfg, []ClientResult{d.clientResult(cfg.Load[0])}, time.Now(), nil)
	if r.IdleMedianMs != 10 || r.AddedP50Ms != 10 || r.AddedP99Ms != 10 {
		t.Errorf("idle %v, added p50 %v p99 %v; want 10, 10, 10 ms", r.IdleMedianMs, r.AddedP50Ms, r.AddedP99Ms)
	}
	if r.ProbeLost != 2 {
		t.Errorf("probes lost under load = %d; want 2", r.ProbeLost)
	}
	if math.Abs(r.Share-0.85) > 0.01 {
		t.Errorf("share = %.3f; want 0.85 ((90+80)/(2×100))", r.Share)
	}
}

// TestFlentSuite protects the flent configurations: flent's delay as the
// idle and tail spans, one load window of whole seconds, the test's
// parameters on flent's command line, and an unknown test refused.
func TestFlentSuite(t *testing.T) {
	for _, name := range FlentTests {
		cfgs, err := Suite("flent-"+name, Options{Duration: 30 * time.Second, CC: "bbr", N: 6})
		if err != nil {
			t.Fatal(err)
		}
		if len(cfgs) == 0 {
			t.Fatalf("flent-%s: no configurations", name)
		}
		for _, c := range cfgs {
			if err := c.Validate(); err != nil {
				t.Errorf("flent-%s %s: %v", name, c.Name(), err)
			}
			if c.Flent != name || c.Idle != FlentDelay || c.Tail != FlentDelay || c.Load[0] != (Window{FlentDelay, FlentDelay + 30*time.Second}) {
				t.Errorf("flent-%s: flent %q idle %v tail %v load %v", name, c.Flent, c.Idle, c.Tail, c.Load)
			}
			if c.Queue.Kernel != nil {
				t.Errorf("flent-%s: a kernel anchor by default", name)
			}
			args := flentArgs(c, ServerAddr, "/d")
			want := []string{name, "-H", ServerAddr, "-l", "30", "-d", "5", "-D", "/d"}
			if !slices.Equal(args[:len(want)], want) {
				t.Errorf("flent-%s args %q; want prefix %q", name, args, want)
			}
			joined := strings.Join(args, " ")
			if !strings.Contains(joined, "tcp_cong_control=bbr") {
				t.Errorf("flent-%s args %q: no congestion control", name, joined)
			}
			if name == "tcp_nup" && !strings.Contains(joined, "upload_streams=6") {
				t.Errorf("tcp_nup args %q: no upload_streams=6", joined)
			}
			if name == "rtt_fair" && strings.Count(joined, "-H ") != 1+len(flentExtraAddrs) {
				t.Errorf("rtt_fair args %q: want %d hosts", joined, 1+len(flentExtraAddrs))
			}
		}
	}
	if _, err := Suite("flent-nope", Options{}); err == nil {
		t.Error("flent-nope: no error")
	}
}

// TestFlentLab protects the flent mode end to end: a short flent rrul
// through the router gives a probe and flows and keeps flent's data
// file. It needs root, namespaces, flent, netperf and irtt.
func TestFlentLab(t *testing.T) {
	if testing.Short() {
		t.Skip("the flent lab runs real traffic; skipped in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("the flent lab needs root (network namespaces, TUN)")
	}
	if miss := FlentMissing(); len(miss) > 0 {
		t.Skipf("flent's load needs %s", strings.Join(miss, ", "))
	}
	if err := Preflight(); err != nil {
		t.Skip(err)
	}
	rc, err := StandinRouter()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	cfgs, err := Suite("flent-rrul", Options{Rate: 20e6, Duration: 5 * time.Second, Queues: []Queue{{Router: "fifo", Limit: 100}}, Kernel: []KernelQdisc{}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Router: rc, OutDir: dir}
	if err := s.Run(context.Background(), cfgs, 1); err != nil {
		t.Fatal(err)
	}
	if len(s.Results) != 1 || s.Results[0].Err != "" {
		t.Fatalf("results %+v", s.Results)
	}
	r := s.Results[0]
	if r.ProbeSent == 0 || len(r.Flows) != 8 || r.FlentFile == "" {
		t.Errorf("probes %d, flows %d, file %q; want probes, 8 flows and the data file", r.ProbeSent, len(r.Flows), r.FlentFile)
	}
	if _, err := os.Stat(r.FlentFile); err != nil {
		t.Errorf("flent's data file was not kept: %v", err)
	}
}
