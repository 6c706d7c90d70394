// Command autoprobe is the probing half of an autorate shaper: it sends UDP
// echo probes to reflectors, feeds their round trips and an achieved rate
// to package autorate's controller, and prints every rate the controller
// decides. It is also the reflector the probes need.
//
//	autoprobe -reflect 0.0.0.0:5202                       # answer probes
//	autoprobe -probe 10.0.0.2:5202,10.0.0.3:5202 -dev wan0 -min 5mbit -base 20mbit -max 80mbit
//
// With -dev it reads the achieved rate from the interface's transmit byte
// counter (/sys/class/net/DEV/statistics/tx_bytes, Linux) every 200 ms and
// prints the rate it would give the shaper there, as cake-autorate does
// with its rate adjustment turned off; apply it with your shaper's own
// command (tc qdisc change dev DEV root cake bandwidth RATE). -demo runs
// everything on 127.0.0.1 against a simulated bottleneck whose capacity
// falls from 40 to 10 Mbit/s and comes back, and prints what the
// controller did.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
	"github.com/aqmkit/aqmkit/clock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "autoprobe:", err)
		os.Exit(2)
	}
}

// Probe timing: each reflector is probed every probeEvery, the reflectors'
// probes spread evenly over it (cake-autorate's 0.3 s); the achieved rate
// is measured every reportEvery (its 200 ms).
const (
	probeEvery  = 300 * time.Millisecond
	reportEvery = 200 * time.Millisecond
	probeBytes  = 16 // sequence number and send instant
)

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("autoprobe", flag.ContinueOnError)
	fs.SetOutput(out)
	var (
		reflect  = fs.String("reflect", "", "answer UDP echo probes on `address`")
		probe    = fs.String("probe", "", "comma-separated reflector `addresses` (HOST:PORT) to probe")
		dev      = fs.String("dev", "", "read the achieved rate from this network `interface`'s transmit counter")
		demo     = fs.Bool("demo", false, "run a reflector and a simulated bottleneck on 127.0.0.1 and probe them")
		duration = fs.Duration("duration", 0, "stop after this `long` (0: until interrupted; -demo: 8s)")
		cfg      autorate.Config
	)
	fs.Var(&cfg.MinRate, "min", "the lowest `rate` (tc syntax)")
	fs.Var(&cfg.BaseRate, "base", "the `rate` to start from and decay to")
	fs.Var(&cfg.MaxRate, "max", "the highest `rate`")
	fs.Float64Var(&cfg.AchievedCut, "achieved-cut", autorate.DefaultAchievedCut, "a cut may go to this `share` of the achieved rate (0: off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *duration == 0 && *demo {
		*duration = 8 * time.Second
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	switch {
	case *demo:
		return runDemo(ctx, out)
	case *reflect != "":
		c, err := net.ListenPacket("udp", *reflect)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "reflecting on %v\n", c.LocalAddr())
		return serveEcho(ctx, c, nil)
	case *probe != "":
		if *dev == "" {
			return errors.New("-probe needs -dev, the interface whose transmit rate is the achieved rate")
		}
		read := func() (uint64, error) {
			b, err := os.ReadFile("/sys/class/net/" + *dev + "/statistics/tx_bytes")
			if err != nil {
				return 0, err
			}
			return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
		return probeLoop(ctx, strings.Split(*probe, ","), cfg, read, nil, out)
	}
	return errors.New("give -reflect, -probe or -demo (-h lists the flags)")
}

// serveEcho answers every datagram on c with itself, after hold() if hold
// is not nil (the demo's queue), until ctx ends.
func serveEcho(ctx context.Context, c net.PacketConn, hold func() time.Duration) error {
	go func() { <-ctx.Done(); c.Close() }()
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if hold == nil {
			c.WriteTo(buf[:n], from)
			continue
		}
		b := append([]byte(nil), buf[:n]...)
		time.AfterFunc(hold(), func() { c.WriteTo(b, from) })
	}
}

// probeLoop probes the reflectors and drives a controller until ctx ends;
// bytes reads a counter of the bytes sent, whose rate is the achieved rate,
// and set, if not nil, receives every rate the controller decides.
func probeLoop(ctx context.Context, reflectors []string, cfg autorate.Config, bytes func() (uint64, error), set autorate.Setter, out io.Writer) error {
	cfg.Reflectors = len(reflectors)
	ctl, err := autorate.New(cfg)
	if err != nil {
		return err
	}
	if set != nil {
		if err := ctl.Drive(set); err != nil {
			return err
		}
	}
	clk := clock.NewMono()
	start := clk.Now()
	type reply struct {
		refl int
		rtt  time.Duration
	}
	replies := make(chan reply, 16)
	var conns []net.Conn
	var wg sync.WaitGroup
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for i, r := range reflectors {
		c, err := net.Dial("udp", strings.TrimSpace(r))
		if err != nil {
			return err
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() { // read replies: the payload holds the send instant
			defer wg.Done()
			buf := make([]byte, 1500)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				if n < probeBytes {
					continue
				}
				sent := aqm.Time(binary.BigEndian.Uint64(buf[8:]))
				select {
				case replies <- reply{i, clk.Now().Sub(sent)}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	send := time.NewTicker(probeEvery / time.Duration(len(conns)))
	defer send.Stop()
	report := time.NewTicker(reportEvery)
	defer report.Stop()
	last, err := bytes()
	if err != nil {
		return err
	}
	lastAt := clk.Now()
	var seq uint64
	next := 0
	show := func(d autorate.Decision, why string) {
		if d.Action != autorate.Hold {
			fmt.Fprintf(out, "%6.2fs %-8s %-9v %s\n", clk.Now().Sub(start).Seconds(), d.Action, d.Rate, why)
		}
	}
	fmt.Fprintf(out, "%6.2fs start    %v\n", 0.0, ctl.Rate())
	for {
		select {
		case <-ctx.Done():
			s := ctl.Stats()
			fmt.Fprintf(out, "samples %d: cuts %d (to the achieved rate %d), increases %d, decays %d, fallbacks %d; rate %v\n",
				s.Samples, s.Cuts, s.AchievedCuts, s.Increases, s.Decays, s.Fallbacks, ctl.Rate())
			return nil
		case <-send.C:
			seq++
			b := make([]byte, probeBytes)
			binary.BigEndian.PutUint64(b, seq)
			binary.BigEndian.PutUint64(b[8:], uint64(clk.Now()))
			conns[next].Write(b)
			next = (next + 1) % len(conns)
		case r := <-replies:
			show(ctl.Sample(clk.Now(), r.refl, r.rtt), fmt.Sprintf("rtt %v from %s", r.rtt.Round(100*time.Microsecond), reflectors[r.refl]))
		case <-report.C:
			n, err := bytes()
			if err != nil {
				return err
			}
			now := clk.Now()
			achieved := aqm.Rate(float64(n-last) * 8 / now.Sub(lastAt).Seconds())
			last, lastAt = n, now
			show(ctl.Achieved(now, achieved), "achieved "+achieved.String())
		}
	}
}
