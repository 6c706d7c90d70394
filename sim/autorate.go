package sim

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fq"
)

// shapedPath is the path of the autorate scenario, one aqm.Queue for the
// simulator: a router whose FQ-CoDel sits behind a token-bucket shaper,
// then the upstream device's drop-tail FIFO (a modem or base station
// buffer no AQM manages), from which the simulator's link takes packets at
// the capacity trace's pace. The shaper's rate is fixed, or set by an
// autorate controller from the probe flows' round-trip times and the rate
// the shaper achieved.
//
// Time: every call first moves the packets the shaper released since the
// last call into the FIFO, each at its own release instant (FQ-CoDel
// dequeues at that instant), so the router's decisions are those of a
// shaper running in real time. The packets keep their router arrival
// time, so the simulator's sojourn is the whole added latency (router and
// device).
type shapedPath struct {
	router aqm.Queue[uint64]
	onDrop aqm.DropFunc[uint64]

	rate   float64  // bits per second
	burst  float64  // bytes
	tokens float64  // bytes; negative: the debt of the last packet
	clock  aqm.Time // the shaper's time: tokens are counted up to it

	fifo      deque[aqm.Packet[uint64]]
	fifoBytes int
	fifoLimit int // packets

	ctl        *autorate.Controller // nil: a fixed rate
	reports    time.Duration        // the achieved-rate interval
	nextReport aqm.Time
	released   uint64 // bytes released since the last report
	reflector  map[int32]int
	// wanRTT times the probes from when they left the shaper (exits, by
	// the simulator's packet slot), so that the controller sees the queue
	// beyond the shaper and not the shaper's own; otherwise from when they
	// were sent, halved if halfRTT (cake-autorate's fping mode).
	wanRTT  bool
	halfRTT bool
	exits   []aqm.Time
	// passive, if set, feeds the controller from the TCP flows instead
	// of the probes (autorate_passive.go).
	passive *passiveFeed

	// An oracle instead of a controller: every oracleStep the rate is
	// oracleShare of the capacity's mean over the oracleStep that ended
	// oracleLag ago (nil trace: none).
	oracle     *Trace
	oracleLag  time.Duration
	nextOracle aqm.Time

	fifoDrops   aqm.Count
	inFIFO      aqm.Count // packets the router counted as dequeued still in the FIFO
	minRate     float64
	maxRate     float64
	rateSeconds float64 // ∫ rate dt, for the mean shaped rate
}

// Defaults of the shaped path.
const (
	shapedFIFOPackets = 600                    // the upstream device's buffer
	shapedReport      = 200 * time.Millisecond // cake-autorate's achieved-rate interval
)

func newShapedPath(e Env, rate float64, ctl *autorate.Controller) (*shapedPath, error) {
	router, err := fq.NewCoDel(fq.CoDelConfig{LimitPackets: e.BufferPackets, Seed: e.Seed, Control: codel.Control{MTUBytes: e.MSS}}, e.OnDrop)
	if err != nil {
		return nil, err
	}
	p := &shapedPath{router: router, onDrop: e.OnDrop, fifoLimit: shapedFIFOPackets, ctl: ctl, reports: shapedReport,
		reflector: map[int32]int{}, minRate: rate, maxRate: rate}
	p.setRate(rate)
	p.tokens = p.burst
	if ctl != nil {
		if err := ctl.Drive(autorate.SetterFunc(func(r aqm.Rate) error { p.setRate(float64(r)); return nil })); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// setRate applies a rate at the shaper's clock (tokens are settled up to
// it before every controller call). The burst is 1 ms at the rate, at
// least two full packets.
func (p *shapedPath) setRate(r float64) {
	p.rate = r
	p.burst = max(2*float64(DefaultMSS), r/8/1000)
	p.tokens = min(p.tokens, p.burst)
	p.minRate, p.maxRate = min(p.minRate, r), max(p.maxRate, r)
}

// refill advances the shaper's clock to t, earning tokens at the rate.
func (p *shapedPath) refill(t aqm.Time) {
	if t <= p.clock {
		return
	}
	if p.clock != 0 {
		dt := float64(t - p.clock)
		p.tokens = min(p.burst, p.tokens+p.rate*dt/8e9)
		p.rateSeconds += p.rate * dt / 1e9
	}
	p.clock = t
}

// Oracle settings: the rate's update period and its share of the
// capacity.
const (
	oracleStep  = 50 * time.Millisecond
	oracleShare = 0.9
)

// advance runs the achieved-rate reports (or the oracle's updates) due up
// to t, then refills to t.
func (p *shapedPath) advance(t aqm.Time) {
	if p.oracle != nil {
		if p.nextOracle == 0 {
			p.nextOracle = t
		}
		for p.nextOracle <= t {
			p.refill(p.nextOracle)
			end := p.nextOracle.Sub(epoch) - p.oracleLag
			if end >= oracleStep {
				p.setRate(max(oracleShare*p.oracle.BitsBetween(end-oracleStep, end)/oracleStep.Seconds(), 100e3))
			}
			p.nextOracle = p.nextOracle.Add(oracleStep)
		}
	}
	if p.ctl != nil {
		if p.nextReport == 0 {
			p.nextReport = t.Add(p.reports)
		}
		for p.nextReport <= t {
			p.refill(p.nextReport)
			p.ctl.Achieved(p.nextReport, aqm.Rate(float64(p.released)*8/p.reports.Seconds()))
			p.released = 0
			p.nextReport = p.nextReport.Add(p.reports)
		}
	}
	p.refill(t)
}

// readyAt is when the shaper next lets a packet go: now if it has tokens.
func (p *shapedPath) readyAt() aqm.Time {
	if p.tokens >= 0 {
		return p.clock
	}
	return p.clock + aqm.Time(-p.tokens*8e9/p.rate) + 1
}

// pump releases, in time order, every packet the shaper lets go up to now.
func (p *shapedPath) pump(now aqm.Time) {
	if p.clock == 0 {
		p.clock = now
	}
	for p.router.Len() > 0 {
		t := p.readyAt()
		if t > now {
			break
		}
		p.advance(t)
		if p.tokens < 0 { // a report changed the rate: look again
			continue
		}
		pk, ok := p.router.Dequeue(t)
		if !ok {
			break
		}
		p.exited(int32(pk.Payload), t)
		if p.wanRTT {
			for int(pk.Payload) >= len(p.exits) {
				p.exits = append(p.exits, 0)
			}
			p.exits[pk.Payload] = t
		}
		p.tokens -= float64(pk.Size)
		p.released += uint64(pk.Size)
		if p.fifo.n >= p.fifoLimit {
			p.fifoDrops.Add(pk.Size)
			p.onDrop(pk, aqm.DroppedOverlimit)
			continue
		}
		p.fifo.push(pk)
		p.fifoBytes += int(pk.Size)
		p.inFIFO.Add(pk.Size)
	}
	p.advance(now)
}

// Enqueue offers p to the router.
func (p *shapedPath) Enqueue(pk aqm.Packet[uint64], now aqm.Time) aqm.Verdict {
	p.pump(now)
	if p.wanRTT && int(pk.Payload) < len(p.exits) {
		p.exits[pk.Payload] = 0 // a new packet in this slot: not yet out
	}
	v := p.router.Enqueue(pk, now)
	p.pump(now)
	return v
}

// Dequeue hands the link the device FIFO's head.
func (p *shapedPath) Dequeue(now aqm.Time) (aqm.Packet[uint64], bool) {
	p.pump(now)
	if p.fifo.n == 0 {
		return aqm.Packet[uint64]{}, false
	}
	pk := p.fifo.pop()
	p.fifoBytes -= int(pk.Size)
	p.inFIFO.Packets--
	p.inFIFO.Bytes -= uint64(pk.Size)
	return pk, true
}

// NextDeparture makes the path an aqm.Paced queue, so that the simulator
// wakes the link when the shaper releases a packet into an empty FIFO.
func (p *shapedPath) NextDeparture(now aqm.Time) aqm.Time {
	switch {
	case p.fifo.n > 0:
		return now
	case p.router.Len() > 0:
		return max(p.readyAt(), now)
	}
	return 0
}

// observePing feeds a probe's round-trip time to the controller; each ping
// flow is one reflector.
func (p *shapedPath) observePing(now aqm.Time, flow, slot int32, rtt time.Duration) {
	if p.ctl == nil {
		return
	}
	if p.passive != nil {
		return // the controller hears the TCP flows alone
	}
	if p.wanRTT {
		// From when the probe left the shaper: the queue beyond it alone.
		if int(slot) >= len(p.exits) || p.exits[slot] == 0 {
			return // dropped in the shaper's queue
		}
		rtt = now.Sub(p.exits[slot])
		p.exits[slot] = 0
	}
	p.pump(now)
	r, ok := p.reflector[flow]
	if !ok {
		r = len(p.reflector)
		p.reflector[flow] = r
	}
	if p.halfRTT {
		rtt /= 2
	}
	p.ctl.Sample(now, r, rtt)
}

func (p *shapedPath) Len() int     { return p.router.Len() + p.fifo.n }
func (p *shapedPath) Backlog() int { return p.router.Backlog() + p.fifoBytes }

// Stats are the router's, with the device FIFO's packets counted as queued
// and its drops as drops of queued packets.
func (p *shapedPath) Stats() aqm.Stats {
	st := p.router.Stats()
	st.Dequeued.Packets -= p.inFIFO.Packets + p.fifoDrops.Packets
	st.Dequeued.Bytes -= p.inFIFO.Bytes + p.fifoDrops.Bytes
	st.DroppedOverlimit = st.DroppedOverlimit.Plus(p.fifoDrops)
	st.DroppedQueued = st.DroppedQueued.Plus(p.fifoDrops)
	st.Len += p.fifo.n
	st.Backlog += p.fifoBytes
	return st
}

// Autorate scenario defaults: the trace files, the windows that give a
// trace's minimum and maximum, and the probe flows.
const (
	autorateWindow   = time.Second
	autorateProbes   = 3
	autorateProbeGap = 150 * time.Millisecond // 20 Hz over the three reflectors
	// autorateJitter spreads the flows' starts: enough to desynchronise
	// the bulk flows, small against the probes' 50 ms spacing.
	autorateJitter = 10 * time.Millisecond
)

// traceSpan is the span of the trace the AQMs see: its period, or a minute.
func traceSpan(t *Trace) time.Duration {
	if t.Period() > 0 {
		return t.Period()
	}
	return time.Minute
}

// Variants of the autorate scenario's controller.
type autorateVariant uint8

const (
	// arDefaults is cake-autorate's defaults.
	arDefaults autorateVariant = iota
	// arAchieved adds cuts to 0.9 of the achieved rate (cake-autorate up
	// to v3.0).
	arAchieved
	// arFast adds those cuts to faster steps and to delay thresholds
	// half the defaults, for a goal of 30 ms on the round trip.
	arFast
	// arRecovery is arFast with Recovery 1: after a cut, an increase at
	// low delay returns to the rate before the cut.
	arRecovery
	// arPassive is arDefaults with Recovery 1, fed by passive RTT from
	// the bulk flows with no probe. The fast setting's tighter thresholds
	// cut on the per-packet noise of a delivery trace that the smallest
	// rise of 50 ms still carries (6.8 % of the capacity on
	// TMobile-LTE-short.up).
	arPassive
	// arCakeAutorate is the cake-autorate baseline: every setting at
	// cake-autorate v3's defaults, written out so that the package's own
	// defaults may move, fed half of each probe's round trip measured
	// through the shaper, as its fping mode does.
	arCakeAutorate
)

// autorateConfig is the controller's configuration for a trace: what a
// user who measured the link would set, after cake-autorate's guidance:
// the maximum at the highest rate seen (the highest 1 s mean), the base at
// the lowest 1 s mean, and the minimum at half of that, since on a path
// where the shaper sits before the bottleneck only a rate below the
// capacity drains the device's queue; every other setting is
// cake-autorate's default. arFast starts from the trace's mean, raises by
// up to 10% at most every 100 ms, cuts by up to 40% or to 0.9 of the
// achieved rate, judges the round trip on thresholds of 5, 15 and 30 ms
// (FullIncreaseBelow, DelayThreshold, FullCutAbove), and calls two
// delayed samples of six bufferbloat, as the Starlink example
// configuration cake-autorate shipped before v3.2 does.
func autorateConfig(t *Trace, v autorateVariant) autorate.Config {
	lo, hi := t.WindowBps(autorateWindow, traceSpan(t))
	lo = max(lo, 200e3)
	c := autorate.Config{MinRate: aqm.Rate(lo / 2), BaseRate: aqm.Rate(lo), MaxRate: aqm.Rate(max(hi, lo))}
	switch v {
	case arAchieved:
		c.AchievedCut = autorate.DefaultAchievedCut
	case arFast:
		c.AchievedCut = autorate.DefaultAchievedCut
		c.BaseRate = min(max(aqm.Rate(t.MeanBps(traceSpan(t))), c.MinRate), c.MaxRate)
		c.MaxIncrease, c.IncreaseRefractory, c.MaxCut = 0.1, 100*time.Millisecond, 0.4
		c.FullIncreaseBelow, c.DelayThreshold, c.FullCutAbove = 5*time.Millisecond, 15*time.Millisecond, 30*time.Millisecond
		c.DetectionThreshold = 2 // cake-autorate's Starlink example before v3.2
	case arRecovery:
		c = autorateConfig(t, arFast)
		c.Recovery = 1
	case arPassive:
		c.Recovery = 1
		c.Reflectors = 1
	case arCakeAutorate:
		c = cakeAutorateV3(c.MinRate, c.BaseRate, c.MaxRate)
	case arCellular, arStarlink, arMmwave:
		c = linkPreset(t, v)
	}
	return c
}

// cakeAutorateV3 is cake-autorate v3's defaults.sh as a Config, with the
// user's three rates: one-way delay thresholds of 30, 10 and 60 ms; 3
// delayed samples of 6; baselines rising at 0.001 and falling at 0.9, the
// delta EWMA at 0.095; cuts of 0.99 to 0.75 of the rate, increases of up
// to 1.04 at most once per 200 ms achieved-rate report, 0.99 and 1.01
// towards the base at low load above 0.75 of the rate; refractory periods
// of 300 ms after a cut and 1 s for decay; reflectors checked every second
// for a response within 1 s, 3 offences in 60 checks, compared every
// minute (20 ms of baseline, 10 ms of delta); a 10 s global timeout. The
// achieved-rate cut of v3.0 and earlier and Recovery stay off.
func cakeAutorateV3(minRate, base, maxRate aqm.Rate) autorate.Config {
	return autorate.Config{
		MinRate: minRate, BaseRate: base, MaxRate: maxRate,
		DelayThreshold: 30 * time.Millisecond, FullIncreaseBelow: 10 * time.Millisecond, FullCutAbove: 60 * time.Millisecond,
		DetectionWindow: 6, DetectionThreshold: 3,
		BaselineRise: 0.001, BaselineFall: 0.9, DeltaAlpha: 0.095,
		MinCut: 0.01, MaxCut: 0.25, MinIncrease: 0, MaxIncrease: 0.04, DecayStep: 0.01, HighLoad: 0.75,
		CutRefractory: 300 * time.Millisecond, IncreaseRefractory: 200 * time.Millisecond, DecayRefractory: time.Second,
		PacketBytes: 1500, Reflectors: 6,
		ResponseDeadline: time.Second, HealthInterval: time.Second, OffenceWindow: 60, OffenceThreshold: 3,
		ComparisonInterval: time.Minute, BaselineSpread: 20 * time.Millisecond, DeltaSpread: 10 * time.Millisecond,
		RestTime: time.Minute, ProbeTimeout: 10 * time.Second,
	}
}

// pathAQMs are the autorate scenario's paths: queues for runs with a
// Capacity trace only, so they stay out of [AQMs] and the other scenarios;
// [LookupAQM] finds them.
var pathAQMs = map[string]AQM{}

func registerPath(a AQM) { pathAQMs[a.Name] = a }

func init() {
	need := func(e Env) error {
		if e.Capacity == nil {
			return fmt.Errorf("sim: this queue needs a Capacity trace")
		}
		return nil
	}
	autorated := func(v autorateVariant) func(e Env) (aqm.Queue[uint64], error) {
		return func(e Env) (aqm.Queue[uint64], error) {
			if err := need(e); err != nil {
				return nil, err
			}
			ctl, err := autorate.New(autorateConfig(e.Capacity, v))
			if err != nil {
				return nil, err
			}
			p, err := newShapedPath(e, float64(ctl.Rate()), ctl)
			if err != nil {
				return nil, err
			}
			p.wanRTT = v != arCakeAutorate
			p.halfRTT = v == arCakeAutorate
			if v == arPassive || v == arStarlink {
				rtt, err := autorate.NewPassiveRTT(autorate.PassiveConfig{Flows: 64, Seed: e.Seed | 1})
				if err != nil {
					return nil, err
				}
				p.passive = &passiveFeed{rtt: rtt}
			}
			return p, nil
		}
	}
	registerPath(AQM{Name: "fq-codel+autorate", Desc: "FQ-CoDel behind a shaper an autorate controller drives from the pings' RTTs " +
		"(max: the trace's highest 1 s mean; base: its lowest; min: half that; cake-autorate's defaults otherwise), " +
		"then a 600-packet drop-tail device buffer", New: autorated(arDefaults)})
	registerPath(AQM{Name: "fq-codel+autorate-achieved", Desc: "as fq-codel+autorate, with cuts to 0.9 of the achieved rate when that is lower " +
		"(cake-autorate up to v3.0)", New: autorated(arAchieved)})
	registerPath(AQM{Name: "fq-codel+autorate-fast", Desc: "as fq-codel+autorate-achieved, with the base at the trace's mean, increases of up to 10% " +
		"every 100 ms, cuts of up to 40%, delay thresholds of 5, 15 and 30 ms on the RTT, and bufferbloat at 2 delayed samples of 6", New: autorated(arFast)})
	registerPath(AQM{Name: "fq-codel+autorate-recovery", Desc: "as fq-codel+autorate-fast, with Recovery 1: after a cut, an increase at low delay " +
		"returns to the rate the cut started from", New: autorated(arRecovery)})
	registerPath(AQM{Name: "fq-codel+autorate-passive", Desc: "as fq-codel+autorate with Recovery 1, fed by passive RTT from the bulk flows' " +
		"timestamps (timed where they leave the shaper and their ACKs return; the smallest rise of each 50 ms) instead of the pings", New: autorated(arPassive)})
	registerPath(AQM{Name: "fq-codel+cake-autorate-v3", Desc: "the cake-autorate baseline: the controller at cake-autorate v3's defaults " +
		"(30/10/60 ms one-way thresholds, 3 delayed of 6, cuts 0.99–0.75, increases up to 1.04 per 200 ms, refractory 300 ms and 1 s) " +
		"fed half of each ping's RTT measured through the shaper, as its fping mode does; rates as fq-codel+autorate", New: autorated(arCakeAutorate)})
	registerPath(AQM{Name: "fq-codel+autorate-cellular", Desc: "the setting for cellular links (LTE uplinks, 5G): as fq-codel+autorate-fast " +
		"with bufferbloat at 3 delayed samples of 6 and Recovery 0.5", New: autorated(arCellular)})
	registerPath(AQM{Name: "fq-codel+autorate-mmwave", Desc: "the setting for links that stop delivering for whole seconds (5G mmWave): " +
		"as fq-codel+autorate-fast with bufferbloat at 3 delayed samples of 6 and without cuts to the achieved rate", New: autorated(arMmwave)})
	registerPath(AQM{Name: "fq-codel+autorate-starlink", Desc: "the setting for Starlink: as fq-codel+autorate-passive (passive RTT, " +
		"Recovery 1) with thresholds of 8, 25 and 50 ms on the RTT rise and increases of up to 15% per 200 ms", New: autorated(arStarlink)})
	oracle := func(lag time.Duration) func(e Env) (aqm.Queue[uint64], error) {
		return func(e Env) (aqm.Queue[uint64], error) {
			if err := need(e); err != nil {
				return nil, err
			}
			p, err := newShapedPath(e, e.Capacity.MeanBps(traceSpan(e.Capacity)), nil)
			if err != nil {
				return nil, err
			}
			p.oracle, p.oracleLag = e.Capacity, lag
			return p, nil
		}
	}
	registerPath(AQM{Name: "fq-codel@oracle", Desc: "FQ-CoDel behind a shaper that knows the trace: every 50 ms, 0.9 of the capacity's " +
		"mean over the last 50 ms (a bound no controller reaches)", New: oracle(0)})
	registerPath(AQM{Name: "fq-codel@oracle-300ms", Desc: "as fq-codel@oracle, with the capacity learnt 300 ms late " +
		"(about what six probes at 20 Hz take to show a change)", New: oracle(300 * time.Millisecond)})
	registerPath(AQM{Name: "fq-codel@mean", Desc: "FQ-CoDel behind a shaper fixed at the trace's mean, then a 600-packet drop-tail device buffer",
		New: func(e Env) (aqm.Queue[uint64], error) {
			if err := need(e); err != nil {
				return nil, err
			}
			return newShapedPath(e, e.Capacity.MeanBps(traceSpan(e.Capacity)), nil)
		}})
	registerPath(AQM{Name: "fq-codel@min", Desc: "FQ-CoDel behind a shaper fixed at the trace's lowest 1 s mean, then a 600-packet drop-tail device buffer",
		New: func(e Env) (aqm.Queue[uint64], error) {
			if err := need(e); err != nil {
				return nil, err
			}
			lo, _ := e.Capacity.WindowBps(autorateWindow, traceSpan(e.Capacity))
			return newShapedPath(e, max(lo, 100e3), nil)
		}})
}

// AutorateTraces are the shipped capacity traces the autorate scenario
// runs on, in sim/testdata/traces.
var AutorateTraces = []string{"step-down-up.rate", "cellular-fading.mahi", "starlink-15s.rate"}

// autorateBounds are the rows a run on given trace files always has: what
// a controller that learns the capacity 300 ms late, and a rate fixed at
// the mean, achieve there.
var autorateBounds = []string{"fq-codel@oracle-300ms", "fq-codel@mean"}

// AutorateAQMs are the autorate scenario's queues.
var AutorateAQMs = []string{"fq-codel+autorate", "fq-codel+autorate-achieved", "fq-codel+autorate-fast", "fq-codel+autorate-recovery",
	"fq-codel+autorate-passive", "fq-codel+cake-autorate-v3", "fq-codel@oracle-300ms", "fq-codel@mean", "fq-codel@min"}

// tracesDir is where the shipped traces are, found from this source file
// so that the command works from any directory of the checkout.
func tracesDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("testdata", "traces")
	}
	return filepath.Join(filepath.Dir(file), "testdata", "traces")
}

var autorateScenario = Scenario{
	Name: "autorate",
	Desc: "a link whose capacity follows a trace (a step down and up; a fading cellular delivery trace; a Starlink-like " +
		"rate with a reconfiguration every 15 s; or the files -trace names, each with its empty-queue floor) behind a 600-packet drop-tail device buffer; in front of it FQ-CoDel " +
		"behind a shaper driven by an autorate controller (cake-autorate's defaults; with cuts to the achieved rate; a " +
		"faster setting with tighter delay thresholds; that with Recovery) from three ping flows' RTTs (30, 35, 40 ms; replies evenly spaced, " +
		"20 Hz in all; timed from when they leave the shaper), the cake-autorate v3 baseline (its defaults, half the RTT through the shaper), beside a shaper that learns the capacity 300 ms late (a bound for a controller that reacts " +
		"as fast as its probes allow), and the shaper fixed at the trace's mean and at its lowest 1 s mean; " +
		"4 CUBIC flows (RTT 30 ms); one trace period (at least 30 s), first 5 s excluded. The shaper sits before " +
		"the bottleneck, as on an upload",
	Published: "cake-autorate's aim: latency kept low on variable-rate links while most of the capacity is used; " +
		"a fixed rate at the mean bloats in the dips, one at the minimum wastes the rest",
	DefaultReps: 1,
	Runs: func(o Options) ([]Run, error) {
		names := slices.Clone(AutorateAQMs)
		if len(o.AQMs) > 0 {
			names = slices.Clone(o.AQMs)
		}
		for _, n := range names {
			if _, err := LookupAQM(n); err != nil {
				return nil, err
			}
		}
		files := o.Traces
		if len(files) == 0 {
			for _, f := range AutorateTraces {
				files = append(files, filepath.Join(tracesDir(), f))
			}
		} else {
			// A trace of one's own is read against the bounds it allows.
			for _, n := range autorateBounds {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		var runs []Run
		for _, file := range files {
			tr, err := LoadTrace(file)
			if err != nil {
				return nil, err
			}
			d := max(traceSpan(tr), 30*time.Second)
			if o.Quick {
				d = 12 * time.Second
			}
			rtts := orRTTs(o.RTTs, []time.Duration{30 * time.Millisecond})
			cfg := Config{
				RateBps: tr.MeanBps(traceSpan(tr)), Capacity: tr, Duration: orDur(o.Duration, d), Seed: o.Seed,
				StartJitter: autorateJitter, Series: o.Series,
			}
			cfg.Warmup = min(5*time.Second, cfg.Duration/4)
			for i := range orInt(o.Flows, 4) {
				cfg.Flows = append(cfg.Flows, FlowSpec{Kind: CUBIC, RTT: rtts[i%len(rtts)], Group: "bulk"})
			}
			// The probes' replies arrive evenly spaced, as cake-autorate
			// staggers its pingers: probe i is sent i·gap/n after the first,
			// less its longer path (i·5 ms).
			for i := range autorateProbes {
				extra := time.Duration(i) * 5 * time.Millisecond
				cfg.Flows = append(cfg.Flows, FlowSpec{Kind: Ping, RTT: rtts[0] + extra,
					Interval: autorateProbeGap, Start: time.Duration(i)*autorateProbeGap/autorateProbes - extra, Group: "probe"})
			}
			for _, a := range names {
				runs = append(runs, Run{Scenario: "autorate", Group: tr.Name, AQM: a, BufferPackets: 1000, Config: cfg,
					Params: map[string]string{"trace": tr.Name,
						"floor_p95_ms": strconv.FormatFloat(tr.floorMs(0.95), 'f', 1, 64),
						"floor_p99_ms": strconv.FormatFloat(tr.floorMs(0.99), 'f', 1, 64)}})
			}
		}
		return runs, nil
	},
}
