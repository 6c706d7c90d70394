package lab

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/aqmkit/aqmkit/aqm"
)

// SoakOptions configure a soak: rrul-like load through the router for a long
// time while everything that can go wrong does, a little at a time.
type SoakOptions struct {
	// Duration is the load's length.
	Duration time.Duration
	// Rate and RTT are the bottleneck's, as in a lab run (50 Mb/s, 20 ms).
	Rate aqm.Rate
	RTT  time.Duration
	// Sample is how often the router is sampled (RSS, goroutines, buffers,
	// counters); Reconfig how often its rate (and every third time its
	// queue) is changed through /config.
	Sample, Reconfig time.Duration
	// MalformedPerSecond is how many malformed packets go into the TUN's
	// path each second.
	MalformedPerSecond int
	// FloodEvery and FloodFor: a random-port UDP flood at twice the rate
	// for FloodFor, once every FloodEvery.
	FloodEvery, FloodFor time.Duration
	// FaultWriteEvery makes every n-th packet the router writes fail.
	FaultWriteEvery int
	// DownAt takes the TUN down for DownFor at that offset into the load
	// (zero: half way).
	DownAt, DownFor time.Duration
	// OutDir receives soak.csv, soak.png and soak.json.
	OutDir string
	// Progress gets a line every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// DefaultSoakOptions are the soak's defaults for a run of d.
func DefaultSoakOptions(d time.Duration) SoakOptions {
	return SoakOptions{Duration: d, Rate: 50 * aqm.Mbit, RTT: 20 * time.Millisecond, Sample: 2 * time.Second,
		Reconfig: 4 * time.Second, MalformedPerSecond: 25, FloodEvery: time.Minute, FloodFor: 4 * time.Second,
		FaultWriteEvery: 20000, DownFor: time.Second, ProgressEvery: 10 * time.Second}
}

// settle is how long after the first flood a soak's start sample is
// taken.
const settle = 10 * time.Second

// SoakResult is what a soak found. RSSStartMB and GoroutineStart are the
// first sample once the load has warmed up, the first flood has ended and
// settle has passed, the End values the last sample. By then the
// directions, their goroutines and their buffers exist, every queue of the
// rotation has run (its code is paged in), the packet pools have made the
// buffers a flood needs, and the garbage collector has reached its pace:
// the growth from there is what the router would keep adding over hours.
// Malformed counts the malformed packets the kernel took for the TUN's
// path; the router forwards the well-formed among them (fragments, IPv6
// extension-header chains) and drops the rest by reason.
type SoakResult struct {
	Samples []SoakSample `json:"samples"`
	// Conserved: every sample and the final counters conserved.
	Conserved      bool    `json:"conserved"`
	RSSStartMB     float64 `json:"rss_start_mb"`
	RSSEndMB       float64 `json:"rss_end_mb"`
	GoroutineStart int     `json:"goroutines_start"`
	GoroutineEnd   int     `json:"goroutines_end"`
	Malformed      uint64  `json:"malformed"`
	Reconfigs      uint64  `json:"reconfigs"`
	ProbeP99Ms     float64 `json:"probe_p99_ms"`
	Panics         int     `json:"panics"`
	Run            Result  `json:"run"`
	Err            string  `json:"err,omitempty"`
}

// Line is the soak's last line.
func (r SoakResult) Line() string {
	return fmt.Sprintf("SOAK conserved=%v rss_start_mb=%.1f rss_end_mb=%.1f goroutines_start=%d goroutines_end=%d malformed=%d reconfigs=%d probe_p99_ms=%.1f panics=%d",
		r.Conserved, r.RSSStartMB, r.RSSEndMB, r.GoroutineStart, r.GoroutineEnd, r.Malformed, r.Reconfigs, r.ProbeP99Ms, r.Panics)
}

// soakMetrics is the router's metrics address in its namespace.
const soakMetrics = "127.0.0.1:9310"

// Soak runs a soak: the rrul test's load (4 TCP uploads, 4 downloads, the
// probe) through the router at o.Rate with FQ-CoDel at the start; a
// random-port flood for o.FloodFor every o.FloodEvery; malformed packets
// into the TUN's path; the queue and rate changed through the router's
// /config every o.Reconfig; the TUN taken down and up once; write errors
// injected by the router's fault-injecting device; and the router sampled
// every o.Sample. It writes the samples as CSV and a plot into o.OutDir.
func (l *Lab) Soak(ctx context.Context, o SoakOptions) (SoakResult, error) {
	var res SoakResult
	cfgs, err := Suite("rrul", Options{Rate: o.Rate, RTT: o.RTT, Duration: o.Duration, Queues: []Queue{{Router: "fq-codel"}}, Kernel: []KernelQdisc{}})
	if err != nil {
		return res, err
	}
	cfg := cfgs[0]
	cfg.Test = "soak"
	cfg.MaxRun = cfg.End() + time.Minute // a soak's own bound, at most MaxSoakRun
	w := cfg.Load[0]
	for k, at := 0, w.From+o.FloodEvery/2; o.FloodEvery > 0 && at+o.FloodFor < w.To; k, at = k+1, at+o.FloodEvery {
		cfg.Floods = append(cfg.Floods, FloodSpec{Rate: 2 * o.Rate, Size: 1000, RandomPorts: true, Start: at, Stop: at + o.FloodFor, Seed: uint64(k + 1)})
	}
	cfg.RouterExtra = append(cfg.RouterExtra, "-metrics", soakMetrics, "-report", "0")
	if o.FaultWriteEvery > 0 {
		cfg.RouterExtra = append(cfg.RouterExtra, "-fault-write-every", strconv.Itoa(o.FaultWriteEvery))
	}
	// The start of the soak's comparisons (SoakResult): once the load has
	// warmed up, the first flood is over and its queues have drained.
	settled := w.From + cfg.Warmup
	if len(cfg.Floods) > 0 {
		settled = max(settled, cfg.Floods[0].Stop+settle)
	}
	if o.DownAt == 0 {
		o.DownAt = w.From + (w.To-w.From)/2
	}
	epoch := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The agent in the router's namespace: samples, changes, malformed input.
	agentDone := make(chan struct{})
	var mu sync.Mutex
	var agentErr strings.Builder
	go func() {
		defer close(agentDone)
		// Wait for the router's TUN: RunOne starts it after the server agent.
		for runCtx.Err() == nil {
			if _, err := nsRun(runCtx, l.Topo.Router, "ip", "link", "show", "tun0"); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		span := time.Until(epoch.Add(cfg.End()))
		cmd := exec.CommandContext(runCtx, "ip", "netns", "exec", l.Topo.Router, l.Topo.Exe, AgentArg, "soak",
			"-metrics", soakMetrics, "-for", span.String(), "-sample", o.Sample.String(), "-reconfig", o.Reconfig.String(),
			"-malformed", strconv.Itoa(o.MalformedPerSecond), "-rate", strconv.Itoa(int(o.Rate/aqm.Mbit)),
			"-epoch", strconv.FormatInt(epoch.UnixNano(), 10))
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		cmd.Stderr = &agentErr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return
		}
		if err := cmd.Start(); err != nil {
			agentErr.WriteString(err.Error())
			return
		}
		sc := bufio.NewScanner(stdout)
		last := time.Now()
		for sc.Scan() {
			var s SoakSample
			if json.Unmarshal(sc.Bytes(), &s) != nil {
				continue
			}
			mu.Lock()
			res.Samples = append(res.Samples, s)
			mu.Unlock()
			if o.Progress != nil && time.Since(last) >= o.ProgressEvery {
				last = time.Now()
				fmt.Fprintf(o.Progress, "soak %4.0fs/%.0fs: %s at %s, rss %.1f MB (heap %.1f, buffers %.1f), goroutines %d, buffers %d, read %d, queued %d, conserved %v, malformed %d, reconfigs %d\n",
					s.T, cfg.End().Seconds(), s.AQM, s.Rate, s.RSSMB, s.HeapMB, s.BufferMB, s.Goroutines, s.Buffers, s.Read, s.Queued, s.Conserved, s.Injected, s.Reconfigs)
			}
		}
		cmd.Wait()
	}()

	// The device down and up once.
	downDone := make(chan struct{})
	go func() {
		defer close(downDone)
		select {
		case <-runCtx.Done():
			return
		case <-time.After(time.Until(epoch.Add(o.DownAt))):
		}
		ns := l.Topo.Router
		if err := ip(runCtx, "-n", ns, "link", "set", "tun0", "down"); err != nil {
			mu.Lock()
			res.Err = "down: " + err.Error()
			mu.Unlock()
			return
		}
		time.Sleep(o.DownFor)
		ip(runCtx, "-n", ns, "link", "set", "tun0", "up")
		// Going down removed the route into the TUN.
		ip(runCtx, "-n", ns, "route", "replace", "default", "dev", "tun0", "table", routeTable)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "soak %4.0fs: tun0 was down for %v\n", time.Since(epoch).Seconds(), o.DownFor)
		}
	}()

	run, runErr := l.RunOne(ctx, cfg)
	cancel()
	<-agentDone
	<-downDone
	res.Run = run
	mu.Lock()
	defer mu.Unlock()
	res.Conserved = run.Conserved && len(res.Samples) > 0
	for _, s := range res.Samples {
		res.Conserved = res.Conserved && s.Conserved
	}
	if n := len(res.Samples); n > 0 {
		first, lastS := res.Samples[0], res.Samples[n-1]
		for _, s := range res.Samples {
			if s.T >= settled.Seconds() {
				first = s
				break
			}
		}
		res.RSSStartMB, res.RSSEndMB = first.RSSMB, lastS.RSSMB
		res.GoroutineStart, res.GoroutineEnd = first.Goroutines, lastS.Goroutines
		res.Malformed, res.Reconfigs = lastS.Injected, lastS.Reconfigs
	}
	res.ProbeP99Ms = run.IdleMedianMs + run.AddedP99Ms
	if runErr != nil {
		res.Panics = strings.Count(runErr.Error(), "panic:")
		if res.Err == "" {
			res.Err = runErr.Error()
		}
	}
	if math.IsNaN(res.ProbeP99Ms) {
		res.ProbeP99Ms = -1
	}
	if o.OutDir != "" {
		if err := writeSoak(o.OutDir, res); err != nil {
			return res, err
		}
	}
	if why := Disturbed(run); why != "" && o.Progress != nil {
		fmt.Fprintf(o.Progress, "soak: the machine disturbed this run (%s): its probe figures are the machine's as much as the router's\n", why)
	}
	if agentErr.Len() > 0 && o.Progress != nil {
		fmt.Fprintf(o.Progress, "soak agent: %s\n", strings.TrimSpace(agentErr.String()))
	}
	return res, runErr
}

// writeSoak writes soak.csv (the samples), soak.json (everything) and
// soak.png (RSS, goroutines and buffers over time) into dir.
func writeSoak(dir string, r SoakResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "soak.csv"))
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	cw.Write([]string{"t_s", "rss_mb", "heap_mb", "buffer_mb", "goroutines", "buffers_in_use", "read", "written", "dropped", "malformed_dropped", "queued", "conserved", "aqm", "rate", "injected", "reconfigs", "refused"})
	for _, s := range r.Samples {
		cw.Write([]string{fmt.Sprintf("%.1f", s.T), fmt.Sprintf("%.2f", s.RSSMB), fmt.Sprintf("%.2f", s.HeapMB), fmt.Sprintf("%.2f", s.BufferMB), strconv.Itoa(s.Goroutines), strconv.Itoa(s.Buffers),
			strconv.FormatUint(s.Read, 10), strconv.FormatUint(s.Written, 10), strconv.FormatUint(s.Dropped, 10),
			strconv.FormatUint(s.Malformed, 10), strconv.FormatUint(s.Queued, 10), strconv.FormatBool(s.Conserved), s.AQM, s.Rate,
			strconv.FormatUint(s.Injected, 10), strconv.FormatUint(s.Reconfigs, 10), strconv.FormatUint(s.Refused, 10)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := writeProbe(filepath.Join(dir, "probe.csv"), r.Run.Probe); err != nil {
		return err
	}
	r.Run.Probe, r.Run.FlowSamples = nil, nil // the raw samples of a long run are large
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.json"), b, 0o644); err != nil {
		return err
	}
	return plotSoak(filepath.Join(dir, "soak.png"), r.Samples)
}

// writeProbe writes the probe's round trips as CSV: seconds since the
// run's start and the round trip in milliseconds.
func writeProbe(file string, ps []ProbeSample) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	cw.Write([]string{"t_s", "rtt_ms"})
	for _, p := range ps {
		cw.Write([]string{strconv.FormatFloat(p.T.Seconds(), 'f', 3, 64), strconv.FormatFloat(float64(p.RTT)/1e6, 'f', 3, 64)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plotSoak plots the router's RSS, live heap, pool buffers, goroutines and
// buffers in use (in hundreds) over the soak.
func plotSoak(file string, ss []SoakSample) error {
	if len(ss) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "soak: the router over time"
	p.X.Label.Text = "time (s)"
	p.Legend.Top = true
	var rss, heap, bufMB, gor, buf plotter.XYs
	for _, s := range ss {
		rss = append(rss, plotter.XY{X: s.T, Y: s.RSSMB})
		heap = append(heap, plotter.XY{X: s.T, Y: s.HeapMB})
		bufMB = append(bufMB, plotter.XY{X: s.T, Y: s.BufferMB})
		gor = append(gor, plotter.XY{X: s.T, Y: float64(s.Goroutines)})
		buf = append(buf, plotter.XY{X: s.T, Y: float64(s.Buffers) / 100})
	}
	if err := plotutil.AddLines(p, "RSS (MB)", rss, "live heap (MB)", heap, "pool buffers (MB)", bufMB, "goroutines", gor, "buffers in use (hundreds)", buf); err != nil {
		return err
	}
	return p.Save(10*vg.Inch, 4*vg.Inch, file)
}

// RunSoak makes a topology, runs Soak on it with the router rc, and
// removes the namespaces.
func RunSoak(ctx context.Context, rc RouterCommand, o SoakOptions) (SoakResult, error) {
	topo, err := NewTopology(ctx, nil)
	if err != nil {
		return SoakResult{}, err
	}
	defer topo.Close()
	tmp, err := os.MkdirTemp("", "aqmlab-soak-")
	if err != nil {
		return SoakResult{}, err
	}
	defer os.RemoveAll(tmp)
	l := &Lab{Router: rc, Topo: topo, TmpDir: tmp, Progress: o.Progress}
	return l.Soak(ctx, o)
}
