package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestPragueAdditiveIncrease protects Prague's RTT-independent additive
// increase: once past slow start and the transition rounds, a flow whose
// srtt R is below 25 ms adds (R/25 ms)² segments per own RTT, so its rate
// grows as a 25 ms flow's would; above 25 ms, during the transition, or with
// the switch off it adds one segment per RTT.
func TestPragueAdditiveIncrease(t *testing.T) {
	for _, tc := range []struct {
		srtt     time.Duration
		rounds   int
		off      bool
		perRTTAI float64
	}{
		{10 * time.Millisecond, 4, false, 0.16},
		{5 * time.Millisecond, 9, false, 0.04},
		{10 * time.Millisecond, 4, true, 1},
		{10 * time.Millisecond, 3, false, 1},
		{50 * time.Millisecond, 4, false, 1},
		{150 * time.Millisecond, 4, false, 1}, // above 100 ms RTT independence is off
	} {
		s := &Sim{cfg: Config{TCP: LinuxTCP()}}
		f := newFlow(0, FlowSpec{Kind: Prague, PragueNoRTTIndependence: tc.off}, false, DefaultMSS, &s.cfg.TCP)
		f.srtt, f.caRounds, f.cwnd, f.ssthresh = tc.srtt, tc.rounds, 100, 50
		s.grow(f, 1)
		// One ACK of one segment adds ai/cwnd: ai per cwnd's worth of ACKs.
		require.InDelta(t, 100+tc.perRTTAI/100, f.cwnd, 1e-12, "%+v", tc)
	}
}

// TestPragueVirtualRTT protects the virtual RTT: with RTT independence a
// 5 ms flow under steady marking reduces its window and updates α at most
// once per 25 ms; without it, about once per own RTT.
func TestPragueVirtualRTT(t *testing.T) {
	run := func(off bool) FlowResult {
		cfg := Config{RateBps: 100e6, Duration: 12 * time.Second, Warmup: 2 * time.Second, MarkProb: 0.02, Seed: 1,
			Flows: []FlowSpec{{Kind: Prague, RTT: 5 * time.Millisecond, PragueNoRTTIndependence: off}}}
		return mustRun(t, cfg, fifoQ(10000)).Flows[0]
	}
	on, off := run(false), run(true)
	t.Logf("reductions over 10 s: RTT-independent %d, per own RTT %d", on.Reductions, off.Reductions)
	require.LessOrEqual(t, on.Reductions, uint64(10*time.Second/pragueR0)+1)
	// Delayed ACKs carry the CE marks of two segments, so the first echo
	// after a virtual RTT comes a little later than with an ACK per segment.
	require.Greater(t, on.Reductions, uint64(250), "marks every virtual RTT keep it reducing")
	require.Greater(t, off.Reductions, on.Reductions*3/2)
}

// TestHyStartPlusPlus protects CUBIC's HyStart++ (RFC 9406): in a deep
// drop-tail buffer, plain slow start doubles until it overflows the buffer
// within the first 1.5 s, while HyStart++ sees the per-round minimum RTT
// rise, moves to conservative slow start (which may still triple the
// window over its 5 rounds) and then to congestion avoidance with no loss.
func TestHyStartPlusPlus(t *testing.T) {
	run := func(hs bool) *Result {
		tcp := LinuxTCP()
		tcp.Profile, tcp.HyStart = "linux-without-hystart", false
		cfg := Config{RateBps: 50e6, Duration: 1500 * time.Millisecond, QueueSampleInterval: time.Millisecond, TCP: tcp,
			Flows: []FlowSpec{{Kind: CUBIC, RTT: 20 * time.Millisecond, HyStart: hs}}}
		return mustRun(t, cfg, fifoQ(840)) // 10 BDP
	}
	plain, hs := run(false), run(true)
	t.Logf("plain: drops %d, max queue %d; HyStart++: drops %d, max queue %d, util %.3f",
		plain.DropsWholeRun, plain.QueueGrid.MaxPackets, hs.DropsWholeRun, hs.QueueGrid.MaxPackets, hs.Utilization)
	require.NotZero(t, plain.DropsWholeRun)
	require.Zero(t, hs.DropsWholeRun)
	require.Greater(t, plain.DropsWholeRun, uint64(100), "plain slow start overshoots by a round's worth")
	require.Less(t, hs.QueueGrid.MaxPackets, 840, "HyStart++ never fills the buffer")
	require.Greater(t, hs.Utilization, 0.8, "it still fills the link")
}

// TestHyStartStates protects HyStart++'s transitions on a scripted RTT
// trace: a rise of at least clamp(min/8, 4 ms, 16 ms) after 8 samples
// enters conservative slow start, a fall below its baseline returns to slow
// start, and five rounds in it end slow start.
func TestHyStartStates(t *testing.T) {
	s := &Sim{cfg: Config{TCP: LinuxTCP()}}
	f := newFlow(0, FlowSpec{Kind: CUBIC, HyStart: true}, false, DefaultMSS, &s.cfg.TCP)
	round := func(rtt time.Duration) {
		f.highSent += 20
		f.sndUna = f.hsRoundEnd
		s.grow(f, 1) // opens the round
		for range hsMinSamples {
			f.hystartSample(rtt)
		}
	}
	round(20 * time.Millisecond)
	round(23 * time.Millisecond) // +3 ms < 4 ms: still slow start
	require.False(t, f.hsCSS)
	round(28 * time.Millisecond) // +5 ms ≥ 4 ms
	require.True(t, f.hsCSS)
	w := f.cwnd
	s.grow(f, 4)
	require.InDelta(t, w+1, f.cwnd, 1e-12, "CSS grows by acked/4")
	round(20 * time.Millisecond) // below the 28 ms baseline: spurious
	require.False(t, f.hsCSS)
	round(25 * time.Millisecond) // +5 ms: CSS again
	require.True(t, f.hsCSS)
	for range hsCSSRounds {
		round(25 * time.Millisecond)
	}
	require.False(t, f.hsCSS)
	require.Equal(t, f.cwnd, f.ssthresh, "congestion avoidance after 5 CSS rounds")
}

// TestPragueBalanceAtShortRTT protects the reason for RTT independence:
// at 10 ms under DualPI2, one Prague and one CUBIC flow share the link
// roughly equally with it (as the DualQ paper reports), and Prague takes
// about twice CUBIC's rate without it.
func TestPragueBalanceAtShortRTT(t *testing.T) {
	a, err := LookupAQM("dualpi2")
	require.NoError(t, err)
	ratio := func(off bool) float64 {
		cfg := Config{RateBps: 40e6, Duration: 30 * time.Second, Warmup: 10 * time.Second, Seed: 1, StartJitter: 100 * time.Millisecond,
			Flows: []FlowSpec{{Kind: Prague, RTT: 10 * time.Millisecond, PragueNoRTTIndependence: off},
				{Kind: CUBIC, RTT: 10 * time.Millisecond, HyStart: true}}}
		r := mustRun(t, cfg, func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			return a.New(Env{RateBps: cfg.RateBps, MSS: DefaultMSS, MaxRTT: cfg.MaxRTT(), BufferPackets: 1000, Seed: 1, OnDrop: d})
		})
		return r.L4SClassicRatio
	}
	on, off := ratio(false), ratio(true)
	t.Logf("L4S:Classic at 10 ms: %.2f with RTT independence, %.2f without", on, off)
	require.InDelta(t, 1, on, 0.35)
	require.Greater(t, off, 1.5)
}
