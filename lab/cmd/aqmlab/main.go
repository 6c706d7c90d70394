// Command aqmlab runs latency-under-load tests modelled on flent with real
// kernel TCP through the aqmkit TUN router and, as anchors in the same
// run, the kernel's own qdiscs, in network namespaces it creates and
// removes. See lab/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/aqmkit/aqmkit/lab"
)

func main() {
	lab.MaybeAgent()
	os.Exit(run(os.Args[1:]))
}

func usage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintln(w, "aqmlab runs flent-style latency-under-load tests with real kernel TCP through the aqmkit TUN router and the kernel's qdiscs, in network namespaces.")
		fmt.Fprintln(w, "\nUsage: aqmlab [flags] TEST... (root; Linux)")
		fmt.Fprintln(w, "\nTests:")
		for _, t := range lab.Tests {
			fmt.Fprintf(w, "  %-10s %s\n", t, lab.TestInfo[t])
		}
		fmt.Fprintf(w, "  %-10s every test above\n", "all")
		fmt.Fprintf(w, "  %-10s the router for -dur under load and faults (aqmlab soak -h)\n", "soak")
		fmt.Fprintf(w, "\nflent's own tests, when flent, netperf (built with --enable-demo; not in Debian's main archive),\nnetserver and irtt are on PATH (skipped, saying which is missing, otherwise); flent's data files\nare kept in OUT/flent for flent's plotting tools:\n")
		for _, t := range lab.FlentTests {
			fmt.Fprintf(w, "  flent-%-4s flent %s through the router (default queues: fifo:1000, fq-codel, cake)\n", t, t)
		}
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
	}
}

// invocation is what the command line asks for.
type invocation struct {
	cfgs   []lab.Config
	reps   int
	router string
	out    string
	plots  bool
	clean  bool
}

// parse reads the command line into an invocation, building every run's
// configuration; it needs neither root nor a network. A code other than
// -1 ends the program with it (0 after -h, 2 for bad flags).
func parse(args []string) (inv invocation, code int) {
	fs := flag.NewFlagSet("aqmlab", flag.ContinueOnError)
	fs.Usage = usage(fs)
	d := lab.DefaultOptions()
	rate := d.Rate
	fs.Var(&rate, "rate", "bottleneck rate per direction (tc syntax)")
	rtt := fs.Duration("rtt", d.RTT, "base round-trip time added by the router's delay line (half per direction)")
	dur := fs.Duration("duration", d.Duration, "load per run (the red study's default is 60s)")
	idle := fs.Duration("idle", d.Idle, "probe-only time before the load (idle latency)")
	warm := fs.Duration("warmup", d.Warmup, "start of the load left out of latency and goodput")
	cc := fs.String("cc", d.CC, "congestion control of the bulk flows: cubic, bbr, reno; a comma-separated list runs each test once per algorithm, interleaved, as TEST-CC (rrul-cubic, rrul-bbr); speedtest and red keep their own")
	ecn := fs.Bool("ecn", false, "net.ipv4.tcp_ecn=1 in the client and server namespaces (else 0)")
	offloads := fs.String("offloads", "off", "the veths' TSO, GSO and GRO: off, or on (as the kernel sets them), each with an optional :auto, :split or :keep passed to the router as -gso; a comma-separated list runs every configuration once per setting, interleaved, labelled +offload and +gso-POLICY (off,on:split,on:keep)")
	n := fs.Int("n", d.N, "uploads in tcp_nup")
	fs.IntVar(&inv.reps, "reps", 3, "repetitions; the order of configurations rotates each time")
	queues := fs.String("queues", "", "router queues, comma-separated, each [label=]name[:limit][[params]] (e.g. fifo:1000,fq-codel,no-guard=fq-codel[disable-flood-guard=true]; params as aqmrouter -params); \"none\" for none; empty = each test's default")
	kernel := fs.String("kernel", "", "kernel anchors, comma-separated (pfifo:1000, pfifo:100, fq_codel, cake, fq_pie, pie, red, netem; add @15k for an htb burst); \"none\" for none; empty = each test's default")
	fs.StringVar(&inv.router, "router", "", "router program; \"standin\" = the lab's FIFO-only stand-in; empty = go build ./cmd/aqmrouter")
	routerArgs := fs.String("router-args", "", "more flags for the router, space-separated")
	fs.StringVar(&inv.out, "out", "aqmlab-out", "directory for JSON, CSV and plots")
	fs.BoolVar(&inv.plots, "plots", true, "write PNG plots")
	fs.IntVar(&lab.Nice, "nice", lab.Nice, "niceness of the router and the agents (negative = ahead of other work on the machine)")
	fs.BoolVar(&inv.clean, "clean", false, "remove namespaces left by killed aqmlab runs, then exit")
	var tf traceFlags
	tf.add(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return inv, 0
		}
		return inv, 2
	}
	if inv.clean {
		return inv, -1
	}
	tests := fs.Args()
	if len(tests) == 0 {
		fs.Usage()
		return inv, 2
	}
	if len(tests) == 1 && tests[0] == "all" {
		tests = lab.Tests
	}
	ccs := strings.Split(*cc, ",")
	for i := range ccs {
		if ccs[i] = strings.TrimSpace(ccs[i]); ccs[i] == "" {
			fmt.Fprintf(os.Stderr, "aqmlab: -cc %q: an empty name\n", *cc)
			return inv, 2
		}
	}
	offl, err := lab.ParseOffloads(*offloads)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab: -offloads:", err)
		return inv, 2
	}
	o := lab.Options{Rate: rate, RTT: *rtt, Duration: *dur, Idle: *idle, Warmup: *warm, ECN: *ecn, N: *n}
	if o.Queues, err = lab.ParseQueues(*queues); err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab: -queues:", err)
		return inv, 2
	}
	if o.Kernel, err = parseKernel(*kernel); err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab: -kernel:", err)
		return inv, 2
	}
	if err := tf.apply(&o, tests); err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab:", err)
		return inv, 2
	}
	if *queues != "" && *kernel == "" {
		o.Kernel = []lab.KernelQdisc{}
	}
	if *kernel != "" && *queues == "" {
		o.Queues = []lab.Queue{}
	}
	for _, t := range tests {
		algs := ccs
		if t == "speedtest" || t == "red" { // their flows' algorithms are part of the test
			algs = ccs[:1]
		}
		for _, alg := range algs {
			o.CC = alg
			c, err := lab.Suite(t, o)
			if err != nil {
				fmt.Fprintln(os.Stderr, "aqmlab:", err)
				return inv, 2
			}
			for i := range c {
				c[i].RouterExtra = append(c[i].RouterExtra, strings.Fields(*routerArgs)...)
				if len(algs) > 1 {
					c[i].Test += "-" + alg
				}
			}
			// Each offload setting runs every configuration of the test,
			// next to each other in the schedule.
			for _, cfg := range c {
				for _, of := range offl {
					cfg.Offload = of
					cfg.RouterExtra = slices.Clone(cfg.RouterExtra)
					inv.cfgs = append(inv.cfgs, cfg)
				}
			}
		}
	}
	return inv, -1
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "soak" {
		return runSoak(args[1:])
	}
	inv, code := parse(args)
	if code >= 0 {
		return code
	}
	if err := lab.Preflight(); err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab:", err)
		return 1
	}
	removed, err := lab.CleanLeftovers()
	if err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab: cleaning leftovers:", err)
	}
	for _, r := range removed {
		fmt.Fprintln(os.Stderr, "aqmlab: removed leftover namespace", r)
	}
	if inv.clean {
		return 0
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rc, err := routerCommand(ctx, inv.router)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab:", err)
		return 1
	}
	if err := os.MkdirAll(inv.out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab:", err)
		return 1
	}
	s := &lab.Session{Router: rc, Progress: os.Stderr, OutDir: inv.out, Plots: inv.plots}
	if err := s.Run(ctx, inv.cfgs, inv.reps); err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab:", err)
		return 1
	}
	return 0
}

func routerCommand(ctx context.Context, path string) (lab.RouterCommand, error) {
	switch path {
	case "standin":
		return lab.StandinRouter()
	case "":
		for _, dir := range []string{".", "lab"} {
			if _, err := os.Stat(filepath.Join(dir, "cmd", "aqmrouter")); err == nil {
				fmt.Fprintln(os.Stderr, "aqmlab: building", filepath.Join(dir, "cmd", "aqmrouter"))
				bin, err := lab.BuildRouter(ctx, dir, "./cmd/aqmrouter")
				if err != nil {
					return lab.RouterCommand{}, err
				}
				return lab.RouterFromPath(bin)
			}
		}
		return lab.RouterCommand{}, fmt.Errorf("no ./cmd/aqmrouter here to build: run from the lab module, pass -router PATH, or -router standin")
	}
	return lab.RouterFromPath(path)
}

func parseKernel(s string) ([]lab.KernelQdisc, error) {
	if s == "" {
		return nil, nil
	}
	if s == "none" {
		return []lab.KernelQdisc{}, nil
	}
	var out []lab.KernelQdisc
	for _, f := range strings.Split(s, ",") {
		spec, burst, _ := strings.Cut(strings.TrimSpace(f), "@")
		kind, lim, _ := strings.Cut(spec, ":")
		k := lab.KernelQdisc{Kind: kind}
		if kind == "ared" {
			k.Kind, k.Adaptive = "red", true
		}
		if lim != "" {
			if _, err := fmt.Sscan(lim, &k.Limit); err != nil || k.Limit <= 0 {
				return nil, fmt.Errorf("%q: limit must be a positive number", f)
			}
		}
		if burst != "" {
			num, kilo := strings.CutSuffix(strings.ToLower(burst), "k")
			if _, err := fmt.Sscan(num, &k.Burst); err != nil || k.Burst <= 0 {
				return nil, fmt.Errorf("%q: burst must be bytes (15360) or KiB (15k)", f)
			}
			if kilo {
				k.Burst *= 1024
			}
		}
		out = append(out, k)
	}
	return out, nil
}
