package lab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Lab runs configurations on one topology.
type Lab struct {
	Router RouterCommand
	Topo   *Topology
	// TmpDir holds plans and -stats files during runs.
	TmpDir string
	// Progress gets one line per run (stderr in aqmlab); may be nil.
	Progress io.Writer
	// Have lists the kernel anchor kinds the kernel has.
	Have map[string]bool
	// FlentDir, if set, keeps the data file (.flent.gz) of every flent
	// run, for flent's own plotting and comparison tools.
	FlentDir string
}

// Nice is the niceness the lab runs its router and agents at (through the
// nice program, so every thread inherits it): -10 by default, so that
// other work on a shared machine delays them less and the probe measures
// queueing more than CPU contention. 0 runs them as any other process.
var Nice = -10

func niceArgs() []string {
	if Nice == 0 {
		return nil
	}
	if _, err := exec.LookPath("nice"); err != nil {
		return nil
	}
	return []string{"nice", "-n", strconv.Itoa(Nice)}
}

// Ports of the server agent.
const (
	tcpPort  = 5201
	udpPort  = 5202
	sinkPort = 5203
)

// RunAll runs reps repetitions of cfgs, interleaved, in the rotated order
// of Schedule, and returns every result in schedule order. A run that
// fails is kept with its Err set; ctx's end stops the schedule.
func (l *Lab) RunAll(ctx context.Context, cfgs []Config, reps int) []Result {
	sched := Schedule(len(cfgs), reps)
	var out []Result
	for i, rc := range sched {
		if ctx.Err() != nil {
			break
		}
		cfg := cfgs[rc[1]]
		t0 := time.Now()
		res, err := l.RunOne(ctx, cfg)
		res.Rep, res.Seq = rc[0], i
		if err != nil {
			res.Err = err.Error()
		}
		out = append(out, res)
		if l.Progress != nil {
			fmt.Fprintf(l.Progress, "[%d/%d] %s %s rep %d: %s (%.1f s)\n", i+1, len(sched), cfg.Test, cfg.Name(), rc[0]+1, res.Line(), time.Since(t0).Seconds())
		}
	}
	return out
}

// otherLabs collects OtherLabs every second until stop.
type otherLabs struct {
	mu   sync.Mutex
	pids []int
	done chan struct{}
	once sync.Once
}

func watchOtherLabs() *otherLabs {
	o := &otherLabs{done: make(chan struct{})}
	o.add(OtherLabs())
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-o.done:
				return
			case <-t.C:
				o.add(OtherLabs())
			}
		}
	}()
	return o
}

func (o *otherLabs) add(pids []int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range pids {
		if !slices.Contains(o.pids, p) {
			o.pids = append(o.pids, p)
		}
	}
}

// stop ends the watch (once) and returns the pids seen, sorted.
func (o *otherLabs) stop() []int {
	o.once.Do(func() { close(o.done) })
	o.add(OtherLabs())
	o.mu.Lock()
	defer o.mu.Unlock()
	slices.Sort(o.pids)
	return slices.Clone(o.pids)
}

// Line is a one-line summary of a result.
func (r Result) Line() string {
	if r.Err != "" {
		return "FAILED: " + r.Err
	}
	s := fmt.Sprintf("added p50 %+.1f p99 %+.1f ms (%s), probe loss %.1f%%, goodput %.1f%% of rate, jain %.3f, drops %d, marks %d",
		r.AddedP50Ms, r.AddedP99Ms, r.Grade, 100*r.ProbeLoss, 100*r.Share, r.Jain, r.Drops, r.Marks)
	if r.Config.Queue.Kernel == nil && !r.Conserved {
		s += ", COUNTERS NOT CONSERVED"
	}
	if r.TimerLag.Wakeups > 0 {
		s += fmt.Sprintf(", timer p99 %.1f ms, late %.1f%%", r.TimerLag.P99Ms, 100*r.TimerLag.Lost)
	}
	if len(r.OtherLabs) > 0 {
		s += fmt.Sprintf(", BESIDE ANOTHER LAB (pid %v)", r.OtherLabs)
	}
	if len(r.Errors) > 0 {
		s += fmt.Sprintf(", %d agent errors (first: %s)", len(r.Errors), r.Errors[0])
	}
	return s
}

func token() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// process is a long-running helper in a namespace.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	out  strings.Builder
}

func (t *Topology) startAgent(ns string, args ...string) (*process, io.Reader, error) {
	p := &process{done: make(chan struct{})}
	argv := append(append([]string{"netns", "exec", ns}, niceArgs()...), t.Exe, AgentArg)
	p.cmd = exec.Command("ip", append(argv, args...)...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	p.cmd.Stderr = &syncWriter{w: &p.out}
	if err := p.cmd.Start(); err != nil {
		return nil, nil, err
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	return p, stdout, nil
}

func (p *process) stop() {
	if p == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// clientNS returns the namespace of path index k (0 = main client).
func (l *Lab) clientNS(k int) string {
	if k == 0 {
		return l.Topo.Client
	}
	return l.Topo.Paths[k-1].Client
}

// RunOne runs one configuration: server agent, router (and hop routers),
// kernel anchor, client agents; then it stops everything and analyses.
func (l *Lab) RunOne(ctx context.Context, cfg Config) (Result, error) {
	res := Result{Config: cfg, Start: time.Now()}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	if len(cfg.Paths) > len(l.Topo.Paths) {
		return res, fmt.Errorf("config needs %d extra paths, the topology has %d", len(cfg.Paths), len(l.Topo.Paths))
	}
	for i, e := range cfg.Paths {
		if l.Topo.Paths[i].Extra != e {
			return res, fmt.Errorf("path %d adds %v, the topology's adds %v", i, e, l.Topo.Paths[i].Extra)
		}
	}
	t := l.Topo
	end := cfg.End()

	// Namespaces that run TCP: ECN on or off.
	ecn := "net.ipv4.tcp_ecn=0"
	if cfg.ECN {
		ecn = "net.ipv4.tcp_ecn=1"
	}
	nss := []string{t.Client, t.Server}
	for k := range cfg.Paths {
		nss = append(nss, t.Paths[k].Client)
	}
	for _, ns := range nss {
		if err := t.sysctl(ctx, ns, ecn); err != nil {
			return res, err
		}
	}

	// The veths' offloads, as the configuration asks.
	if t.OffloadsOn != cfg.Offload.Veth || t.Offloads == nil {
		if err := t.SetOffloads(ctx, cfg.Offload.Veth); err != nil {
			return res, err
		}
	}
	res.Offloads = slices.Clone(t.Offloads)

	// Server agent.
	srv, srvOut, err := t.startAgent(t.Server, "server", "-addr", ServerAddr, "-tcp", fmt.Sprint(tcpPort),
		"-udp", fmt.Sprint(udpPort), "-sink", fmt.Sprint(sinkPort), "-for", (end + 2*time.Minute).String())
	if err != nil {
		return res, err
	}
	defer srv.stop()
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(srvOut).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("server agent said %q", line)
		}
		ready <- err
		io.Copy(io.Discard, srvOut)
	}()
	select {
	case err := <-ready:
		if err != nil {
			return res, fmt.Errorf("server agent: %v: %s", err, srv.out.String())
		}
	case <-time.After(10 * time.Second):
		return res, fmt.Errorf("server agent not ready in 10 s: %s", srv.out.String())
	}

	// Router: the queue under test, or delay only for a kernel anchor.
	ra := RouterArgs{AQM: cfg.Queue.Router, Rate: cfg.Rate.String(), Delay: cfg.RTT / 2, Limit: cfg.Queue.Limit, Params: cfg.Queue.Params,
		GSO: cfg.Offload.GSO, Extra: cfg.RouterExtra}
	if k := cfg.Queue.Kernel; k != nil {
		ra = RouterArgs{AQM: "fifo", Rate: "0", Delay: cfg.RTT / 2, GSO: cfg.Offload.GSO}
		if k.Kind == "netem" {
			ra.Delay = 0
		}
		if !l.Have[k.Kind] {
			return res, fmt.Errorf("the kernel has no %s qdisc", k.Kind)
		}
	}
	others := watchOtherLabs()
	defer others.stop()
	// The timer-lateness probe, in the router's namespace at the lab's
	// niceness, for the whole run; stopped (and read) after the clients.
	lag := exec.Command("ip", append(append([]string{"netns", "exec", t.Router}, niceArgs()...),
		t.Exe, AgentArg, "timerlag", (end+time.Minute).String())...)
	var lagOut bytes.Buffer
	lag.Stdout = &lagOut
	if err := lag.Start(); err != nil {
		return res, fmt.Errorf("timer-lateness probe: %v", err)
	}
	lagDone := make(chan struct{})
	go func() { lag.Wait(); close(lagDone) }()
	defer func() {
		select {
		case <-lagDone:
		default:
			lag.Process.Kill()
			<-lagDone
		}
	}()
	rp, err := StartRouter(ctx, l.Router, t.Router, "tun0", l.TmpDir, ra)
	if err != nil {
		return res, err
	}
	routerStopped := false
	defer func() {
		if !routerStopped {
			rp.Stop()
		}
	}()
	// Hop routers of the longer paths: delay only.
	var hops []*RouterProc
	defer func() {
		for _, h := range hops {
			h.Stop()
		}
	}()
	if len(cfg.Paths) > 0 {
		standin, err := StandinRouter()
		if err != nil {
			return res, err
		}
		for k, e := range cfg.Paths {
			h, err := StartRouter(ctx, standin, t.Paths[k].Hop, "tun0", l.TmpDir, RouterArgs{AQM: "fifo", Rate: "0", Delay: e / 2})
			if err != nil {
				return res, fmt.Errorf("hop %d: %v", k, err)
			}
			hops = append(hops, h)
		}
	}
	devs := []string{"r0", "r1"}
	if k := cfg.Queue.Kernel; k != nil {
		for _, dev := range devs {
			if err := ApplyKernel(ctx, t.Router, dev, *k, cfg.Rate, cfg.RTT); err != nil {
				return res, err
			}
		}
		defer func() {
			for _, dev := range devs {
				ClearKernel(context.Background(), t.Router, dev)
			}
		}()
	}

	// Plans, one per client namespace in use.
	run := token()
	epoch := time.Now().Add(time.Second)
	if cfg.Moving != nil {
		stopMoving, err := startMoving(ctx, t.Router, "r1", cfg.Moving, epoch, cfg.RTT)
		if err != nil {
			return res, fmt.Errorf("moving bottleneck: %v", err)
		}
		defer stopMoving()
	}
	plans := map[int]*Plan{}
	plan := func(k int) *Plan {
		if plans[k] == nil {
			plans[k] = &Plan{Run: run, Server: ServerAddr, TCPPort: tcpPort, UDPPort: udpPort, SinkPort: sinkPort,
				Epoch: epoch.UnixNano(), End: end, SampleEvery: 100 * time.Millisecond}
		}
		return plans[k]
	}
	main := plan(0)
	main.Probe = &ProbeSpec{Interval: cfg.ProbeInterval, Start: 0, Stop: end}
	main.Floods = cfg.Floods
	for _, f := range cfg.Flows {
		p := plan(f.Path)
		p.Flows = append(p.Flows, f)
	}
	if cfg.Flent != "" { // flent's load and ping replace the agents'
		clear(plans)
	}
	type out struct {
		k   int
		res ClientResult
		err error
	}
	outs := make(chan out, len(plans))
	for k, p := range plans {
		b, _ := json.Marshal(p)
		file := filepath.Join(l.TmpDir, fmt.Sprintf("plan-%s-%d.json", run, k))
		if err := os.WriteFile(file, b, 0o644); err != nil {
			return res, err
		}
		defer os.Remove(file)
		go func() {
			cctx, cancel := context.WithTimeout(ctx, end+2*time.Minute)
			defer cancel()
			argv := append(append([]string{"netns", "exec", l.clientNS(k)}, niceArgs()...), t.Exe, AgentArg, "client", file)
			cmd := exec.CommandContext(cctx, "ip", argv...)
			var so, se strings.Builder
			cmd.Stdout, cmd.Stderr = &so, &se
			cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
			cmd.WaitDelay = 10 * time.Second
			err := cmd.Run()
			var cr ClientResult
			if err == nil {
				err = json.Unmarshal([]byte(so.String()), &cr)
			}
			if err != nil {
				err = fmt.Errorf("client agent in %s: %v: %s", l.clientNS(k), err, strings.TrimSpace(se.String()))
			}
			outs <- out{k, cr, err}
		}()
	}
	clients := make([]ClientResult, 1+len(cfg.Paths))
	var errs []error
	if cfg.Flent != "" {
		// flent's load replaces the agents', and its samples count from its
		// own start.
		cr, began, file, err := l.runFlent(ctx, cfg)
		clients[0], res.FlentFile = cr, file
		if err != nil {
			errs = append(errs, err)
		}
		if !began.IsZero() {
			epoch = began
		}
	}
	for range plans {
		o := <-outs
		clients[o.k] = o.res
		if o.err != nil {
			errs = append(errs, o.err)
		}
	}
	kstats := map[string][]QdiscStats{}
	if cfg.Queue.Kernel != nil {
		for _, dev := range devs {
			if qs, err := KernelStats(ctx, t.Router, dev); err == nil {
				kstats[dev] = qs
			}
		}
	}
	load1 := ReadLoad1()
	lag.Process.Signal(syscall.SIGTERM)
	timerLag := SummarizeTimerLag(nil, 0)
	select {
	case <-lagDone:
		if json.Unmarshal(lagOut.Bytes(), &timerLag) != nil {
			timerLag = SummarizeTimerLag(nil, 0)
		}
	case <-time.After(5 * time.Second):
	}
	procs := rp.Samples()
	st, raw, serr := rp.Stop()
	routerStopped = true
	offl := res.Offloads
	flentFile := res.FlentFile
	res = Analyze(cfg, clients, epoch, procs)
	res.Offloads = offl
	res.Start = epoch
	res.Load1 = load1
	res.OtherLabs = others.stop()
	res.TimerLag = timerLag
	res.SetRouter(st, raw, kstats)
	res.FlentFile = flentFile
	if serr != nil {
		errs = append(errs, serr)
	}
	return res, errors.Join(errs...)
}
