package lab

import (
	"encoding/json"
	"math"
	"sort"
	"time"
)

// FlowMetrics is one flow's figures in a run.
type FlowMetrics struct {
	ID   int    `json:"id"`
	Dir  string `json:"dir"`
	CC   string `json:"cc"`
	Path int    `json:"path,omitempty"`
	// GoodputBps is the receiver's in-order bytes over the flow's window
	// (its start plus the warm-up, to its stop), in bits per second.
	GoodputBps float64 `json:"goodput_bps"`
	// MeanBps is bytes received by the stop over the whole flow, slow
	// start included: what NDT7 and iperf3 print.
	MeanBps float64 `json:"mean_bps"`
	// Retrans is bytes retransmitted over bytes sent (sender's TCP_INFO).
	Retrans  float64 `json:"retrans"`
	MinRTTMs float64 `json:"min_rtt_ms"`
	CEMarks  uint32  `json:"ce_marks"`
	Err      string  `json:"err,omitempty"`
}

// Result is one run: its configuration, where it sat in the schedule,
// every figure the lab reports, and the raw samples behind them.
type Result struct {
	Config Config    `json:"config"`
	Rep    int       `json:"rep"`
	Seq    int       `json:"seq"` // position in the whole schedule, from 0
	Start  time.Time `json:"start"`
	Err    string    `json:"err,omitempty"`
	// Offloads is every veth's TSO, GSO and GRO state during the run, as
	// read back when it was set (Topology.Offloads).
	Offloads []string `json:"offloads,omitempty"`

	IdleMedianMs float64 `json:"idle_median_ms"`
	IdleP99Ms    float64 `json:"idle_p99_ms"`
	// Added latency: probe RTT percentiles under load (load windows less
	// their warm-up) minus the idle median.
	AddedP50Ms float64 `json:"added_p50_ms"`
	AddedP90Ms float64 `json:"added_p90_ms"`
	AddedP99Ms float64 `json:"added_p99_ms"`
	// Grade is the bufferbloat grade of AddedP50Ms; GradeP99 of AddedP99Ms.
	Grade    string `json:"grade"`
	GradeP99 string `json:"grade_p99"`
	// ProbeLoss is the share of probes sent under load with no echo.
	ProbeSent int     `json:"probe_sent"`
	ProbeLost int     `json:"probe_lost"`
	ProbeLoss float64 `json:"probe_loss"`

	Flows []FlowMetrics `json:"flows"`
	// GoodputUpBps and GoodputDownBps sum the flows per direction over the
	// load windows (a flow spanning half of them counts half); Share is
	// their sum over the rate times the directions that carried flows.
	GoodputUpBps   float64 `json:"goodput_up_bps"`
	GoodputDownBps float64 `json:"goodput_down_bps"`
	Share          float64 `json:"share"`
	Jain           float64 `json:"jain"`

	Router    RouterStats     `json:"router"`
	Conserved bool            `json:"conserved"`
	RouterRaw json.RawMessage `json:"router_raw,omitempty"`
	// Kernel holds the anchor's qdisc counters per device (r0, r1).
	Kernel map[string][]QdiscStats `json:"kernel,omitempty"`
	// Drops and Marks are the bottleneck's: the router's for a router
	// queue, the kernel qdiscs' for an anchor.
	Drops int64 `json:"drops"`
	Marks int64 `json:"marks"`

	// CPU is the router's CPU over the load windows, in cores (0.4 = 40 %
	// of one core); RSS its largest resident set seen and PeakRSS VmHWM.
	CPU          float64 `json:"cpu_cores"`
	RSSBytes     int64   `json:"rss_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	// Load1 is the machine's 1-minute load average (/proc/loadavg) read
	// when the run's load ends; NaN if it could not be read.
	Load1 float64 `json:"load1"`
	// OtherLabs are the process ids of other lab runs seen with
	// namespaces during this run (checked every second): they competed for
	// the same cores, so the run's figures are suspect.
	OtherLabs []int `json:"other_labs,omitempty"`
	// TimerLag is how late a timer fired in a separate idle process at the
	// lab's niceness over the run (see TimerLag): how promptly the machine
	// woke a sleeping router.
	TimerLag TimerLag `json:"timer_lag"`

	// RecoveryMs is, per load window, the time from its end until the
	// probe is back at idle latency (see Recovery); NaN if it never was.
	RecoveryMs []float64 `json:"recovery_ms"`

	Sink   SinkCounts    `json:"sink"`
	Floods []FloodResult `json:"floods,omitempty"`

	Probe []ProbeSample `json:"probe,omitempty"`
	// FlowSamples are the receivers' byte counts, per flow in Flows order.
	FlowSamples [][]ByteSample `json:"flow_samples,omitempty"`
	Errors      []string       `json:"errors,omitempty"`
	// FlentFile is where a flent run's data file was kept (Config.Flent).
	FlentFile string `json:"flent_file,omitempty"`
}

// MarshalJSON writes NaN figures as null.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	for _, f := range []*float64{&p.IdleMedianMs, &p.IdleP99Ms, &p.AddedP50Ms, &p.AddedP90Ms, &p.AddedP99Ms,
		&p.ProbeLoss, &p.GoodputUpBps, &p.GoodputDownBps, &p.Share, &p.Jain, &p.CPU, &p.Load1,
		&p.TimerLag.P50Ms, &p.TimerLag.P99Ms, &p.TimerLag.MaxMs, &p.TimerLag.Over2Ms, &p.TimerLag.Lost} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = -1
		}
	}
	p.RecoveryMs = append([]float64(nil), r.RecoveryMs...)
	for i, v := range p.RecoveryMs {
		if math.IsNaN(v) {
			p.RecoveryMs[i] = -1
		}
	}
	p.Flows = append([]FlowMetrics(nil), r.Flows...)
	for i := range p.Flows {
		for _, f := range []*float64{&p.Flows[i].GoodputBps, &p.Flows[i].MeanBps, &p.Flows[i].Retrans, &p.Flows[i].MinRTTMs} {
			if math.IsNaN(*f) {
				*f = -1
			}
		}
	}
	return json.Marshal(p)
}

// BytesAt is a receiver's byte count at offset t, interpolated linearly
// between samples and held flat outside them.
func BytesAt(s []ByteSample, t time.Duration) float64 {
	if len(s) == 0 {
		return 0
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].T >= t })
	switch {
	case i == 0:
		return float64(s[0].Bytes)
	case i == len(s):
		return float64(s[len(s)-1].Bytes)
	}
	a, b := s[i-1], s[i]
	if b.T == a.T {
		return float64(b.Bytes)
	}
	f := float64(t-a.T) / float64(b.T-a.T)
	return float64(a.Bytes) + f*float64(b.Bytes-a.Bytes)
}

// Goodput is the bit rate a receiver saw over [from, to].
func Goodput(s []ByteSample, from, to time.Duration) float64 {
	if to <= from {
		return math.NaN()
	}
	return (BytesAt(s, to) - BytesAt(s, from)) * 8 / (to - from).Seconds()
}

// Recovery returns how long after `after` the probe was back at idle
// latency: the send offset of the first of `run` consecutive echoed probes
// whose RTT is at most threshold, less `after`. Lost probes break a run.
// It returns NaN when no such run starts before `until`.
func Recovery(probe []ProbeSample, after, until, threshold time.Duration, run int) float64 {
	if run < 1 {
		run = 1
	}
	start, n := -1, 0
	for i, s := range probe {
		if s.T < after {
			continue
		}
		if s.T >= until && n == 0 {
			break
		}
		if s.RTT >= 0 && s.RTT <= threshold {
			if n == 0 {
				start = i
			}
			n++
			if n >= run {
				return float64(probe[start].T-after) / float64(time.Millisecond)
			}
		} else {
			n = 0
		}
	}
	return math.NaN()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Analyze computes a run's figures from what the agents and the router
// reported. clients holds one ClientResult per client namespace, main
// client first; procs are the router's /proc samples with the run's
// epoch to place them.
func Analyze(cfg Config, clients []ClientResult, epoch time.Time, procs []ProcStat) Result {
	r := Result{Config: cfg}
	nan := math.NaN()
	r.IdleMedianMs, r.IdleP99Ms, r.AddedP50Ms, r.AddedP90Ms, r.AddedP99Ms = nan, nan, nan, nan, nan
	r.ProbeLoss, r.Share, r.Jain, r.CPU = nan, nan, nan, nan

	inLoad := func(t time.Duration) bool {
		for _, w := range cfg.Load {
			if t >= w.From+cfg.Warmup && t < w.To {
				return true
			}
		}
		return false
	}
	var probe []ProbeSample
	if len(clients) > 0 && clients[0].Probe != nil {
		probe = clients[0].Probe.Samples
	}
	r.Probe = probe
	var idle, loaded []float64
	const settle = 200 * time.Millisecond // first echoes may wait for ARP
	for _, s := range probe {
		switch {
		case s.T >= settle && s.T < cfg.Idle:
			if s.RTT >= 0 {
				idle = append(idle, ms(s.RTT))
			}
		case inLoad(s.T):
			r.ProbeSent++
			if s.RTT < 0 {
				r.ProbeLost++
			} else {
				loaded = append(loaded, ms(s.RTT))
			}
		}
	}
	if r.ProbeSent > 0 {
		r.ProbeLoss = float64(r.ProbeLost) / float64(r.ProbeSent)
	}
	if len(idle) > 0 {
		r.IdleMedianMs = Median(idle)
		r.IdleP99Ms = Percentile(idle, 99)
	}
	if len(loaded) > 0 && len(idle) > 0 {
		r.AddedP50Ms = Percentile(loaded, 50) - r.IdleMedianMs
		r.AddedP90Ms = Percentile(loaded, 90) - r.IdleMedianMs
		r.AddedP99Ms = Percentile(loaded, 99) - r.IdleMedianMs
	}
	r.Grade, r.GradeP99 = GradeMs(r.AddedP50Ms), GradeMs(r.AddedP99Ms)

	// Flows.
	// A flow's goodput counts towards its direction's total in proportion
	// to the share of the load windows it spans, so flows that take turns
	// (the square wave's) average rather than add up.
	var loadSpan time.Duration
	for _, w := range cfg.Load {
		if w.To > w.From+cfg.Warmup {
			loadSpan += w.To - w.From - cfg.Warmup
		}
	}
	var shares []float64
	dirs := map[string]bool{}
	for _, c := range clients {
		r.Errors = append(r.Errors, c.Errors...)
		for _, f := range c.Flows {
			fm := FlowMetrics{ID: f.ID, Dir: f.Dir, CC: f.CC, Path: f.Path, Err: f.Err, Retrans: nan, MinRTTMs: nan}
			from := f.Start + cfg.Warmup
			if from >= f.Stop {
				from = f.Start
			}
			fm.GoodputBps = Goodput(f.Samples, from, f.Stop)
			fm.MeanBps = Goodput(f.Samples, f.Start, f.Stop)
			if si := f.Sender; si != nil {
				if si.BytesSent > 0 {
					fm.Retrans = float64(si.BytesRetrans) / float64(si.BytesSent)
				}
				fm.MinRTTMs = ms(si.MinRTT)
				fm.CEMarks = si.DeliveredCE
				if fm.CC == "" {
					fm.CC = si.CC
				}
			}
			r.Flows = append(r.Flows, fm)
			r.FlowSamples = append(r.FlowSamples, f.Samples)
			if !math.IsNaN(fm.GoodputBps) {
				shares = append(shares, fm.GoodputBps)
				dirs[f.Dir] = true
				g := fm.GoodputBps
				if span := f.Stop - from; loadSpan > 0 && span < loadSpan {
					g *= float64(span) / float64(loadSpan)
				}
				if f.Dir == "up" {
					r.GoodputUpBps += g
				} else {
					r.GoodputDownBps += g
				}
			}
		}
		r.Floods = append(r.Floods, c.Floods...)
		if c.Sink.Packets > r.Sink.Packets {
			r.Sink = c.Sink
		}
	}
	if len(dirs) > 0 && cfg.Rate > 0 {
		r.Share = (r.GoodputUpBps + r.GoodputDownBps) / (float64(cfg.Rate) * float64(len(dirs)))
	}
	if len(shares) > 0 {
		r.Jain = Jain(shares)
	}

	// Router CPU over the load windows, memory over the run.
	var busy, span float64
	for _, w := range cfg.Load {
		var a, b *ProcStat
		for i := range procs {
			off := procs[i].At.Sub(epoch)
			if off >= w.From+cfg.Warmup && off <= w.To {
				if a == nil {
					a = &procs[i]
				}
				b = &procs[i]
			}
		}
		if a != nil && b != a {
			if s := CPUShare(*a, *b); !math.IsNaN(s) {
				dt := b.At.Sub(a.At).Seconds()
				busy += s * dt
				span += dt
			}
		}
	}
	if span > 0 {
		r.CPU = busy / span
	}
	for _, p := range procs {
		r.RSSBytes = max(r.RSSBytes, p.RSSBytes)
		r.PeakRSSBytes = max(r.PeakRSSBytes, p.PeakRSSBytes)
	}

	// Recovery after each window.
	thr := time.Duration((r.IdleP99Ms + 1) * float64(time.Millisecond))
	for i, w := range cfg.Load {
		until := cfg.End()
		if i+1 < len(cfg.Load) {
			until = cfg.Load[i+1].From
		}
		rec := nan
		if !math.IsNaN(r.IdleP99Ms) {
			rec = Recovery(probe, w.To, until, thr, 5)
		}
		r.RecoveryMs = append(r.RecoveryMs, rec)
	}
	return r
}

// SetRouter fills in the router's and the kernel anchor's counters.
func (r *Result) SetRouter(st RouterStats, raw []byte, kernel map[string][]QdiscStats) {
	r.Router, r.Conserved = st, st.Conserved()
	if len(raw) > 0 && json.Valid(raw) {
		r.RouterRaw = json.RawMessage(raw)
	}
	r.Kernel = kernel
	if r.Config.Queue.Kernel != nil {
		for _, qs := range kernel {
			for _, q := range qs {
				if q.Kind != "htb" {
					r.Drops += q.Drops
					r.Marks += q.Marked
				}
			}
		}
		return
	}
	r.Drops, r.Marks = st.Dropped, st.Marked
}
