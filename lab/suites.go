package lab

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Options shape the test suites. Zero fields take the defaults in
// DefaultOptions.
type Options struct {
	Rate     aqm.Rate
	RTT      time.Duration
	Duration time.Duration // load per window
	Idle     time.Duration
	Warmup   time.Duration
	Tail     time.Duration
	CC       string // congestion control of the bulk flows
	ECN      bool
	N        int // tcp_nup's uploads
	// Queues are the router's AQMs; Kernel the anchor kinds to try (only
	// those the kernel has run).
	Queues []Queue
	Kernel []KernelQdisc
	Probe  time.Duration
	// Traces, if set, make the autorate test replay each trace in its
	// moving bottleneck (see traceSuite): TraceOffset into the trace,
	// for Duration, each rate times TraceScale (zero means 1).
	Traces      []*Trace
	TraceOffset time.Duration
	TraceScale  float64
	// AutoratePassive adds, in the autorate test on traces, two rows
	// whose router takes its delay samples from the TCP flows it
	// forwards, with no reflector: timed by timestamp echo and by
	// acknowledgement number.
	AutoratePassive bool
}

// DefaultOptions are the suites' defaults: 50 Mb/s, 20 ms, 30 s of load
// after 3 s idle, 5 s warm-up, CUBIC, ECN off, the router's FIFO (1000
// packets), CoDel, FQ-CoDel, CAKE, PIE and SFQ, and the kernel's htb +
// pfifo 1000 and 100 with every other anchor the kernel has.
func DefaultOptions() Options {
	return Options{
		Rate: 50 * aqm.Mbit, RTT: 20 * time.Millisecond, Duration: 30 * time.Second,
		Idle: 3 * time.Second, Warmup: 5 * time.Second, Tail: 3 * time.Second, CC: "cubic", N: 4,
		Probe: 10 * time.Millisecond,
		Queues: []Queue{{Router: "fifo", Limit: 1000}, {Router: "codel"}, {Router: "fq-codel"}, {Router: "cake"},
			{Router: "pie"}, {Router: "sfq"}},
		Kernel: []KernelQdisc{{Kind: "pfifo", Limit: 1000}, {Kind: "pfifo", Limit: 100}, {Kind: "fq_codel"}, {Kind: "cake"},
			{Kind: "fq_pie"}, {Kind: "pie"}, {Kind: "red"}, {Kind: "netem", Limit: 1000}},
	}
}

// Tests lists the suites by name, in the order `aqmlab all` runs them.
var Tests = []string{"rrul", "tcp_nup", "rtt_fair", "square", "speedtest", "red", "flood", "autorate"}

// TestInfo is one line per suite, for -h.
var TestInfo = map[string]string{
	"rrul":      "4 TCP uploads + 4 downloads + the UDP probe (flent rrul)",
	"tcp_nup":   "N TCP uploads + the probe (flent tcp_nup)",
	"rtt_fair":  "4 uploads with base RTTs of 1, 2, 4 and 8 × -rtt through one bottleneck (flent rtt_fair)",
	"square":    "4 uploads on and off, twice; time for the probe to return to idle latency (flent square wave)",
	"speedtest": "one BBR download as NDT7 runs it, one CUBIC upload as iperf3 does; htb with and without burst, FIFO, CoDel, FQ-CoDel, SFQ",
	"red":       "10 Reno uploads, MSS 536, 2 Mb/s, 40 ms, 50-packet limit: red, gentle-red, ared",
	"flood":     "UDP flood at twice the rate beside one TCP upload and the probe: one 5-tuple, then a new random port per packet",
	"autorate":  "4 uploads through the router's FQ-CoDel into a kernel htb on r1 whose rate steps 40, 10, 40 Mb/s (or, with -trace, follows a recorded link): the router under autorate, fixed at the mean, at the minimum (the 10th percentile)",
}

func (o Options) base(test string) Config {
	return Config{Test: test, Rate: o.Rate, RTT: o.RTT, ECN: o.ECN, Idle: o.Idle, Warmup: o.Warmup, Tail: o.Tail, ProbeInterval: o.Probe}
}

// queues returns one config per queue of o with f applied.
func (o Options) each(test string, f func(c *Config)) []Config {
	var out []Config
	for _, q := range o.Queues {
		c := o.base(test)
		c.Queue = q
		f(&c)
		out = append(out, c)
	}
	for _, k := range o.Kernel {
		c := o.base(test)
		k := k
		c.Queue = Queue{Kernel: &k}
		f(&c)
		out = append(out, c)
	}
	return out
}

func bulk(id int, dir, cc string, from, to time.Duration) FlowSpec {
	return FlowSpec{ID: id, Dir: dir, CC: cc, Start: from, Stop: to}
}

// SuiteQueues returns a test's default queues: the router's and the
// kernel anchors'.
func SuiteQueues(test string) ([]Queue, []KernelQdisc) {
	d := DefaultOptions()
	switch test {
	case "speedtest":
		return []Queue{{Router: "fifo", Limit: 1000}, {Router: "codel"}, {Router: "fq-codel"}, {Router: "sfq"}},
			[]KernelQdisc{{Kind: "pfifo", Limit: 1000}, {Kind: "pfifo", Limit: 1000, Burst: 15 * 1024},
				{Kind: "fq_codel"}, {Kind: "fq_codel", Burst: 15 * 1024}}
	case "red":
		// The RED study's 50-packet limit; mean packet 588 bytes (536 + 52).
		return []Queue{{Router: "red", Limit: 50}, {Router: "gentle-red", Limit: 50}, {Router: "ared", Limit: 50}},
			[]KernelQdisc{{Kind: "red", Limit: 50, RedMin: 5, RedMax: 15, AvgPkt: 588},
				{Kind: "red", Limit: 50, RedMin: 5, RedMax: 15, AvgPkt: 588, Adaptive: true}}
	case "flood":
		return []Queue{{Router: "fifo", Limit: 1000}, {Router: "fq-codel"}, {Router: "cake"}, {Router: "sfq"}}, nil
	}
	if strings.HasPrefix(test, "flent-") {
		return []Queue{{Router: "fifo", Limit: 1000}, {Router: "fq-codel"}, {Router: "cake"}}, []KernelQdisc{}
	}
	return d.Queues, d.Kernel
}

// Suite returns the configurations of one test. Options.Queues and
// Options.Kernel both nil take the test's SuiteQueues.
func Suite(test string, o Options) ([]Config, error) {
	d := DefaultOptions()
	if o.Rate == 0 {
		o.Rate = d.Rate
	}
	if o.RTT == 0 {
		o.RTT = d.RTT
	}
	if o.Duration == 0 {
		o.Duration = d.Duration
	}
	if o.Idle == 0 {
		o.Idle = d.Idle
	}
	if o.Warmup == 0 {
		o.Warmup = d.Warmup
	}
	if o.Tail == 0 {
		o.Tail = d.Tail
	}
	if o.CC == "" {
		o.CC = d.CC
	}
	if o.N == 0 {
		o.N = d.N
	}
	if o.Probe == 0 {
		o.Probe = d.Probe
	}
	if o.Queues == nil && o.Kernel == nil {
		o.Queues, o.Kernel = SuiteQueues(test)
	}
	w := Window{From: o.Idle, To: o.Idle + o.Duration}
	if name, ok := strings.CutPrefix(test, "flent-"); ok {
		cs, err := flentSuite(name, o)
		for i := range cs {
			cs[i].FlentCC = o.CC
		}
		return cs, err
	}
	switch test {
	case "autorate":
		return autorateSuite(o), nil
	case "rrul":
		return o.each(test, func(c *Config) {
			c.Load = []Window{w}
			for i := 0; i < 4; i++ {
				c.Flows = append(c.Flows, bulk(i, "up", o.CC, w.From, w.To), bulk(4+i, "down", o.CC, w.From, w.To))
			}
			c.Note = "flent rrul: 4 up, 4 down, UDP echo probe"
		}), nil
	case "tcp_nup":
		return o.each(test, func(c *Config) {
			c.Load = []Window{w}
			for i := 0; i < o.N; i++ {
				c.Flows = append(c.Flows, bulk(i, "up", o.CC, w.From, w.To))
			}
			c.Note = fmt.Sprintf("flent tcp_nup: %d uploads", o.N)
		}), nil
	case "rtt_fair":
		return o.each(test, func(c *Config) {
			c.Load = []Window{w}
			c.Paths = []time.Duration{o.RTT, 3 * o.RTT, 7 * o.RTT}
			for i := 0; i < 4; i++ {
				f := bulk(i, "up", o.CC, w.From, w.To)
				f.Path = i
				c.Flows = append(c.Flows, f)
			}
			c.Note = "flent rtt_fair: uploads of base RTT 1, 2, 4, 8 × rtt; the longer paths add their delay in a hop before the bottleneck"
		}), nil
	case "square":
		return o.each(test, func(c *Config) {
			on, off := o.Duration/2, o.Duration/2
			if off < 5*time.Second {
				off = 5 * time.Second
			}
			for k := 0; k < 2; k++ {
				from := o.Idle + time.Duration(k)*(on+off)
				win := Window{From: from, To: from + on}
				c.Load = append(c.Load, win)
				for i := 0; i < 4; i++ {
					c.Flows = append(c.Flows, bulk(4*k+i, "up", o.CC, win.From, win.To))
				}
			}
			c.Tail = max(c.Tail, off)
			c.Note = "flent tcp_4up_squarewave: 4 uploads on and off twice; recovery = time to idle latency after each off"
		}), nil
	case "speedtest":
		// NDT7: one BBR download for 10 s; iperf3: one CUBIC upload for
		// 10 s, no omitted start. Both count slow start, so no warm-up in
		// their mean rate; latency skips the first 2 s.
		so := o
		so.Warmup = 2 * time.Second
		var out []Config
		for _, tool := range []string{"ndt7", "iperf3"} {
			out = append(out, so.each(test, func(c *Config) {
				w := Window{From: so.Idle, To: so.Idle + 10*time.Second}
				c.Load = []Window{w}
				if tool == "ndt7" {
					c.Flows = []FlowSpec{bulk(0, "down", "bbr", w.From, w.To)}
					c.Note = "ndt7: one BBR download, 10 s"
				} else {
					c.Flows = []FlowSpec{bulk(0, "up", "cubic", w.From, w.To)}
					c.Note = "iperf3: one CUBIC upload, 10 s"
				}
				c.Test = "speedtest-" + tool
			})...)
		}
		return out, nil
	case "red":
		ro := o
		ro.Rate, ro.RTT = 2*aqm.Mbit, 40*time.Millisecond
		if o.Duration == d.Duration {
			ro.Duration = 60 * time.Second
		}
		w := Window{From: ro.Idle, To: ro.Idle + ro.Duration}
		return ro.each(test, func(c *Config) {
			c.Load = []Window{w}
			for i := 0; i < 10; i++ {
				f := bulk(i, "up", "reno", w.From, w.To)
				f.MSS = 536
				c.Flows = append(c.Flows, f)
			}
			c.Note = "the RED study: 10 Reno uploads, MSS 536, 2 Mb/s, 40 ms, 50 packets"
		}), nil
	case "flood":
		fo := o
		var out []Config
		for _, random := range []bool{false, true} {
			out = append(out, fo.each(test, func(c *Config) {
				c.Load = []Window{w}
				c.Flows = []FlowSpec{bulk(0, "up", o.CC, w.From, w.To)}
				c.Floods = []FloodSpec{{Rate: 2 * o.Rate, Size: 1500, RandomPorts: random, Start: w.From, Stop: w.To, Seed: 1}}
				c.Test = "flood-fixed"
				if random {
					c.Test = "flood-random"
				}
				c.Note = "UDP flood at twice the rate beside one TCP upload and the probe"
			})...)
		}
		return out, nil
	}
	names := append([]string(nil), Tests...)
	sort.Strings(names)
	return nil, fmt.Errorf("lab: unknown test %q (have %s)", test, strings.Join(names, ", "))
}
