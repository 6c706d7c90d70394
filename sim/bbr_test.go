package sim

import (
	"math"
	"slices"
	"testing"
	"time"

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
// expire together). With Linux's delayed ACKs the flows take turns: each
// one's probe drains the queue far enough to refresh the other's min_rtt,
// so each flow probes every 20 s and the pair every 10 s.
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
		if x-merged[len(merged)-1] > 2*bbrTestRTT {
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
