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
)

// overheads are the -overhead presets, by tc-cake's keywords.
var overheads = map[string]cake.Overhead{
	"raw": cake.Raw, "conservative": cake.Conservative, "ethernet": cake.Ethernet,
	"docsis": cake.DOCSIS, "pppoe-ptm": cake.PPPoEPTM, "bridged-ptm": cake.BridgedPTM,
	"pppoa-vcmux": cake.PPPoAVCMux, "pppoa-llc": cake.PPPoALLC,
	"pppoe-vcmux": cake.PPPoEVCMux, "pppoe-llcsnap": cake.PPPoELLCSNAP,
	"bridged-vcmux": cake.BridgedVCMux, "bridged-llcsnap": cake.BridgedLLCSNAP,
	"ipoa-vcmux": cake.IPoAVCMux, "ipoa-llcsnap": cake.IPoALLCSNAP,
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
	names := make([]string, 0, len(overheads))
	for n := range overheads {
		names = append(names, n)
	}
	slices.Sort(names)
	var (
		listen   = fs.String("listen", "127.0.0.1:9000", "local UDP `address` receiving one IP packet per datagram")
		upstream = fs.String("upstream", "", "UDP `address` to forward the IP packets to (required)")
		rate     = 50 * aqm.Mbit
		overhead = fs.String("overhead", "raw", "link framing: "+strings.Join(names, ", "))
		slots    = fs.Int("buffers", 4096, "packet buffers, and so CAKE's packet limit")
		every    = fs.Duration("stats", time.Second, "statistics `interval`; 0 disables the periodic line")
		duration = fs.Duration("duration", 0, "stop after this `duration`; 0 runs until interrupted")
	)
	fs.Var(&rate, "rate", "the link's `rate` in tc syntax (8mbit, 1.5gbit); 0 means unshaped")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" {
		return errors.New("-upstream is required")
	}
	ov, ok := overheads[*overhead]
	if !ok {
		return fmt.Errorf("-overhead %q: want one of %s", *overhead, strings.Join(names, ", "))
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
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	addr := in.LocalAddr().(*net.UDPAddr).AddrPort()
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
