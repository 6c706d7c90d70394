//go:build ignore

// simside runs the simulator's red-family scenario (base case) for the
// seeds given and prints one CSV row per run with the columns redstudy
// prints, so that run.sh can summarise both sides the same way. The
// simulator's own drop counters do not split RED's early and forced drops,
// so each run is repeated with the queue kept in hand to read them; the two
// runs must agree, or simside fails.
//
// Run it from the repository root (go.work resolves the sim module):
//
//	go run bench/ns3/simside.go -seeds 10
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/red"
	"github.com/aqmkit/aqmkit/sim"
)

// variants maps redstudy's variants to the simulator's AQM names. The
// drop-tail variant is the simulator's FIFO at the scenario's limit.
var variants = map[string]string{"red": "red", "gentle": "gentle-red", "ared": "ared", "droptail": "fifo"}

func main() {
	seeds := flag.Int("seeds", 10, "seeds 1…n")
	header := flag.Bool("header", true, "print the CSV header first")
	only := flag.String("variants", "red,gentle,ared", "comma-separated redstudy variants: red, gentle, ared, droptail")
	duration := flag.Duration("duration", 0, "simulated time (0: the scenario's 60 s); the window starts at a sixth of it, at most 10 s")
	flag.Parse()
	if *seeds < 1 || *seeds > 1000 {
		fmt.Fprintf(os.Stderr, "simside: -seeds %d is not in [1, 1000]\n", *seeds)
		os.Exit(2)
	}
	sc, err := sim.LookupScenario("red-family")
	if err != nil {
		fail(err)
	}
	if *header {
		fmt.Println("variant,run,drops,early,forced,overflow,drops_window,goodput_mbps," +
			"utilization,disc_q_mean,disc_q_p99,total_q_mean,total_q_p99," +
			"cov_flows,cov_agg_100ms,cov_flow_100ms,min_th,max_th,qw")
	}
	for _, name := range strings.Split(*only, ",") {
		aqmName, ok := variants[name]
		if !ok {
			fail(fmt.Errorf("-variants: unknown variant %q (want red, gentle, ared or droptail)", name))
		}
		for seed := uint64(1); seed <= uint64(*seeds); seed++ {
			runs, err := sc.Runs(sim.Options{Seed: seed, AQMs: []string{aqmName}, Duration: *duration})
			if err != nil {
				fail(err)
			}
			if len(runs) != 1 || runs[0].Group != "base" {
				fail(fmt.Errorf("red-family gave %d runs for %s, want the base case alone", len(runs), aqmName))
			}
			if err := row(name, runs[0], seed); err != nil {
				fail(err)
			}
		}
	}
}

// row runs r as aqmsim does and again with its RED queue in hand, and
// prints the CSV row.
func row(name string, r sim.Run, seed uint64) error {
	plain, err := r.Execute()
	if err != nil {
		return err
	}
	a, err := sim.LookupAQM(r.AQM)
	if err != nil {
		return err
	}
	var (
		aq aqm.Queue[uint64]
		rq *red.Queue[uint64]
	)
	s, err := sim.New(r.Config, func(onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		q, err := a.New(sim.Env{
			RateBps: r.Config.BottleneckBps(), MSS: max(r.Config.MSS, 0), MaxRTT: r.Config.MaxRTT(),
			BufferPackets: r.BufferPackets, REDMinThreshold: r.REDMinThreshold,
			REDMaxThreshold: r.REDMaxThreshold, RED: r.RED, Seed: seed, OnDrop: onDrop,
		})
		if err != nil {
			return nil, err
		}
		aq = q
		var ok bool
		if rq, ok = q.(*red.Queue[uint64]); !ok && r.AQM != "fifo" {
			return nil, fmt.Errorf("%s: queue is %T, not a RED queue on its own", r.AQM, q)
		}
		return q, nil
	})
	if err != nil {
		return err
	}
	res := s.Run()
	if res.DropsWholeRun != plain.DropsWholeRun || res.PayloadGoodputMbps != plain.PayloadGoodputMbps {
		return fmt.Errorf("%s seed %d: the instrumented run differs from aqmsim's (drops %d vs %d)",
			r.AQM, seed, res.DropsWholeRun, plain.DropsWholeRun)
	}
	// The FIFO has no early or forced drops and no thresholds: its drops
	// are all refusals at the limit.
	st := aq.Stats()
	var d red.Detail
	if rq != nil {
		d = rq.Detail()
	}
	var flows []float64
	for _, f := range res.Flows {
		flows = append(flows, f.PayloadGoodputMbps)
	}
	q := float64(res.QueueGrid.MeanPackets)
	p99 := res.QueueGrid.P99Packets
	fmt.Printf("%s,%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.3f,%.0f,%.3f,%.0f,%.4f,%.4f,%.4f,%g,%g,%.6f\n",
		name, seed, res.DropsWholeRun, d.DroppedProbabilistic, d.DroppedForced, st.DroppedOverlimit.Packets, res.Drops,
		res.PayloadGoodputMbps, res.Utilization, q, p99, q, p99,
		cov(flows), res.GoodputCoV100ms, res.FlowCoV100ms, d.MinThreshold, d.MaxThreshold, d.Weight)
	return nil
}

// cov is the population standard deviation over the mean, as redstudy's.
func cov(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	m := s / float64(len(xs))
	if m == 0 {
		return 0
	}
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v/float64(len(xs))) / m
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "simside:", err)
	os.Exit(1)
}
