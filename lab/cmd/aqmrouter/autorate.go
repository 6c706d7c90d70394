package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/lab/router"
)

// autorateOptions are the -autorate flags: one direction's rate driven by
// an autorate controller from probes to reflectors and the direction's
// own written bytes.
type autorateOptions struct {
	target      string // -autorate: an address or prefix of the direction
	reflectors  string
	min, max    aqm.Rate
	interval    time.Duration
	threshold   time.Duration
	achievedCut float64
	maxIncrease float64
	detection   int
	logFile     string
	recovery    float64
	passive     bool
	match       string // -autorate-passive-match

	prefix netip.Prefix
	refl   []reflector
	tap    *passiveTap
}

// Defaults of the -autorate flags.
const (
	defaultProbeInterval = 300 * time.Millisecond // cake-autorate's reflector_ping_interval_s
	autorateReport       = 200 * time.Millisecond // cake-autorate's monitor_achieved_rates_interval_ms
	autorateTick         = time.Second
)

// autorateDefaults is the zero autorate.Config with its defaults filled
// in, as the controller reports them; the flags start from it.
var autorateDefaults = func() autorate.Config {
	c, err := autorate.New(autorate.Config{})
	if err != nil {
		panic(err) // the zero Config is valid
	}
	return c.Config()
}()

func addAutorateFlags(fs *flag.FlagSet, a *autorateOptions) {
	fs.StringVar(&a.target, "autorate", "", "drive the rate of the direction to this `address or prefix` with an autorate controller "+
		"(needs -rate, the base rate, -autorate-min, -autorate-max and -reflectors)")
	fs.StringVar(&a.reflectors, "reflectors", "", "autorate's reflectors, comma-separated: udp:HOST:PORT (UDP echo) or icmp:HOST (root)")
	fs.Var(&a.min, "autorate-min", "autorate's lowest `rate` (tc syntax)")
	fs.Var(&a.max, "autorate-max", "autorate's highest `rate` (tc syntax)")
	a.interval = defaultProbeInterval
	fs.Var(tcDuration{&a.interval}, "probe-interval", "each reflector's probe `period`; the reflectors' probes are spread evenly over it")
	a.threshold = autorateDefaults.DelayThreshold
	fs.Var(tcDuration{&a.threshold}, "autorate-delay", "autorate's delay threshold on the RTT (`time`); increases are full below a third of it, cuts full above twice it")
	a.achievedCut = autorate.DefaultAchievedCut
	fs.Float64Var(&a.achievedCut, "autorate-achieved-cut", a.achievedCut, "a cut may go to this `share` of the achieved rate (0: cuts scale the rate alone)")
	a.maxIncrease = autorateDefaults.MaxIncrease
	fs.Float64Var(&a.maxIncrease, "autorate-max-increase", a.maxIncrease, "the largest `share` an increase adds, once per 200 ms report")
	a.detection = autorateDefaults.DetectionThreshold
	fs.IntVar(&a.detection, "autorate-detection", a.detection, "how many `samples` of the last 6 must be delayed to call bufferbloat")
	fs.StringVar(&a.logFile, "autorate-log", "", "write every sample, report and rate change as CSV to `file`")
	fs.Float64Var(&a.recovery, "autorate-recovery", 0, "after a run of cuts, an increase at low delay closes this `share` of the gap "+
		"to the rate before the first cut (0: off; 1 returns there in one step)")
	fs.BoolVar(&a.passive, "autorate-passive", false, "autorate also (or, without -reflectors, only) times the TCP flows forwarded to the direction "+
		"by their timestamp echoes and handshakes, and feeds the controller the smallest rise of each -probe-interval")
	fs.StringVar(&a.match, "autorate-passive-match", "echo", "how -autorate-passive times a segment: echo (the acknowledgement that echoes its timestamp) "+
		"or ack (the acknowledgement that names its end, free of the receiver's delayed-acknowledgement wait)")
}

// config checks the flags against the router's and returns the
// controller's configuration; with -autorate unset, a zero Config and no
// error.
func (a *autorateOptions) config(cfg router.Config) (autorate.Config, error) {
	if a.target == "" {
		if a.reflectors != "" || a.min != 0 || a.max != 0 || a.logFile != "" || a.passive {
			return autorate.Config{}, fmt.Errorf("-reflectors, -autorate-min, -autorate-max, -autorate-log and -autorate-passive need -autorate")
		}
		return autorate.Config{}, nil
	}
	pfx, err := netip.ParsePrefix(a.target)
	if err != nil {
		addr, aerr := netip.ParseAddr(a.target)
		if aerr != nil {
			return autorate.Config{}, fmt.Errorf("-autorate %q: want an address or a prefix", a.target)
		}
		pfx = netip.PrefixFrom(addr, addr.BitLen())
	}
	a.prefix = pfx.Masked()
	if a.match != "echo" && a.match != "ack" {
		return autorate.Config{}, fmt.Errorf("-autorate-passive-match %q: want echo or ack", a.match)
	}
	if a.reflectors != "" || !a.passive {
		if a.refl, err = parseReflectors(a.reflectors); err != nil {
			return autorate.Config{}, fmt.Errorf("-reflectors: %v (or -autorate-passive)", err)
		}
	}
	if cfg.Rate == 0 || cfg.AQM == "cake" {
		return autorate.Config{}, fmt.Errorf("-autorate needs -rate (its base rate) and a queue the front shapes (not cake)")
	}
	if a.min == 0 || a.max == 0 {
		return autorate.Config{}, fmt.Errorf("-autorate needs -autorate-min and -autorate-max")
	}
	if a.interval <= 0 {
		return autorate.Config{}, fmt.Errorf("-probe-interval must be positive")
	}
	if a.threshold < 3 {
		return autorate.Config{}, fmt.Errorf("-autorate-delay %v: too small", a.threshold)
	}
	c := autorate.Config{
		MinRate: a.min, BaseRate: cfg.Rate, MaxRate: a.max, Reflectors: len(a.refl) + a.passiveIndex(),
		Recovery:       a.recovery,
		DelayThreshold: a.threshold, FullIncreaseBelow: a.threshold / 3, FullCutAbove: 2 * a.threshold,
		AchievedCut: a.achievedCut, MaxIncrease: a.maxIncrease, DetectionThreshold: a.detection,
	}
	if err := c.Validate(); err != nil {
		return autorate.Config{}, err
	}
	return c, nil
}

// autorateLoop runs one controller: it sends the probes, reads the
// replies, reports the direction's written rate every 200 ms, and applies
// the controller's rates to the direction once it exists.
type autorateLoop struct {
	opt    autorateOptions
	ctl    *autorate.Controller
	clk    clock.Clock
	queues chan *router.Queue
	logf   func(string, ...any)
	csv    *bufio.Writer
	start  aqm.Time
}

func newAutorateLoop(o autorateOptions, cfg autorate.Config, logf func(string, ...any)) (*autorateLoop, error) {
	ctl, err := autorate.New(cfg)
	if err != nil {
		return nil, err
	}
	return &autorateLoop{opt: o, ctl: ctl, clk: clock.NewMono(), queues: make(chan *router.Queue, 1), logf: logf}, nil
}

// offer is the router's OnQueue hook: it hands the loop the direction it
// drives.
func (l *autorateLoop) offer(q *router.Queue) {
	if q.Prefix().Overlaps(l.opt.prefix) {
		select {
		case l.queues <- q:
		default:
		}
	}
}

type probeReply struct {
	refl int
	rtt  time.Duration
}

// run probes and decides until ctx ends.
func (l *autorateLoop) run(ctx context.Context) error {
	if l.opt.logFile != "" {
		f, err := os.Create(l.opt.logFile)
		if err != nil {
			return err
		}
		defer f.Close()
		l.csv = bufio.NewWriter(f)
		defer l.csv.Flush()
		fmt.Fprintln(l.csv, "seconds,event,reflector,rtt_ms,achieved_bps,rate_bps,action")
	}
	start := time.Now()
	l.start = l.clk.Now()
	var probers []*prober
	var readers sync.WaitGroup
	defer func() {
		for _, p := range probers {
			p.Close() // unblocks the readers
		}
		readers.Wait()
	}()
	for _, r := range l.opt.refl {
		p, err := newProber(r, start)
		if err != nil {
			return err
		}
		probers = append(probers, p)
	}
	replies := make(chan probeReply, 64)
	for i, p := range probers {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, 1500)
			for {
				rtt, err := p.read(buf)
				if err != nil {
					return
				}
				select {
				case replies <- probeReply{i, rtt}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}

	// Each reflector's probe in turn; the passive summary, if any, as one
	// more reflector at the end of the round.
	send := time.NewTicker(l.opt.interval / time.Duration(len(probers)+l.opt.passiveIndex()))
	defer send.Stop()
	report := time.NewTicker(autorateReport)
	defer report.Stop()
	tick := time.NewTicker(autorateTick)
	defer tick.Stop()
	var q *router.Queue
	var lastBytes uint64
	lastReport := l.clk.Now()
	next := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case q = <-l.queues:
			lastBytes, lastReport = q.Stats().Written.Bytes, l.clk.Now()
			if err := l.ctl.Drive(autorate.SetterFunc(q.SetRate)); err != nil {
				l.logf("autorate: %v", err)
			}
			l.logf("autorate: driving %v from %d reflector(s), rate %v", q.Prefix(), len(probers), l.ctl.Rate())
		case now := <-send.C:
			if next == len(probers) {
				l.passiveSample()
			} else if err := probers[next].send(now); err != nil {
				l.logf("autorate: probe to %v: %v", probers[next].r, err)
			}
			next = (next + 1) % (len(probers) + l.opt.passiveIndex())
		case r := <-replies:
			now := l.clk.Now()
			d := l.ctl.Sample(now, r.refl, r.rtt)
			l.log(now, "sample", r.refl, r.rtt, 0, d)
		case <-report.C:
			if q == nil {
				continue
			}
			now := l.clk.Now()
			b := q.Stats().Written.Bytes
			secs := now.Sub(lastReport).Seconds()
			if secs <= 0 {
				continue
			}
			rate := aqm.Rate(float64(b-lastBytes) * 8 / secs)
			lastBytes, lastReport = b, now
			d := l.ctl.Achieved(now, rate)
			l.log(now, "achieved", -1, 0, rate, d)
		case <-tick.C:
			now := l.clk.Now()
			if d := l.ctl.Tick(now); d.Action != autorate.Hold {
				l.log(now, "tick", -1, 0, 0, d)
			}
		}
	}
}

// log writes one CSV line, and any refusal of the rate to the log.
func (l *autorateLoop) log(now aqm.Time, event string, refl int, rtt time.Duration, achieved aqm.Rate, d autorate.Decision) {
	if d.Err != nil {
		l.logf("autorate: %v", d.Err)
	}
	if l.csv == nil {
		return
	}
	fmt.Fprintf(l.csv, "%.6f,%s,%d,%.3f,%d,%d,%v\n", now.Sub(l.start).Seconds(), event, refl,
		float64(rtt)/1e6, uint64(achieved), uint64(d.Rate), d.Action)
}

// startAutorate makes the -autorate loop, if asked for, and hooks it to the
// router's new directions; nil if -autorate is unset.
func startAutorate(o *options, logf func(string, ...any)) (*autorateLoop, error) {
	if o.ar.target == "" {
		return nil, nil
	}
	if o.ar.passive {
		t, err := newPassiveTap(o.ar.prefix, o.ar.match)
		if err != nil {
			return nil, err
		}
		o.ar.tap, o.cfg.Tap = t, t.tap()
	}
	l, err := newAutorateLoop(o.ar, o.arCfg, logf)
	if err != nil {
		return nil, err
	}
	prev := o.cfg.OnQueue
	o.cfg.OnQueue = func(q *router.Queue) {
		if prev != nil {
			prev(q)
		}
		l.offer(q)
	}
	return l, nil
}

// summary is the controller's counters and final rate, for the exit line.
func (l *autorateLoop) summary() string {
	s := l.ctl.Stats()
	out := fmt.Sprintf("rate %v; samples %d, cuts %d (to the achieved rate %d), increases %d, decays %d, fallbacks %d, refused rates %d",
		l.ctl.Rate(), s.Samples, s.Cuts, s.AchievedCuts, s.Increases, s.Decays, s.Fallbacks, s.SetRateErrors)
	if l.opt.tap != nil {
		out += "; " + l.opt.tap.describe()
	}
	return out
}
