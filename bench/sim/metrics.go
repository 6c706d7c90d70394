package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// metrics is what a run accumulates while it runs.
type metrics struct {
	delay    [numClasses]Histogram
	delayAll Histogram
	ping     Histogram
	fct      Histogram
	fcts     []FCT

	drops, marks, sentPkts uint64
	txBytes                uint64

	// current sample window
	winBytes [numClasses]uint64
	winSoj   float64
	winSojN  uint64

	aggSamples []float64 // goodput per sample after warmup, bits/s
	series     *Series
}

func (m *metrics) init(c *Config) {
	if c.Series {
		m.series = &Series{}
	}
}

func (m *metrics) sample(s *Sim) {
	dt := s.cfg.SampleInterval.Seconds()
	var total uint64
	for _, b := range m.winBytes {
		total += b
	}
	if s.now > s.warm {
		m.aggSamples = append(m.aggSamples, float64(total)*8/dt)
	}
	if m.series != nil {
		se := m.series
		se.T = append(se.T, s.now.Sub(epoch).Seconds())
		qd := 0.0
		if m.winSojN > 0 {
			qd = m.winSoj / float64(m.winSojN) / 1e6
		}
		se.QueueDelayMs = append(se.QueueDelayMs, qd)
		se.QueuePackets = append(se.QueuePackets, s.q.Len())
		se.ThroughputMbps = append(se.ThroughputMbps, float64(total)*8/dt/1e6)
		if se.ClassMbps == nil {
			se.ClassMbps = map[string][]float64{}
		}
		for c := range numClasses {
			se.ClassMbps[Class(c).String()] = append(se.ClassMbps[Class(c).String()], float64(m.winBytes[c])*8/dt/1e6)
		}
	}
	m.winBytes = [numClasses]uint64{}
	m.winSoj, m.winSojN = 0, 0
}

// Series are time series sampled every SampleInterval over the whole run.
type Series struct {
	T              []float64            // seconds from the start
	QueueDelayMs   []float64            // mean sojourn of the packets dequeued in the interval
	QueuePackets   []int                // queue length at the sample instant
	ThroughputMbps []float64            // goodput delivered in the interval, all flows
	ClassMbps      map[string][]float64 // the same per traffic class
}

// DelayStats summarises a delay distribution, in milliseconds.
type DelayStats struct {
	Count                               uint64
	MeanMs, P50Ms, P99Ms, P999Ms, MaxMs float64
}

func delayStats(h *Histogram) DelayStats {
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 }
	return DelayStats{
		Count: h.Count(), MeanMs: ms(h.Mean()), P50Ms: ms(h.Quantile(0.5)),
		P99Ms: ms(h.Quantile(0.99)), P999Ms: ms(h.Quantile(0.999)), MaxMs: ms(h.Max()),
	}
}

// FlowResult is one flow's share.
type FlowResult struct {
	ID          int
	Kind        Kind
	Class       string
	Group       string `json:",omitempty"`
	RTTMs       float64
	GoodputMbps float64
	Sent        uint64
	Retransmits uint64
	Drops       uint64
	Marks       uint64
	Timeouts    uint64
	Reductions  uint64
}

// FCT is one short flow's completion.
type FCT struct {
	Packets int64
	Seconds float64
}

// Result holds every metric of one run. Rates are over the measured period
// (Duration minus Warmup).
type Result struct {
	// MeasuredSeconds is the length of the measured period.
	MeasuredSeconds float64
	// Utilization is the bytes the bottleneck sent over what it could have
	// sent at its configured rate(s).
	Utilization float64
	// GoodputMbps is the in-order data delivered to all receivers.
	GoodputMbps float64
	// Jain is Jain's fairness index over the long-lived TCP flows' goodput.
	Jain float64
	// L4SClassicRatio is the mean goodput of an L4S flow over that of a
	// classic flow (0 when either class is absent).
	L4SClassicRatio float64
	// Drops and Marks count data packets dropped (queue or path) and marked
	// CE by the queue; the rates are per second and per packet sent.
	Drops, Marks               uint64
	DropsPerSec, MarksPerSec   float64
	DropFraction, MarkFraction float64
	// AvgQueuePackets and AvgQueueBytes are time averages of the backlog.
	AvgQueuePackets, AvgQueueBytes float64
	// ThroughputCoV is the coefficient of variation of the aggregate
	// goodput over SampleInterval windows.
	ThroughputCoV float64
	// Delay is the queueing delay (sojourn) per traffic class, and "all".
	Delay map[string]DelayStats
	// Ping is the ping round-trip time under load.
	Ping DelayStats
	// FCT summarises short-flow completion times; FCTs lists them.
	FCT  DelayStats
	FCTs []FCT `json:",omitempty"`
	// Flows are the per-flow results (long-lived flows, CBR and pings; short
	// flows are summarised in FCT).
	Flows []FlowResult
	// Queue is the queue's own counters at the end.
	Queue aqm.Stats
	// Events is the number of events processed; Packets the data packets
	// sent; WallSeconds the real time the run took.
	Events      uint64
	Packets     uint64
	WallSeconds float64
	// Series is present if Config.Series was set.
	Series *Series `json:",omitempty"`

	delay map[string]*Histogram
}

// GroupGoodputMbps returns the summed goodput of the flows whose Group is
// group.
func (r *Result) GroupGoodputMbps(group string) float64 {
	g := 0.0
	for _, f := range r.Flows {
		if f.Group == group {
			g += f.GoodputMbps
		}
	}
	return g
}

// DelayHistogram returns the queueing-delay histogram of a class ("all",
// "classic", "l4s", "udp", "short", "ping"), or nil.
func (r *Result) DelayHistogram(class string) *Histogram { return r.delay[class] }

func (s *Sim) result(events uint64, wall time.Duration) *Result {
	m := &s.m
	meas := s.end.Sub(s.warm).Seconds()
	r := &Result{MeasuredSeconds: meas, Events: events, Packets: m.sentPkts, WallSeconds: wall.Seconds()}
	// Capacity over the measured period, piecewise over the rate changes.
	type change struct {
		at   aqm.Time
		rate float64
	}
	cs := []change{{epoch, s.cfg.RateBps}}
	for _, rc := range s.cfg.RateChanges {
		cs = append(cs, change{epoch.Add(rc.At), rc.RateBps})
	}
	slices.SortStableFunc(cs, func(a, b change) int { return cmp.Compare(a.at, b.at) })
	capBits := 0.0
	for i, c := range cs {
		to := s.end
		if i+1 < len(cs) {
			to = min(cs[i+1].at, s.end)
		}
		if from := max(c.at, s.warm); to > from {
			capBits += c.rate * to.Sub(from).Seconds()
		}
	}
	if capBits > 0 {
		r.Utilization = float64(m.txBytes) * 8 / capBits
	}
	r.Drops, r.Marks = m.drops, m.marks
	r.DropsPerSec, r.MarksPerSec = float64(m.drops)/meas, float64(m.marks)/meas
	if m.sentPkts > 0 {
		r.DropFraction = float64(m.drops) / float64(m.sentPkts)
		r.MarkFraction = float64(m.marks) / float64(m.sentPkts)
	}
	ns := float64(s.end - s.warm)
	r.AvgQueuePackets, r.AvgQueueBytes = s.qAreaPkts/ns, s.qAreaBytes/ns
	r.ThroughputCoV = cov(m.aggSamples)

	r.delay = map[string]*Histogram{"all": &m.delayAll}
	r.Delay = map[string]DelayStats{"all": delayStats(&m.delayAll)}
	for c := range numClasses {
		if m.delay[c].Count() > 0 {
			r.delay[Class(c).String()] = &m.delay[c]
			r.Delay[Class(c).String()] = delayStats(&m.delay[c])
		}
	}
	r.Ping = delayStats(&m.ping)
	r.FCT = delayStats(&m.fct)
	r.FCTs = m.fcts

	var good uint64
	var jainX []float64
	var l4s, classic []float64
	for _, f := range s.flows {
		good += f.goodBytes
		if f.short {
			continue
		}
		g := float64(f.goodBytes) * 8 / meas / 1e6
		r.Flows = append(r.Flows, FlowResult{
			ID: int(f.id), Kind: f.kind, Class: f.class.String(), Group: f.group, RTTMs: f.rtt.Seconds() * 1e3,
			GoodputMbps: g, Sent: f.sent, Retransmits: f.retx, Drops: f.drops, Marks: f.marks,
			Timeouts: f.timeouts, Reductions: f.reductions,
		})
		switch f.class {
		case ClassClassic:
			classic = append(classic, g)
			jainX = append(jainX, g)
		case ClassL4S:
			l4s = append(l4s, g)
			jainX = append(jainX, g)
		}
	}
	r.GoodputMbps = float64(good) * 8 / meas / 1e6
	r.Jain = Jain(jainX)
	if len(l4s) > 0 && len(classic) > 0 && mean(classic) > 0 {
		r.L4SClassicRatio = mean(l4s) / mean(classic)
	}
	r.Queue = s.q.Stats()
	r.Series = m.series
	return r
}

// Jain returns Jain's fairness index (Σx)²/(n·Σx²) of xs: 1 when all are
// equal, 1/n when one takes everything. It returns 0 for no input or all
// zeros.
func Jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// cov is the coefficient of variation (population standard deviation over
// mean), 0 if undefined.
func cov(xs []float64) float64 {
	m := mean(xs)
	if m == 0 {
		return 0
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v/float64(len(xs))) / m
}
