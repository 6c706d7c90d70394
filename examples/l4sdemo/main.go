// Command l4sdemo shows DualPI2 separating an L4S flow from a Classic one on
// loopback. It starts an upstream receiver, a relay shaped to -rate through
// the queue chosen by -aqm, and two paced UDP senders through the relay: an
// L4S flow (ECT(1)) at -l4s of the rate and a Classic flow (Not-ECT) at
// -classic of it, together more than the link carries. It then prints each
// flow's delay and how it was signalled (CE marks or losses).
//
// With DualPI2 the L4S flow's packets wait in their own shallow queue and
// are marked CE, so their delay stays around a millisecond, while the
// Classic queue is held near the PI target (15 ms) by drops. With a single
// queue (-aqm pie, or fifo) both flows share one delay.
//
//	l4sdemo -aqm dualpi2 -duration 3s
//
// The ECN bits travel in the IP header (IP_TOS), so marks are visible only on
// Linux; elsewhere every flow is Not-ECT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/examples/internal/relay"
	"github.com/aqmkit/aqmkit/examples/internal/traffic"
	"github.com/aqmkit/aqmkit/queues"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		fmt.Fprintln(os.Stderr, "l4sdemo:", err)
		os.Exit(2)
	}
}

// FlowResult is one flow's outcome, measured over the second half of the run
// (after the controllers have settled).
type FlowResult struct {
	Name           string
	Sent, Received int
	CE             int // received with CE
	P50, P99       time.Duration
}

const (
	flowL4S     = 1
	flowClassic = 2
	packetBytes = 1000
)

// run parses args, runs the demo and prints the result table.
func run(ctx context.Context, args []string, out io.Writer) ([]FlowResult, error) {
	fs := flag.NewFlagSet("l4sdemo", flag.ContinueOnError)
	fs.SetOutput(out)
	var (
		name     = fs.String("aqm", "dualpi2", "queue: "+strings.Join(queues.Names(), ", "))
		rate     = 8 * aqm.Mbit
		l4s      = fs.Float64("l4s", 0.4, "L4S flow's rate as a `fraction` of the link")
		classic  = fs.Float64("classic", 0.75, "Classic flow's rate as a `fraction` of the link")
		duration = fs.Duration("duration", 3*time.Second, "how long the senders run, as a `duration` (for example 3s)")
	)
	fs.Var(&rate, "rate", "link `rate` in tc syntax (8mbit, 1.5gbit)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "l4sdemo shows DualPI2 keeping an L4S flow's delay low beside a Classic flow, on loopback.\n\nUsage: l4sdemo [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	recv, err := traffic.Listen()
	if err != nil {
		return nil, err
	}
	r, err := relay.New(relay.Config{
		Listen: "127.0.0.1:0", Upstream: recv.Addr().String(), AQM: *name,
		Rate: rate, BurstBytes: 10 * packetBytes, LimitPackets: 1000,
	})
	if err != nil {
		recv.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	relayDone := make(chan error, 1)
	go func() { relayDone <- r.Run(ctx) }()

	pps := float64(rate) / 8 / packetBytes
	flows := []traffic.Flow{
		{ID: flowL4S, PacketsPerSec: *l4s * pps, SizeBytes: packetBytes, TOS: 0x01}, // ECT(1)
		{ID: flowClassic, PacketsPerSec: *classic * pps, SizeBytes: packetBytes},    // Not-ECT
	}
	sent := make([]int, len(flows))
	start := traffic.Since()
	var wg sync.WaitGroup
	for i := range flows {
		flows[i].Count = int(flows[i].PacketsPerSec * duration.Seconds())
		wg.Go(func() { sent[i], _ = traffic.Send(ctx, r.Addr(), flows[i]) })
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond) // drain
	cancel()
	relayErr := <-relayDone
	samples := recv.Close()
	if relayErr != nil {
		return nil, relayErr
	}

	fmt.Fprintf(out, "l4sdemo: %s at %v; L4S (ECT(1)) at %.0f%%, Classic (Not-ECT) at %.0f%% of it, for %v\n",
		*name, rate, 100**l4s, 100**classic, *duration)
	fmt.Fprintf(out, "%-8s %6s %6s %6s %6s %9s %9s\n", "flow", "sent", "recv", "lost", "CE", "p50", "p99")
	half := start + *duration/2
	var res []FlowResult
	for i, f := range flows {
		all := traffic.Select(samples, f.ID, 0, 1<<62)
		late := traffic.Select(samples, f.ID, half, 1<<62)
		fr := FlowResult{Name: [...]string{"L4S", "Classic"}[i], Sent: sent[i], Received: len(all), CE: traffic.CE(all),
			P50: traffic.Percentile(late, 0.5), P99: traffic.Percentile(late, 0.99)}
		res = append(res, fr)
		fmt.Fprintf(out, "%-8s %6d %6d %6d %6d %9v %9v\n", fr.Name, fr.Sent, fr.Received, fr.Sent-fr.Received, fr.CE,
			fr.P50.Round(10*time.Microsecond), fr.P99.Round(10*time.Microsecond))
	}
	fmt.Fprintln(out, "relay:", r.Report())
	return res, nil
}
