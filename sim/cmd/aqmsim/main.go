// Command aqmsim answers "which AQM, with which settings, for my link?": it
// runs aqmkit's deterministic packet-level bottleneck simulator
// (package sim) over named scenarios and prints a table per scenario,
// and optionally writes plots, JSON and CSV.
//
// With no arguments it compares every AQM in the library on one
// representative link:
//
//	go run ./sim/cmd/aqmsim
//
// Other scenarios reproduce published results:
//
//	go run ./sim/cmd/aqmsim -scenario red-family -out results/red
//	go run ./sim/cmd/aqmsim -scenario l4s -out results/l4s
//	go run ./sim/cmd/aqmsim -scenario speedtest -quick
//	go run ./sim/cmd/aqmsim -scenario speedtest -out results/speedtest
//
// Each scenario runs its TCP flows on a TCP profile, ns-3 3.37's (red-family)
// or Linux 6.x's (the others); -tcp ns3 or -tcp linux overrides it, and the
// tables, CSV and JSON name it:
//
//	go run ./sim/cmd/aqmsim -scenario red-family -tcp linux
//
// Runs are deterministic for a given seed; repetitions use seeds seed,
// seed+1, … and run in parallel on all cores.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed flags.
type options struct {
	scenario string
	sim      sim.Options
	reps     int
	workers  int
	out      string
	format   string
	quiet    bool
	list     bool
	from     string
}

// usageError is a bad flag value: reported with the usage and exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("aqmsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var aqms, rate, rtts, traces string
	var seed uint64
	fs.StringVar(&o.scenario, "scenario", "compare", "scenario to run: compare, red-family, l4s, speedtest, autorate, flood or lab")
	fs.StringVar(&aqms, "aqms", "", "comma-separated AQMs to compare instead of the scenario's (see -list)")
	fs.StringVar(&rate, "rate", "", "bottleneck rate in bit/s, with an optional k, M or G suffix (e.g. 40M)")
	fs.StringVar(&rtts, "rtts", "", "comma-separated base RTTs (e.g. 10ms,50ms)")
	fs.IntVar(&o.sim.Flows, "flows", 0, "number of long-lived flows (l4s: n L4S + n Classic)")
	fs.DurationVar(&o.sim.Duration, "duration", 0, "simulated time per run (speedtest: the test's length)")
	fs.Uint64Var(&seed, "seed", 1, "seed of the first repetition")
	fs.IntVar(&o.reps, "reps", 0, "repetitions with seeds seed, seed+1, … (0: the scenario's default)")
	fs.IntVar(&o.workers, "workers", 0, "simulations run in parallel (0: all cores)")
	fs.StringVar(&o.out, "out", "", "folder for plots, JSON and CSV (none if empty)")
	fs.StringVar(&o.format, "format", "svg", "plot format: svg or png")
	fs.BoolVar(&o.quiet, "q", false, "no progress on stderr")
	fs.BoolVar(&o.list, "list", false, "list the scenarios and AQMs and exit")
	fs.StringVar(&o.sim.Variant, "variant", "", "a named variant of the scenario (see -list)")
	fs.BoolVar(&o.sim.Quick, "quick", false, "a CI-sized version of the scenario (speedtest)")
	fs.StringVar(&o.sim.TCP, "tcp", "", "TCP profile instead of the scenario's: ns3 (ns-3 3.37's defaults) or linux (Linux 6.x)")
	fs.StringVar(&traces, "trace", "", "autorate: comma-separated capacity trace files instead of the shipped ones "+
		"(mahimahi .up/.down/.mahi, .rate, or a throughput .csv; file.csv:column picks a column)")
	fs.StringVar(&o.from, "from", "", "print the tables (and, with -out, plots) from a JSON file an earlier -out wrote, without simulating")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: aqmsim [flags]\n\nRuns the deterministic bottleneck simulator and prints a table per scenario.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Sprintf("unexpected argument %q (all options are flags)", fs.Arg(0))}
	}
	o.sim.Seed = seed
	sc, err := sim.LookupScenario(o.scenario)
	if err != nil {
		return o, usageError{"-scenario: " + err.Error()}
	}
	if o.sim.Variant != "" && !slices.Contains(sc.Variants, o.sim.Variant) {
		return o, usageError{fmt.Sprintf("-variant: scenario %s has no variant %q (variants: %s)", sc.Name, o.sim.Variant, strings.Join(sc.Variants, ", "))}
	}
	if o.sim.TCP != "" {
		if _, err := sim.TCPProfile(o.sim.TCP); err != nil {
			return o, usageError{"-tcp: " + strings.TrimPrefix(err.Error(), "sim: ")}
		}
	}
	if aqms != "" {
		for _, n := range strings.Split(aqms, ",") {
			n = strings.TrimSpace(n)
			if _, err := sim.LookupAQM(n); err != nil {
				return o, usageError{"-aqms: " + strings.TrimPrefix(err.Error(), "sim: ")}
			}
			o.sim.AQMs = append(o.sim.AQMs, n)
		}
	}
	if traces != "" {
		if sc.Name != "autorate" {
			return o, usageError{"-trace: only the autorate scenario runs on a trace file"}
		}
		for _, f := range strings.Split(traces, ",") {
			o.sim.Traces = append(o.sim.Traces, strings.TrimSpace(f))
		}
	}
	if rate != "" {
		r, err := parseRate(rate)
		if err != nil {
			return o, usageError{"-rate: " + err.Error()}
		}
		o.sim.RateBps = r
	}
	if rtts != "" {
		for _, s := range strings.Split(rtts, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil || d <= 0 || d > time.Minute {
				return o, usageError{fmt.Sprintf("-rtts: %q is not a duration in (0, 1m] such as 20ms", s)}
			}
			o.sim.RTTs = append(o.sim.RTTs, d)
		}
	}
	switch {
	case o.sim.Flows < 0 || o.sim.Flows > 10000:
		return o, usageError{fmt.Sprintf("-flows: %d is not in [0, 10000]", o.sim.Flows)}
	case o.sim.Duration < 0 || o.sim.Duration > 24*time.Hour:
		return o, usageError{fmt.Sprintf("-duration: %v is not in [0, 24h]", o.sim.Duration)}
	case o.reps < 0 || o.reps > 1000:
		return o, usageError{fmt.Sprintf("-reps: %d is not in [0, 1000]", o.reps)}
	case o.workers < 0:
		return o, usageError{fmt.Sprintf("-workers: %d must not be negative", o.workers)}
	case o.format != "svg" && o.format != "png":
		return o, usageError{fmt.Sprintf("-format: %q is neither svg nor png", o.format)}
	}
	o.sim.Series = o.out != ""
	return o, nil
}

// parseRate parses "40M", "1.5G", "500k" or "2000000" as bits per second.
func parseRate(s string) (float64, error) {
	mult := 1.0
	t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "bps"), "bit")
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult, t = 1e3, t[:n-1]
		case 'M':
			mult, t = 1e6, t[:n-1]
		case 'G':
			mult, t = 1e9, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || v*mult > 1e12 {
		return 0, fmt.Errorf("%q is not a rate such as 40M (bits per second, up to 1T)", s)
	}
	return v * mult, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "aqmsim: %v\nRun 'aqmsim -h' for usage.\n", err)
		}
		return 2
	}
	if o.list {
		listAll(stdout)
		return 0
	}
	sc, _ := sim.LookupScenario(o.scenario)
	if o.from != "" {
		return replay(o, sc, stdout, stderr)
	}
	runs, err := sc.Runs(o.sim)
	if err != nil {
		fmt.Fprintf(stderr, "aqmsim: %v\n", err)
		return 1
	}
	reps := o.reps
	if reps == 0 {
		reps = sc.DefaultReps
		if o.sim.Quick {
			reps = min(reps, 2)
		}
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			fmt.Fprintf(stderr, "aqmsim: %v\n", err)
			return 1
		}
	}
	workers := o.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	start := time.Now()
	var progress func(done, total int, oc sim.Outcome)
	if !o.quiet {
		fmt.Fprintf(stderr, "aqmsim: %s: %d runs × %d reps on %d workers\n", sc.Name, len(runs), reps, workers)
		progress = func(done, total int, oc sim.Outcome) {
			wall := 0.0
			if oc.Result != nil {
				wall = oc.Result.WallSeconds
			}
			fmt.Fprintf(stderr, "  [%d/%d] %s %s seed=%d (%.2fs) elapsed %.1fs\n", done, total, oc.Run.Group, oc.Run.AQM,
				oc.Run.Config.Seed, wall, time.Since(start).Seconds())
		}
	}
	outs := sim.ExecuteAll(runs, reps, workers, progress)
	for _, oc := range outs {
		if oc.Err != nil {
			fmt.Fprintf(stderr, "aqmsim: %v\n", oc.Err)
			return 1
		}
	}
	elapsed := time.Since(start)
	printReport(stdout, sc, o, outs, reps, elapsed)
	if o.out != "" {
		if err := writeOutputs(o, sc, outs); err != nil {
			fmt.Fprintf(stderr, "aqmsim: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwrote JSON, CSV and %s plots to %s\n", o.format, o.out)
	}
	return 0
}

func listAll(w io.Writer) {
	fmt.Fprintln(w, "scenarios:")
	for _, s := range sim.Scenarios() {
		fmt.Fprintf(w, "  %-11s %s\n", s.Name, s.Desc)
		if len(s.Variants) > 0 {
			fmt.Fprintf(w, "  %-11s variants: %s\n", "", strings.Join(s.Variants, ", "))
		}
		if miss := sim.MissingAQMs(sim.ScenarioAQMs(s.Name)); len(miss) > 0 {
			fmt.Fprintf(w, "  %-11s (not built yet: %s)\n", "", strings.Join(miss, ", "))
		}
	}
	fmt.Fprintln(w, "AQMs:")
	for _, a := range sim.AQMs() {
		fmt.Fprintf(w, "  %-11s %s\n", a.Name, a.Desc)
	}
}

// replay prints the report of runs saved by an earlier -out, read back
// from its JSON file: tables and findings need only the exported metrics.
func replay(o options, sc sim.Scenario, stdout, stderr io.Writer) int {
	raw, err := os.ReadFile(o.from)
	if err != nil {
		fmt.Fprintf(stderr, "aqmsim: -from: %v\n", err)
		return 1
	}
	var recs []record
	if err := json.Unmarshal(raw, &recs); err != nil {
		fmt.Fprintf(stderr, "aqmsim: -from: %s is not an aqmsim JSON output: %v\n", o.from, err)
		return 1
	}
	outs := make([]sim.Outcome, 0, len(recs))
	reps := 1
	for _, r := range recs {
		if r.Run.Scenario != sc.Name || r.Result == nil {
			fmt.Fprintf(stderr, "aqmsim: -from: %s holds a %q run, not one of scenario %s\n", o.from, r.Run.Scenario, sc.Name)
			return 1
		}
		outs = append(outs, sim.Outcome{Run: r.Run, Result: r.Result})
		reps = max(reps, r.Run.Rep+1)
	}
	if len(outs) > 0 {
		o.sim.Seed = outs[0].Run.Config.Seed
	}
	printReport(stdout, sc, o, outs, reps, 0)
	if o.out != "" {
		if err := writePlots(o, sc, outs); err != nil {
			fmt.Fprintf(stderr, "aqmsim: %v\n", err)
			return 1
		}
	}
	return 0
}
