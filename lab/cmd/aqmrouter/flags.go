package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/autorate"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/lab/router"
	"github.com/aqmkit/aqmkit/queues"
)

// options are the command line, parsed.
type options struct {
	tun     string
	mtu     int
	queues  int
	metrics string
	stats   string
	report  time.Duration
	cpuprof string
	offload bool
	control string // the control file re-read on SIGHUP
	// faultEvery makes every n-th packet written fail (a fault-injecting
	// device, for soak runs).
	faultEvery uint64
	cfg        router.Config
	ar         autorateOptions
	arCfg      autorate.Config // the controller's, when -autorate is set
}

// tcDuration is a time.Duration flag in tc's syntax: a decimal number with
// a unit, s/sec/secs, ms/msec/msecs, us/usec/usecs, ns, m, h, or a bare
// number of microseconds as tc takes it.
type tcDuration struct{ d *time.Duration }

func (t tcDuration) String() string {
	if t.d == nil {
		return "0s"
	}
	return t.d.String()
}

func (t tcDuration) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*t.d = d
	return nil
}

var tcUnits = []struct {
	suffix string
	unit   time.Duration
}{ // longest first, so that "msec" is not read as "sec"
	{"msecs", time.Millisecond}, {"usecs", time.Microsecond}, {"msec", time.Millisecond},
	{"usec", time.Microsecond}, {"secs", time.Second}, {"sec", time.Second},
	{"ms", time.Millisecond}, {"us", time.Microsecond}, {"µs", time.Microsecond},
	{"ns", time.Nanosecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour},
}

// parseDuration reads a duration in tc's syntax (see tcDuration). Negative
// durations are refused.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	if t == "" {
		return 0, fmt.Errorf("empty duration")
	}
	unit := time.Microsecond // tc's unit for a bare number
	num := t
	for _, u := range tcUnits {
		if strings.HasSuffix(t, u.suffix) {
			unit, num = u.unit, strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || v != v {
		return 0, fmt.Errorf("bad duration %q: want a non-negative number and a unit (10ms, 1.5s, 500us)", s)
	}
	d := v * float64(unit)
	if d > float64(1<<62) {
		return 0, fmt.Errorf("duration %q too long", s)
	}
	return time.Duration(d + 0.5), nil
}

// gsoFlag is the -gso flag: a front.GSOPolicy by name.
type gsoFlag struct{ p *front.GSOPolicy }

func (g gsoFlag) String() string {
	if g.p == nil {
		return front.GSOAuto.String()
	}
	return g.p.String()
}

func (g gsoFlag) Set(s string) error {
	for _, p := range []front.GSOPolicy{front.GSOAuto, front.GSOSplit, front.GSOKeep} {
		if s == p.String() {
			*g.p = p
			return nil
		}
	}
	return fmt.Errorf("want auto, split or keep")
}

// offFlag is a boolean flag that sets *p to its negation: -coalesce=false
// sets router.Config.DisableCoalesce.
type offFlag struct{ p *bool }

func (f offFlag) String() string   { return strconv.FormatBool(f.p == nil || !*f.p) }
func (f offFlag) IsBoolFlag() bool { return true }

func (f offFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*f.p = !v
	return nil
}

const summary = "aqmrouter forwards IP packets through a TUN device with an aqmkit queue, a rate and a delay per destination prefix."

// parseFlags parses args (without the program name). On -h it prints the
// usage to out and returns flag.ErrHelp.
func parseFlags(args []string, out io.Writer) (options, error) {
	o := options{cfg: router.Config{Drain: router.DefaultDrain}}
	fs := flag.NewFlagSet("aqmrouter", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.tun, "tun", "tun0", "TUN device `name`: attached to if it exists, created otherwise")
	fs.IntVar(&o.mtu, "mtu", 0, "set the TUN's MTU in `bytes` (0: keep it)")
	fs.BoolVar(&o.offload, "offload", true, "read and write TSO/UDP GSO super-packets through the TUN's offloads (IFF_VNET_HDR) where the kernel accepts them (see -gso)")
	fs.Var(gsoFlag{&o.cfg.GSO}, "gso", "with -offload, what becomes of a super-packet: `auto` (kept whole when it takes at most 2 ms at the rate, unshaped, or while the router is saturated; split otherwise), split or keep")
	fs.Var(offFlag{&o.cfg.DisableCoalesce}, "coalesce", "with -offload, join consecutive TCP segments of a flow that leave together into one super-packet per TUN write (false: one write per packet)")
	fs.IntVar(&o.queues, "queues", 1, "TUN queues, each with a reader (more than 1: IFF_MULTI_QUEUE)")
	fs.StringVar(&o.cfg.AQM, "aqm", router.DefaultAQM, "queue `name` per direction: "+strings.Join(queues.Names(), ", "))
	fs.StringVar(&o.cfg.Params, "params", "", "the queue's own `settings` as name=value,... with its Config's field names (target=5ms,disable-flood-guard=true)")
	fs.IntVar(&o.cfg.LimitPackets, "limit", 0, "each queue's limit in `packets` (0: the preset for -rate, four 100 ms round trips)")
	fs.Var(&o.cfg.Rate, "rate", "each direction's `rate` in tc syntax (50mbit, 1.5gbit); 0 forwards unshaped")
	fs.BoolVar(&o.cfg.Load.AutoCap, "auto-cap", false, "hold each direction's rate just below what the router sustains when it finds itself saturated, so that the queue stays in the AQM (needs -rate; not with -autorate)")
	fs.Var(tcDuration{&o.cfg.Burst}, "burst", "each direction's token bucket depth as `time` at -rate (tc syntax; 0: 5ms): how much a late wake-up may make up at once, CAKE's catch-up included")
	fs.Var(tcDuration{&o.cfg.Delay}, "delay", "fixed `delay` per direction after the queue (tc syntax: 10ms, 500us)")
	fs.IntVar(&o.cfg.DelayLimit, "delay-limit", router.DefaultDelayLimit, "most `packets` each delay line holds")
	fs.IntVar(&o.cfg.MaxQueues, "max-queues", router.DefaultMaxQueues, "most directions (destination prefixes), each with its own queue")
	fs.IntVar(&o.cfg.Prefix4, "prefix4", router.DefaultPrefix4, "IPv4 destination prefix `length` of a direction")
	fs.IntVar(&o.cfg.Prefix6, "prefix6", router.DefaultPrefix6, "IPv6 destination prefix `length` of a direction")
	fs.IntVar(&o.cfg.Buffers, "buffers", router.DefaultBuffers, "most packet buffers in use at once")
	fs.Var(tcDuration{&o.cfg.Drain}, "drain", "at exit, send what is queued for at most this `long`, then drop the rest")
	fs.StringVar(&o.stats, "stats", "", "write the final counters as JSON to `file` on exit")
	fs.StringVar(&o.metrics, "metrics", "", "serve expvar metrics on `addr` at /debug/vars (a bare :port binds 127.0.0.1)")
	fs.StringVar(&o.cpuprof, "cpuprofile", "", "write a Go CPU profile of the whole run to `file`")
	fs.StringVar(&o.control, "control", "", "apply the settings in `file` (aqm, rate, limit, params as name = value lines) at start and again on every SIGHUP")
	fs.Uint64Var(&o.faultEvery, "fault-write-every", 0, "testing: make every `n`th packet written fail (EIO, ENOBUFS, EAGAIN in turn), as a soak run does; 0: never")
	fs.Var(tcDuration{&o.report}, "report", "print a stat line on stderr every `interval` (0: never)")
	o.report = 10 * time.Second
	addAutorateFlags(fs, &o.ar)
	usage := func(w io.Writer) {
		fmt.Fprintln(w, summary)
		fmt.Fprintln(w, "\nUsage: aqmrouter [flags]\n\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		fmt.Fprintln(w, "\nSee the package documentation of lab/cmd/aqmrouter for putting it in a path.")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(out)
			return o, err
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.queues < 1 || o.queues > 64 {
		return o, fmt.Errorf("-queues %d: want 1 to 64", o.queues)
	}
	if o.mtu < 0 || o.mtu > 65535 {
		return o, fmt.Errorf("-mtu %d: want 0 to 65535", o.mtu)
	}
	if o.cfg.Drain == 0 {
		o.cfg.Drain = -1 // -drain 0: drop at once
	}
	if o.metrics != "" {
		addr, err := metricsAddr(o.metrics)
		if err != nil {
			return o, err
		}
		o.metrics = addr
	}
	if err := o.cfg.Validate(); err != nil {
		return o, err
	}
	if o.cfg.Load.AutoCap && o.ar.target != "" {
		return o, fmt.Errorf("-auto-cap and -autorate both set the rate: choose one")
	}
	var err error
	if o.arCfg, err = o.ar.config(o.cfg); err != nil {
		return o, err
	}
	return o, nil
}

// metricsAddr puts a bare port on the loopback address: metrics are served
// to this host only unless an address says otherwise.
func metricsAddr(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("-metrics %q: %v", s, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}
