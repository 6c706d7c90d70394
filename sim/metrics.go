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

	dropsAll uint64 // data packets dropped over the whole run, warmup included

	// Payload delivered to receivers in fixed GoodputBin bins over the
	// measured period, for all flows and per group (groups[i]).
	nBins     int
	aggBins   []uint64
	groups    []string
	groupBins [][]uint64
	// groupRTT holds the RTT samples of each named group (nil for the
	// unnamed one, so plain runs pay nothing per ACK).
	groupRTT []*Histogram

	qGrid []uint64 // qGrid[n]: fixed-grid samples that found n packets queued
}

func (m *metrics) init(c *Config, measured time.Duration) {
	if c.Series {
		m.series = &Series{}
	}
	m.nBins = int((measured + GoodputBin - 1) / GoodputBin)
	m.aggBins = make([]uint64, m.nBins)
}

// groupIndex returns the index of a flow group, adding it if new.
func (m *metrics) groupIndex(name string) int32 {
	for i, g := range m.groups {
		if g == name {
			return int32(i)
		}
	}
	m.groups = append(m.groups, name)
	m.groupBins = append(m.groupBins, make([]uint64, m.nBins))
	var h *Histogram
	if name != "" {
		h = &Histogram{}
	}
	m.groupRTT = append(m.groupRTT, h)
	return int32(len(m.groups) - 1)
}

// queueGrid records one fixed-grid sample of the queue length.
func (m *metrics) queueGrid(n int) {
	for len(m.qGrid) <= n {
		m.qGrid = append(m.qGrid, 0)
	}
	m.qGrid[n]++
}

// binRates converts the full bins of payload bytes, merged k at a time,
// to Mb/s (a trailing partial bin, or partial merge, is left out).
func binRates(bins []uint64, full, k int) []float64 {
	out := make([]float64, 0, full/k)
	sec := (time.Duration(k) * GoodputBin).Seconds()
	for i := 0; i+k <= full; i += k {
		var b uint64
		for _, x := range bins[i : i+k] {
			b += x
		}
		out = append(out, float64(b)*8/sec/1e6)
	}
	return out
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
	// PayloadGoodputMbps excludes headers.
	PayloadGoodputMbps float64
	Sent               uint64
	Retransmits        uint64
	Drops              uint64
	Marks              uint64
	Timeouts           uint64
	Reductions         uint64
}

// GroupResult summarises the flows of one [FlowSpec.Group].
type GroupResult struct {
	Group string
	// GoodputMbps is the payload the group's receivers got, headers
	// excluded, over the measured period.
	GoodputMbps float64
	// BinsMbps is the group's payload goodput in consecutive 100 ms bins
	// ([GoodputBin]) over the measured period (its instantaneous
	// throughput); BinMeanMbps and BinSDMbps are their mean and
	// (population) standard deviation.
	BinsMbps               []float64 `json:",omitempty"`
	BinMeanMbps, BinSDMbps float64
	// RTT is the distribution of the group's RTT samples (one per ACK that
	// advances the cumulative ACK) over the measured period: latency under
	// load as its senders saw it.
	RTT DelayStats
}

// QueueGridStats is the queue length sampled on a fixed time grid
// ([Config.QueueSampleInterval]) over the measured period.
type QueueGridStats struct {
	Samples                 uint64
	MeanPackets, P99Packets float64
	MaxPackets              int
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
	// BottleneckMbps is the rate the path is limited to (the shaper's if
	// there is one) at the start of the run.
	BottleneckMbps float64
	// Utilization is the bytes the bottleneck sent over what it could have
	// sent at its configured rate(s), or at the shaper's rate if there is
	// one.
	Utilization float64
	// GoodputMbps is the new data delivered to all receivers, counted in
	// bytes on the wire (headers included).
	GoodputMbps float64
	// PayloadGoodputMbps counts the same data as payload only (each TCP
	// packet's size minus [Config.HeaderBytes]): application goodput.
	PayloadGoodputMbps float64
	// PayloadUtilization is PayloadGoodputMbps over the link capacity (the
	// other way of counting utilization, next to the wire's).
	PayloadUtilization float64
	// GoodputCoV100ms and GoodputCoV1s are the coefficients of variation
	// (population standard deviation over mean) of the receivers' summed
	// payload goodput in fixed 100 ms and 1 s bins.
	GoodputCoV100ms, GoodputCoV1s float64
	// FlowCoV100ms and FlowCoV1s are the same per receiver: the mean, over
	// the long-lived TCP flows, of each one's payload-goodput CoV.
	FlowCoV100ms, FlowCoV1s float64
	// DropsWholeRun counts every dropped data packet, warmup included.
	DropsWholeRun uint64
	// QueueGrid is the fixed-grid queue length (zero if not sampled).
	QueueGrid QueueGridStats
	// Groups summarise the flow groups in order of first appearance.
	Groups []GroupResult `json:",omitempty"`
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
	// Reverse describes the reverse direction if the path has one
	// ([Config.Reverse]).
	Reverse *ReverseResult `json:",omitempty"`
	// Events is the number of events processed; Packets the data packets
	// sent; WallSeconds the real time the run took.
	Events      uint64
	Packets     uint64
	WallSeconds float64
	// Series is present if Config.Series was set.
	Series *Series `json:",omitempty"`

	// The distributions behind Delay and Groups' RTT, as compact copies:
	// a result holds nothing of the run that produced it, so a long list of
	// results costs only their summaries.
	delay map[string]*sparseHist
	rtt   []*sparseHist // per group, as Groups
}

// sparseHist is a [Histogram]'s non-empty buckets.
type sparseHist struct {
	idx    []uint16
	counts []uint64
	n      uint64
	sum    float64
	max    int64
}

func compactHist(h *Histogram) *sparseHist {
	s := &sparseHist{n: h.n, sum: h.sum, max: h.max}
	for i, c := range h.counts {
		if c != 0 {
			s.idx = append(s.idx, uint16(i))
			s.counts = append(s.counts, c)
		}
	}
	return s
}

// histogram rebuilds the full histogram.
func (s *sparseHist) histogram() *Histogram {
	h := &Histogram{n: s.n, sum: s.sum, max: s.max}
	for j, i := range s.idx {
		h.counts[i] = s.counts[j]
	}
	return h
}

// GroupRTTHistogram returns the RTT-sample histogram of a named flow
// group (a fresh copy), or nil.
func (r *Result) GroupRTTHistogram(group string) *Histogram {
	for i, g := range r.Groups {
		if g.Group == group && i < len(r.rtt) && r.rtt[i] != nil {
			return r.rtt[i].histogram()
		}
	}
	return nil
}

// Group returns the summary of a flow group (zero if absent).
func (r *Result) Group(group string) GroupResult {
	for _, g := range r.Groups {
		if g.Group == group {
			return g
		}
	}
	return GroupResult{Group: group}
}

// gridStats summarises fixed-grid queue-length samples: counts[n] samples
// saw n packets.
func gridStats(counts []uint64) QueueGridStats {
	var q QueueGridStats
	var sum float64
	for n, c := range counts {
		q.Samples += c
		sum += float64(n) * float64(c)
		if c > 0 {
			q.MaxPackets = n
		}
	}
	if q.Samples == 0 {
		return q
	}
	q.MeanPackets = sum / float64(q.Samples)
	// The 99th percentile: the smallest n with at least 99% of the samples
	// at or below it.
	need := uint64(math.Ceil(0.99 * float64(q.Samples)))
	var cum uint64
	for n, c := range counts {
		cum += c
		if cum >= need {
			q.P99Packets = float64(n)
			break
		}
	}
	return q
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
// "classic", "l4s", "udp", "short", "ping"), a fresh copy, or nil.
func (r *Result) DelayHistogram(class string) *Histogram {
	if h := r.delay[class]; h != nil {
		return h.histogram()
	}
	return nil
}

func (s *Sim) result(events uint64, wall time.Duration) *Result {
	m := &s.m
	meas := s.end.Sub(s.warm).Seconds()
	r := &Result{MeasuredSeconds: meas, BottleneckMbps: s.cfg.BottleneckBps() / 1e6, Events: events, Packets: m.sentPkts, WallSeconds: wall.Seconds()}
	// Capacity over the measured period, piecewise over the rate changes.
	type change struct {
		at   aqm.Time
		rate float64
	}
	cs := []change{{epoch, s.cfg.RateBps}}
	for _, rc := range s.cfg.RateChanges {
		cs = append(cs, change{epoch.Add(rc.At), rc.RateBps})
	}
	if s.cfg.Shaper != nil {
		cs = []change{{epoch, s.cfg.Shaper.RateBps}}
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
	if c := s.cfg.Capacity; c != nil && s.cfg.Shaper == nil {
		capBits = c.BitsBetween(s.cfg.Warmup, s.cfg.Duration)
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

	r.delay = map[string]*sparseHist{"all": compactHist(&m.delayAll)}
	r.Delay = map[string]DelayStats{"all": delayStats(&m.delayAll)}
	for c := range numClasses {
		if m.delay[c].Count() > 0 {
			r.delay[Class(c).String()] = compactHist(&m.delay[c])
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
			GoodputMbps: g, PayloadGoodputMbps: float64(f.payloadBytes) * 8 / meas / 1e6, Sent: f.sent, Retransmits: f.retx, Drops: f.drops, Marks: f.marks,
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
	var payload uint64
	for _, f := range s.flows {
		payload += f.payloadBytes
	}
	r.PayloadGoodputMbps = float64(payload) * 8 / meas / 1e6
	if capBits > 0 {
		r.PayloadUtilization = float64(payload) * 8 / capBits
	}
	r.DropsWholeRun = m.dropsAll
	full := int(s.end.Sub(s.warm) / GoodputBin)
	r.GoodputCoV100ms = cov(binRates(m.aggBins, full, 1))
	r.GoodputCoV1s = cov(binRates(m.aggBins, full, int(time.Second/GoodputBin)))
	var fc100, fc1s []float64
	for _, f := range s.flows {
		if f.bins != nil && (f.class == ClassClassic || f.class == ClassL4S) {
			fc100 = append(fc100, cov(binRates(f.bins, full, 1)))
			fc1s = append(fc1s, cov(binRates(f.bins, full, int(time.Second/GoodputBin))))
		}
	}
	r.FlowCoV100ms, r.FlowCoV1s = mean(fc100), mean(fc1s)
	for i, name := range m.groups {
		bins := binRates(m.groupBins[i], full, 1)
		gr := GroupResult{Group: name, BinsMbps: bins}
		var sum uint64
		for _, b := range m.groupBins[i] {
			sum += b
		}
		gr.GoodputMbps = float64(sum) * 8 / meas / 1e6
		gr.BinMeanMbps = mean(bins)
		gr.BinSDMbps = gr.BinMeanMbps * cov(bins)
		if h := m.groupRTT[i]; h != nil {
			gr.RTT = delayStats(h)
			r.rtt = append(r.rtt, compactHist(h))
		} else {
			r.rtt = append(r.rtt, nil)
		}
		r.Groups = append(r.Groups, gr)
	}
	r.QueueGrid = gridStats(m.qGrid)
	r.Jain = Jain(jainX)
	if len(l4s) > 0 && len(classic) > 0 && mean(classic) > 0 {
		r.L4SClassicRatio = mean(l4s) / mean(classic)
	}
	r.Queue = s.q.Stats()
	if s.rev != nil {
		r.Reverse = s.reverseResult(meas)
	}
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
