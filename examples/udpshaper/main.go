// Command udpshaper is a UDP relay that owns its bottleneck: it receives
// datagrams on a local address, queues them in the AQM chosen by -aqm,
// releases them through a token-bucket shaper at -rate, and forwards them to
// -upstream, printing statistics every -stats.
//
//	udpshaper -listen 127.0.0.1:9000 -upstream 127.0.0.1:9001 -rate 20mbit -aqm fq-codel
//
// Rates take tc's syntax (8mbit, 1.5gbit, 500kbit). The queue's limit is
// sized for the rate unless -limit is given, and its hash key is drawn at
// random, so that nobody can aim colliding flows at it.
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
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/examples/internal/relay"
	"github.com/aqmkit/aqmkit/examples/internal/traffic"
	"github.com/aqmkit/aqmkit/queues"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
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
		rate     = 10 * aqm.Mbit
		burst    = fs.Int("burst", 0, "shaper burst in `bytes`; 0 means 5 ms of the rate, at least 3028")
		overhead = fs.Int("overhead", 0, "`bytes` added to each datagram's length for the rate (28 for IPv4+UDP headers)")
		name     = fs.String("aqm", "fq-codel", "queue: "+strings.Join(queues.Names(), ", "))
		limit    = fs.Int("limit", 0, "queue limit in `packets`; 0 sizes it for the rate (four 100 ms round trips), or the algorithm's default if the rate is 0")
		every    = fs.Duration("stats", time.Second, "statistics `interval`; 0 disables the periodic line")
		duration = fs.Duration("duration", 0, "stop after this `duration` (for example 30s or 5m); 0 runs until interrupted (3s with -demo)")
		demo     = fs.Bool("demo", false, "drive the relay itself: a bulk flow at twice -rate and a 10 ms probe to a local receiver, then print the probe's delay")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "udpshaper relays UDP datagrams through an AQM at a shaped rate.\n\nUsage: udpshaper [flags]\n  udpshaper -demo -aqm fifo      # see the bufferbloat\n  udpshaper -demo -aqm fq-codel  # and the cure\n\n")
		fs.PrintDefaults()
	}
	fs.Var(&rate, "rate", "shaped `rate` in tc syntax (8mbit, 1.5gbit, 500kbit, 1mbps for bytes); 0 means unlimited")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var recv *traffic.Receiver
	if *demo {
		if *upstream != "" {
			return errors.New("-demo sends to its own receiver: leave out -upstream")
		}
		if rate == 0 {
			return errors.New("-demo needs a -rate")
		}
		var err error
		if recv, err = traffic.Listen(); err != nil {
			return err
		}
		defer recv.Close()
		*upstream = recv.Addr().String()
		if *listen == "127.0.0.1:9000" {
			*listen = "127.0.0.1:0"
		}
		if *duration == 0 {
			*duration = 3 * time.Second
		}
	}
	if *upstream == "" {
		return errors.New("-upstream is required")
	}
	r, err := relay.New(relay.Config{
		Listen: *listen, Upstream: *upstream, AQM: *name, LimitPackets: *limit,
		Rate: rate, BurstBytes: *burst, OverheadBytes: *overhead,
	})
	if err != nil {
		return err
	}
	var demoDone chan DemoOutcome
	if *demo {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		demoDone = make(chan DemoOutcome, 1)
		d := *duration
		go func() {
			res := traffic.Demo(runCtx, r.Addr(), recv, float64(rate), d)
			demoDone <- DemoOutcome{res}
			cancel()
		}()
		ctx = runCtx
	} else if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	fmt.Fprintf(out, "udpshaper: %s -> %s at %v through %s\n", r.Addr(), *upstream, rate, *name)
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
	if demoDone != nil {
		select {
		case o := <-demoDone:
			o.Print(out)
		default: // interrupted before the demo finished
		}
	}
	return err
}

// DemoOutcome is what -demo measured.
type DemoOutcome struct{ traffic.DemoResult }
