package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aqmkit/aqmkit/lab"
)

// runSoak is `aqmlab soak`: the router under load and faults for -dur, its
// last line the SOAK summary; the status is 1 unless the counters
// conserved throughout and nothing panicked.
func runSoak(args []string) int {
	fs := flag.NewFlagSet("aqmlab soak", flag.ContinueOnError)
	o := lab.DefaultSoakOptions(time.Minute)
	fs.DurationVar(&o.Duration, "dur", 2*time.Minute, "how long the load runs")
	fs.Var(&o.Rate, "rate", "bottleneck rate per direction (tc syntax)")
	fs.DurationVar(&o.Sample, "sample", o.Sample, "how often the router is sampled")
	fs.DurationVar(&o.Reconfig, "reconfig", o.Reconfig, "how often the router's rate (every third time its queue) is changed")
	fs.IntVar(&o.MalformedPerSecond, "malformed", o.MalformedPerSecond, "malformed packets a second into the TUN's path")
	fs.IntVar(&o.FaultWriteEvery, "fault-write-every", o.FaultWriteEvery, "every n-th packet the router writes fails (0: none)")
	router := fs.String("router", "", "router program; empty = go build ./cmd/aqmrouter")
	out := fs.String("out", "aqmlab-soak", "directory for soak.csv, soak.json and soak.png")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "aqmlab soak runs rrul-like load through the router for -dur while it is flooded, fed malformed packets, reconfigured, its device taken down and up, and its writes made to fail; it samples RSS, goroutines and buffers and ends with a SOAK line.\n\nUsage: aqmlab soak [flags] (root; Linux)\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if o.Duration < 20*time.Second {
		fmt.Fprintln(os.Stderr, "aqmlab soak: -dur must be at least 20s")
		return 2
	}
	o.OutDir, o.Progress = *out, os.Stderr
	if err := lab.Preflight(); err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab:", err)
		return 1
	}
	if _, err := lab.CleanLeftovers(); err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab: cleaning leftovers:", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rc, err := routerCommand(ctx, *router)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab:", err)
		return 1
	}
	res, err := lab.RunSoak(ctx, rc, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aqmlab soak:", err)
	}
	fmt.Println(res.Line())
	if !res.Conserved || res.Panics > 0 || len(res.Samples) == 0 {
		return 1
	}
	return 0
}
