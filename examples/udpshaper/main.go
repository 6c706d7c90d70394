// Command udpshaper is a UDP relay that owns its bottleneck: it receives
// datagrams on a local address, queues them in the AQM chosen by -aqm,
// releases them through a token-bucket shaper at -rate, and forwards them to
// -upstream, printing statistics every -stats.
//
//	udpshaper -listen 127.0.0.1:9000 -upstream 127.0.0.1:9001 -rate 20M -aqm fq-codel
//
// ECN is carried through on Linux: the relay reads each datagram's ECN bits
// and sends it upstream with them, or with CE if the AQM marked it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/examples/internal/aqmsel"
	"github.com/aqmkit/aqmkit/examples/internal/relay"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "udpshaper:", err)
		os.Exit(2)
	}
}

// run parses args, relays until ctx ends or -duration passes, and prints a
// final report. ready, if not nil, receives the listening address once the
// relay is up.
func run(ctx context.Context, args []string, out io.Writer, ready func(netip.AddrPort)) error {
	fs := flag.NewFlagSet("udpshaper", flag.ContinueOnError)
	fs.SetOutput(out)
	var (
		listen   = fs.String("listen", "127.0.0.1:9000", "local UDP `address` to receive on")
		upstream = fs.String("upstream", "", "UDP `address` to forward to (required)")
		rateStr  = fs.String("rate", "10M", "shaped `rate` in bits/s, with an optional k, M or G suffix; 0 means unlimited")
		burst    = fs.Int("burst", 0, "shaper burst in `bytes`; 0 means 2 ms of the rate, at least 3028")
		overhead = fs.Int("overhead", 0, "`bytes` added to each datagram's length for the rate (28 for IPv4+UDP headers)")
		name     = fs.String("aqm", "fq-codel", "queue: "+strings.Join(aqmsel.Names(), ", "))
		limit    = fs.Int("limit", 0, "queue limit in `packets`; 0 means the algorithm's default")
		every    = fs.Duration("stats", time.Second, "statistics `interval`; 0 disables the periodic line")
		duration = fs.Duration("duration", 0, "stop after this `long`; 0 runs until interrupted")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" {
		return errors.New("-upstream is required")
	}
	rate, err := parseRate(*rateStr)
	if err != nil {
		return err
	}
	r, err := relay.New(relay.Config{
		Listen: *listen, Upstream: *upstream, AQM: *name, LimitPackets: *limit,
		RateBitsPerSec: rate, BurstBytes: *burst, OverheadBytes: *overhead,
	})
	if err != nil {
		return err
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	fmt.Fprintf(out, "udpshaper: %s -> %s at %s bit/s through %s\n", r.Addr(), *upstream, *rateStr, *name)
	if ready != nil {
		ready(r.Addr())
	}
	done := make(chan struct{})
	statsDone := make(chan struct{})
	go func() {
		defer close(statsDone)
		if *every <= 0 {
			return
		}
		t := time.NewTicker(*every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintln(out, r.Report())
			}
		}
	}()
	err = r.Run(ctx)
	close(done)
	<-statsDone
	fmt.Fprintln(out, "final:", r.Report())
	return err
}

// parseRate parses a rate in bits/s with an optional k, M or G suffix
// (powers of 1000, as tc uses for bit rates).
func parseRate(s string) (uint64, error) {
	mult := uint64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1e9, strings.TrimSuffix(s, "G")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f*float64(mult) >= 1<<63 {
		return 0, fmt.Errorf("bad -rate %q", s)
	}
	return uint64(f * float64(mult)), nil
}
