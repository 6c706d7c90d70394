package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// The BBR self-checks run at 50 Mb/s and 20 ms (BDP ≈ 84 packets of 1500
// bytes) through a 4-BDP drop-tail FIFO.
const (
	bbrTestRate = 50e6
	bbrTestRTT  = 20 * time.Millisecond
	bbrTestBuf  = 336
)

var bbrTestBDP = bbrTestRate * bbrTestRTT.Seconds() / 8 / DefaultMSS

// TestBBRStartupAndDrain protects Startup and Drain: a lone flow fills the
// link within a few rounds, its Startup queue peaks between half a BDP and
// the high-gain window (2.89 BDP plus three send quanta), Drain empties it,
// and then the flow keeps the link busy with only the queue its send-quantum
// allowance permits, with BtlBw within 1% of the link rate and no sample
// above it.
func TestBBRStartupAndDrain(t *testing.T) {
	cfg := Config{RateBps: bbrTestRate, Duration: 30 * time.Second, Warmup: 5 * time.Second, Series: true,
		SampleInterval: 10 * time.Millisecond, QueueSampleInterval: time.Millisecond,
		Flows: []FlowSpec{{Kind: BBR, RTT: bbrTestRTT}}}
	s, err := New(cfg, fifoQ(bbrTestBuf))
	require.NoError(t, err)
	r := s.Run()
	se := r.Series
	peak, peakAt := 0, 0
	for i, q := range se.QueuePackets[:100] { // the first second
		if q > peak {
			peak, peakAt = q, i
		}
	}
	t.Logf("startup peak %d packets (%.2f BDP) at %.2fs; util %.4f; grid mean queue %.1f", peak, float64(peak)/bbrTestBDP,
		se.T[peakAt], r.Utilization, r.QueueGrid.MeanPackets)
	require.GreaterOrEqual(t, float64(peak), 0.5*bbrTestBDP)
	require.LessOrEqual(t, float64(peak), 2.89*bbrTestBDP+3*4)
	// Drain: the queue holds while Startup confirms the plateau (3 rounds,
	// each one RTT inflated by the queue, about 66 ms), then Drain empties
	// it within a few more: below a quarter BDP within 400 ms of the peak.
	drained := false
	for _, q := range se.QueuePackets[peakAt : peakAt+40] {
		drained = drained || float64(q) < 0.25*bbrTestBDP
	}
	require.True(t, drained, "Drain empties the Startup queue")
	// Utilization ≥ 95% from the 12th round on.
	for i := 12 * 2; i < 100; i += 10 {
		tput := 0.0
		for _, x := range se.ThroughputMbps[i : i+10] {
			tput += x / 10
		}
		require.Greater(t, tput, 0.95*bbrTestRate/1e6, "100 ms from %.2fs", se.T[i])
	}
	require.Greater(t, r.Utilization, 0.97)
	require.Zero(t, r.Drops, "a 4-BDP buffer holds BBR's high-gain burst")
	// The send-quantum allowance (3 × 4 packets at 50 Mb/s, rounded up)
	// lets the 0.75 phase end with about 12 packets still queued: the mean
	// stays below a quarter BDP (an exact 0.99 × rate cruise would keep
	// none).
	require.Less(t, r.QueueGrid.MeanPackets, 0.25*bbrTestBDP)
	f := s.flows[0]
	link := bbrTestRate / 8 / DefaultMSS
	require.InEpsilon(t, link, f.bbr.maxBw, 0.01, "BtlBw estimates the link rate")
	require.LessOrEqual(t, f.bbr.maxBw, link*1.01, "no rate sample above the link")
	require.Equal(t, bbrProbeBW, f.bbr.mode)
}

// TestBBRProbeRTT protects ProbeRTT: with two flows the RTT samples vary,
// so min_rtt expires every 10 s; the flow then holds its window at 4
// packets for at least 200 ms. With an ACK for every segment (the setting of
// the BBR self-checks) each flow probes every 10 s and, after the first
// episode, the two flows' episodes coincide (they see the same minimum and
// expire together). With Linux's delayed ACKs and ACK-aggregation
// allowance the two flows' episodes overlap, or the flows take turns (each
// one's probe draining the queue far enough to refresh the other's
// min_rtt); either way the pair probes every 10 s.
func TestBBRProbeRTT(t *testing.T) {
	type episode struct{ from, to time.Duration }
	run := func(tcp TCPConfig) [2][]episode {
		var eps [2][]episode
		cfg := Config{RateBps: bbrTestRate, Duration: 42 * time.Second, TCP: tcp,
			Flows: []FlowSpec{{Kind: BBR, RTT: bbrTestRTT}, {Kind: BBR, RTT: bbrTestRTT, Start: 3 * time.Second}},
			Trace: func(now time.Duration, fl int, cwnd float64) {
				e := eps[fl]
				switch {
				case cwnd <= bbrMinCwnd && (len(e) == 0 || e[len(e)-1].to != 0):
					eps[fl] = append(e, episode{from: now})
				case cwnd > bbrMinCwnd && len(e) > 0 && e[len(e)-1].to == 0:
					e[len(e)-1].to = now
				}
			}}
		s, err := New(cfg, fifoQ(bbrTestBuf))
		require.NoError(t, err)
		s.Run()
		t.Logf("%s: %v", tcp.Profile, eps)
		for fl, e := range eps {
			require.NotEmpty(t, e, fl)
			for i, ep := range e {
				require.GreaterOrEqual(t, ep.to-ep.from, bbrProbeRTTTime, "flow %d episode %d lasts 200 ms", fl, i)
				require.Less(t, ep.to-ep.from, bbrProbeRTTTime+5*bbrTestRTT)
			}
			require.EqualValues(t, len(e), s.flows[fl].bbr.probeRTTs)
		}
		return eps
	}
	every := LinuxTCP()
	every.Profile, every.AckEvery = "ack-every-segment", 1
	eps := run(every)
	for fl, e := range eps {
		require.GreaterOrEqual(t, len(e), 3, "flow %d: an episode about every 10 s", fl)
		for i := 1; i < len(e); i++ {
			gap := e[i].from - e[i-1].from
			require.InDelta(t, 10.3, gap.Seconds(), 0.4, "flow %d: episodes every 10 s plus the episode", fl)
		}
	}
	// Aligned after the first: every later episode of flow 1 starts within
	// one RTT of one of flow 0.
	for _, e1 := range eps[1][1:] {
		near := false
		for _, e0 := range eps[0] {
			near = near || math.Abs((e1.from-e0.from).Seconds()) <= 2*bbrTestRTT.Seconds()
		}
		require.True(t, near, "flow 1's episode at %v aligns with flow 0's", e1.from)
	}

	// Delayed ACKs: the pair's episodes, merged where they overlap, still
	// come every 10 s plus the episode.
	eps = run(LinuxTCP())
	var starts []time.Duration
	for _, e := range eps {
		for _, ep := range e {
			starts = append(starts, ep.from)
		}
	}
	slices.Sort(starts)
	merged := starts[:1]
	for _, x := range starts[1:] {
		if x-merged[len(merged)-1] > bbrProbeRTTTime {
			merged = append(merged, x)
		}
	}
	require.GreaterOrEqual(t, len(merged), 4)
	for i := 1; i < len(merged); i++ {
		require.InDelta(t, 10.3, (merged[i] - merged[i-1]).Seconds(), 0.4, "the pair probes every 10 s")
	}
}

// TestBBRConvergence protects fairness between BBR flows: a second flow
// started 5 s after the first converges to an equal share (Jain ≥ 0.9 over
// [20, 40] s) while the link stays busy.
func TestBBRConvergence(t *testing.T) {
	cfg := Config{RateBps: bbrTestRate, Duration: 40 * time.Second, Warmup: 20 * time.Second,
		Flows: []FlowSpec{{Kind: BBR, RTT: bbrTestRTT}, {Kind: BBR, RTT: bbrTestRTT, Start: 5 * time.Second}}}
	r := mustRun(t, cfg, fifoQ(bbrTestBuf))
	t.Logf("goodput %.1f / %.1f Mb/s, Jain %.3f, util %.3f", r.Flows[0].GoodputMbps, r.Flows[1].GoodputMbps, r.Jain, r.Utilization)
	require.GreaterOrEqual(t, r.Jain, 0.9)
	require.Greater(t, r.Utilization, 0.95)
}

// TestBBRIgnoresLoss protects BBR's loss response: under 1% random loss it
// keeps most of the link (≥ 85%), where a loss-based sender collapses.
func TestBBRIgnoresLoss(t *testing.T) {
	cfg := Config{RateBps: bbrTestRate, Duration: 20 * time.Second, Warmup: 5 * time.Second, LossProb: 0.01, Seed: 3,
		Flows: []FlowSpec{{Kind: BBR, RTT: bbrTestRTT}}}
	r := mustRun(t, cfg, fifoQ(bbrTestBuf))
	cfg.Flows[0].Kind = CUBIC
	rc := mustRun(t, cfg, fifoQ(bbrTestBuf))
	t.Logf("1%% loss: BBR util %.3f, CUBIC util %.3f", r.Utilization, rc.Utilization)
	require.Greater(t, r.Utilization, 0.85)
	require.Less(t, rc.Utilization, 0.5*r.Utilization)
}

// TestBBRDeterministicAndValidated protects BBR's determinism per seed
// (its random ProbeBW phase comes from the run's stream) and the rule that
// BBR flows are Not-ECT.
func TestBBRDeterministicAndValidated(t *testing.T) {
	cfg := func(seed uint64) Config {
		return Config{RateBps: 20e6, Duration: 12 * time.Second, Seed: seed, StartJitter: 50 * time.Millisecond,
			Flows: []FlowSpec{{Kind: BBR, Count: 2, RTT: 30 * time.Millisecond}, {Kind: CUBIC, RTT: 30 * time.Millisecond}}}
	}
	a := resultJSON(t, mustRun(t, cfg(1), fifoQ(100)))
	require.Equal(t, a, resultJSON(t, mustRun(t, cfg(1), fifoQ(100))))
	require.NotEqual(t, a, resultJSON(t, mustRun(t, cfg(2), fifoQ(100))))
	bad := Config{RateBps: 1e6, Duration: time.Second, Flows: []FlowSpec{{Kind: BBR, ECN: true}}}
	require.ErrorContains(t, bad.normalize(), "Flows[0].ECN")
	k, err := ParseKind("bbr")
	require.NoError(t, err)
	require.Equal(t, BBR, k)
}

// TestBBRStartsBehindStandingQueue protects BBR's start behind a queue it
// did not build: a CUBIC flow keeps a 1000-packet FIFO (120 ms at
// 100 Mb/s) full, and a BBR flow that starts later must take its min_rtt
// from real samples, which include that queue; seeded with the base RTT it
// would believe the BDP tiny and crawl at about 1 Mb/s for 10 s.
func TestBBRStartsBehindStandingQueue(t *testing.T) {
	cfg := Config{RateBps: 100e6, Duration: 15 * time.Second, Warmup: 5 * time.Second,
		Flows: []FlowSpec{{Kind: CUBIC, RTT: bbrTestRTT, Group: "cross"}, {Kind: BBR, RTT: bbrTestRTT, Start: 5 * time.Second, Group: "test"}}}
	r := mustRun(t, cfg, fifoQ(1000))
	t.Logf("BBR %.1f Mb/s, CUBIC %.1f Mb/s", r.Group("test").GoodputMbps, r.Group("cross").GoodputMbps)
	require.Greater(t, r.Group("test").GoodputMbps, 20.0)
}

// aggState is a BBR state past Startup with BtlBw 1 packet per ms, for the
// scripted ACK-aggregation checks.
func aggState() *bbrState {
	return &bbrState{maxBw: 1000, fullBwReached: true, minRTT: 20 * time.Millisecond}
}

// TestBBRAckAggregationSmoothClock protects the estimator's zero point: ACKs
// that arrive at exactly BtlBw restart the epoch on every ACK, so the excess
// never exceeds one ACK's packets.
func TestBBRAckAggregationSmoothClock(t *testing.T) {
	b := aggState()
	for i := range 1000 { // 2 packets every 2 ms
		b.updateAckAggregation(aqm.Time(i+1)*aqm.Time(2*time.Millisecond), 2, 100)
	}
	require.Equal(t, 2.0, b.aggregationCwnd())
}

// TestBBRAckAggregationBurst protects the measured excess and Linux's caps:
// after a silence, a stretch ACK for 30 packets followed by ACKs at BtlBw
// raises the allowance by the 30 packets; the excess is capped at the window
// and the allowance at 100 ms at BtlBw; nothing is added before the pipe is
// full.
func TestBBRAckAggregationBurst(t *testing.T) {
	ms := aqm.Time(time.Millisecond)
	script := func(b *bbrState, burst int64, cwnd float64) {
		b.updateAckAggregation(ms, 1, cwnd)
		b.updateAckAggregation(31*ms, burst, cwnd) // 30 ms silent: the epoch restarts here
		for i := range 20 {
			b.updateAckAggregation(aqm.Time(32+i)*ms, 1, cwnd) // then at BtlBw
		}
	}
	b := aggState()
	script(b, 30, 1000)
	require.Equal(t, 30.0, b.aggregationCwnd(), "the burst's excess over BtlBw × elapsed")

	b = aggState()
	script(b, 30, 12.7)
	require.Equal(t, 12.0, b.aggregationCwnd(), "capped at the (whole-packet) window")

	b = aggState()
	script(b, 300, 1000)
	require.Equal(t, 100.0, b.aggregationCwnd(), "capped at 100 ms × BtlBw")

	b = aggState()
	b.fullBwReached = false
	script(b, 30, 1000)
	require.Zero(t, b.aggregationCwnd(), "no allowance before the pipe is full")
	b.fullBwReached = true
	require.Equal(t, 30.0, b.aggregationCwnd(), "but the excess is measured all along")
}

// TestBBRAckAggregationEpochAndWindow protects the epoch rule and the
// two-slot window: an epoch lasts while deliveries run ahead of BtlBw (a
// burst then a steady excess keeps adding up), restarts once they fall
// behind, and after 2^20 packets; a peak is forgotten after 5 to 10 rounds.
func TestBBRAckAggregationEpochAndWindow(t *testing.T) {
	ms := aqm.Time(time.Millisecond)
	b := aggState()
	b.updateAckAggregation(ms, 10, 1000)  // epoch starts: excess 10
	b.updateAckAggregation(2*ms, 2, 1000) // 12 acked, 1 expected: 11
	b.updateAckAggregation(3*ms, 2, 1000) // 14 acked, 2 expected: 12
	require.Equal(t, 12.0, b.aggregationCwnd())
	require.Equal(t, ms, b.ackEpochStart, "the epoch holds while ahead")
	b.updateAckAggregation(20*ms, 1, 1000) // 14 ≤ 19 expected: restart, excess 1
	require.Equal(t, 20*ms, b.ackEpochStart, "the epoch restarts once behind")
	require.EqualValues(t, 1, b.ackEpochAcked)

	b.ackEpochAcked = bbrAckEpochReset - 1
	b.updateAckAggregation(21*ms, 1, 1000)
	require.Equal(t, 21*ms, b.ackEpochStart, "an epoch of 2^20 packets restarts")

	// The window: the peak of 12 sits in slot 0; rounds 1–4 keep it, the
	// 5th switches to slot 1 (which keeps it too), the 10th clears slot 0.
	b = aggState()
	b.updateAckAggregation(ms, 12, 1000)
	now := ms
	round := func() {
		now += 20 * ms
		b.roundStart = true
		b.updateAckAggregation(now, 1, 1000) // behind BtlBw: a new epoch, excess 1
		b.roundStart = false
	}
	for range 9 {
		round()
		require.Equal(t, 12.0, b.aggregationCwnd(), "kept within 10 rounds")
	}
	round()
	require.Equal(t, 1.0, b.aggregationCwnd(), "forgotten after 10 rounds")
}

// TestBBRAckAggregationStretchAcks protects the allowance on a whole path:
// a receiver that ACKs every 16th segment makes the ACK clock bursty, and
// with the switch on the flow's window grows by about one stretch ACK
// beyond BBR's 2 BDP; with it off the estimator stays idle.
func TestBBRAckAggregationStretchAcks(t *testing.T) {
	run := func(on bool) (*Sim, *Result) {
		tcp := LinuxTCP()
		tcp.Profile, tcp.AckEvery, tcp.AckAggregation = "stretch", 16, on
		cfg := Config{RateBps: bbrTestRate, Duration: 20 * time.Second, Warmup: 5 * time.Second, TCP: tcp,
			Flows: []FlowSpec{{Kind: BBR, RTT: bbrTestRTT}}}
		s, err := New(cfg, fifoQ(bbrTestBuf))
		require.NoError(t, err)
		return s, s.Run()
	}
	sOn, rOn := run(true)
	sOff, rOff := run(false)
	bOn, bOff := sOn.flows[0].bbr, sOff.flows[0].bbr
	t.Logf("extra acked %v, cwnd %.0f vs %.0f, util %.3f vs %.3f", bOn.extraAcked, sOn.flows[0].cwnd,
		sOff.flows[0].cwnd, rOn.Utilization, rOff.Utilization)
	require.GreaterOrEqual(t, bOn.aggregationCwnd(), 14.0, "at least a stretch ACK's excess")
	require.LessOrEqual(t, bOn.aggregationCwnd(), 0.1*bbrTestRate/8/DefaultMSS)
	require.Equal(t, [2]float64{}, bOff.extraAcked, "the switch off measures nothing")
	require.GreaterOrEqual(t, sOn.flows[0].cwnd, sOff.flows[0].cwnd+12)
	require.Greater(t, rOn.Utilization, 0.97)
}
