// Command gateway is a home-gateway queue in user space: it receives raw
// IP packets (one per UDP datagram, as from a tunnel) on a local address,
// queues them in CAKE with the diffserv4 tins and dual-dsthost fairness,
// shapes them to -rate with the link framing of -overhead, and forwards
// them to -upstream, printing CAKE's per-tin statistics every -stats.
//
//	gateway -listen 127.0.0.1:9000 -upstream 127.0.0.1:9001 -rate 50mbit -overhead docsis
//
// dual-dsthost is the download direction's setting: each destination host
// (each device in the home) gets an equal share of the link, however many
// flows it opens, and flows share their host's part fairly. The diffserv4
// tins give voice (EF, CS4-7) and video (AF2x-4x, CS2-3) priority up to a
// quarter and half of the rate, and bulk (CS1, LE) a floor of a
// sixteenth. CAKE marks ECN-capable packets instead of dropping them; the
// gateway writes CE into the IP header it forwards.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/front"
)

// overheads are the -overhead presets, by tc-cake's keywords.
var overheads = []string{
	"raw", "conservative", "ethernet", "docsis", "pppoe-ptm", "bridged-ptm",
	"pppoa-vcmux", "pppoa-llc", "pppoe-vcmux", "pppoe-llcsnap",
	"bridged-vcmux", "bridged-llcsnap", "ipoa-vcmux", "ipoa-llcsnap",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(2)
	}
}

// run parses args, forwards until ctx ends or -duration passes, and prints
// a final report. ready, if not nil, receives the listening address once
// the gateway is up.
func run(ctx context.Context, args []string, out io.Writer, ready func(netip.AddrPort)) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(out)
	names := slices.Sorted(slices.Values(overheads))
	var (
		listen   = fs.String("listen", "127.0.0.1:9000", "local UDP `address` receiving one IP packet per datagram")
		upstream = fs.String("upstream", "", "UDP `address` to forward the IP packets to (required)")
		rate     = 50 * aqm.Mbit
		overhead = fs.String("overhead", "raw", "link framing: "+strings.Join(names, ", "))
		slots    = fs.Int("buffers", 0, "packet `buffers`, and so CAKE's packet limit; 0 sizes them for -rate (four 100 ms round trips, 64 to 4096), or 4096 unshaped")
		every    = fs.Duration("stats", time.Second, "statistics `interval`; 0 disables the periodic line")
		duration = fs.Duration("duration", 0, "stop after this `duration`; 0 runs until interrupted (4s with -demo)")
		demoRun  = fs.Bool("demo", false, "drive the gateway itself: two home devices, one with 1 flow and one with 8, download through it to a local receiver; print each device's share")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "gateway queues raw IP packets in CAKE, shaped to a link's rate with per-device fairness, and forwards them.\n\nUsage: gateway [flags]\n  gateway -demo -rate 10mbit   # two devices, one with 1 flow and one with 8: each gets half\n\n")
		fs.PrintDefaults()
	}
	fs.Var(&rate, "rate", "the link's `rate` in tc syntax (8mbit, 1.5gbit); 0 means unshaped")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var sink *demoSink
	if *demoRun {
		if *upstream != "" {
			return errors.New("-demo sends to its own receiver: leave out -upstream")
		}
		if rate == 0 {
			return errors.New("-demo needs a -rate")
		}
		var err error
		if sink, err = newDemoSink(); err != nil {
			return err
		}
		defer sink.close()
		*upstream = sink.addr().String()
		if *listen == "127.0.0.1:9000" {
			*listen = "127.0.0.1:0"
		}
		if *duration == 0 {
			*duration = 4 * time.Second
		}
	}
	if *upstream == "" {
		return errors.New("-upstream is required")
	}
	ov, ok := cake.OverheadPreset(*overhead)
	if !ok {
		return fmt.Errorf("-overhead %q: want one of %s", *overhead, strings.Join(names, ", "))
	}
	if *slots < 0 {
		return fmt.Errorf("-buffers %d: must not be negative", *slots)
	}
	if *slots == 0 {
		*slots = buffersFor(rate)
	}
	g, err := newGateway(config{Rate: rate, Overhead: ov, Slots: *slots}, nil)
	if err != nil {
		return err
	}
	la, err := netip.ParseAddrPort(*listen)
	if err != nil {
		return err
	}
	in, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(la))
	if err != nil {
		return err
	}
	defer in.Close()
	up, err := netip.ParseAddrPort(*upstream)
	if err != nil {
		return err
	}
	outc, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(up))
	if err != nil {
		return err
	}
	defer outc.Close()
	addr := in.LocalAddr().(*net.UDPAddr).AddrPort()
	if *demoRun {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		d := *duration
		go func() {
			demo(runCtx, addr, sink, float64(rate), d, out)
			cancel()
		}()
		ctx = runCtx
	} else if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	fmt.Fprintf(out, "gateway: %s -> %s at %v, cake diffserv4 dual-dsthost, overhead %s\n", addr, up, rate, *overhead)
	if ready != nil {
		ready(addr)
	}
	var wg sync.WaitGroup
	wg.Go(func() { // the reader: datagrams into pool buffers
		scratch := make([]byte, maxPacket)
		for {
			s, buf, ok := g.slot()
			if !ok {
				// Every buffer is queued or in flight: read into the
				// scratch buffer and drop, as a full NIC ring would.
				buf = scratch
			}
			n, err := in.Read(buf)
			if err != nil {
				if ok {
					g.release(s)
				}
				return // closed below
			}
			if ok {
				g.enqueue(s, n)
			}
		}
	})
	wg.Go(func() {
		if *every <= 0 {
			return
		}
		t := time.NewTicker(*every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fmt.Fprintln(out, g.report())
			}
		}
	})
	err = g.run(ctx, func(b []byte) { _, _ = outc.Write(b) })
	in.Close() // stops the reader
	wg.Wait()
	fmt.Fprintln(out, "final:", g.report())
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// buffersFor is the default pool for a link of the given rate: four round
// trips of 100 ms of full-size packets, the sizing of the link presets, with
// at least 64 and at most 4096 buffers (4096 unshaped). A fixed 4096 would
// let an unresponsive flow queue for seconds on a slow link, since CAKE
// holds up to its packet limit.
func buffersFor(rate aqm.Rate) int {
	if rate == 0 {
		return 4096
	}
	return min(max(rate.BufferPackets(0)+front.RunBatch, 64), 4096)
}
