package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
)

func fifoQ(limit int) func(aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
	return func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return fifo.New(fifo.Config{LimitPackets: limit}, d)
	}
}

func mustRun(t testing.TB, cfg Config, q func(aqm.DropFunc[uint64]) (aqm.Queue[uint64], error)) *Result {
	t.Helper()
	s, err := New(cfg, q)
	require.NoError(t, err)
	return s.Run()
}

// TestRenoFillsBDPBuffer protects the basic dynamics of the dumbbell and
// of Reno: with a drop-tail buffer of one bandwidth-delay product, Reno's
// halved window still covers the pipe, so a lone flow keeps the link busy
// (Villamizar and Song 1994's buffer rule).
func TestRenoFillsBDPBuffer(t *testing.T) {
	for _, rtt := range []time.Duration{20 * time.Millisecond, 80 * time.Millisecond} {
		const rate = 10e6
		bdp := int(math.Ceil(rate * rtt.Seconds() / 8 / DefaultMSS))
		r := mustRun(t, Config{RateBps: rate, Duration: 40 * time.Second, Warmup: 10 * time.Second,
			Flows: []FlowSpec{{Kind: Reno, RTT: rtt}}}, fifoQ(bdp))
		t.Logf("rtt %v, buffer %d packets: utilization %.4f, drops %d, avg queue %.1f", rtt, bdp, r.Utilization, r.Drops, r.AvgQueuePackets)
		require.Greater(t, r.Utilization, 0.97, "rtt %v", rtt)
		require.LessOrEqual(t, r.Utilization, 1.0+1e-9)
		require.NotZero(t, r.Drops, "the flow must probe into the buffer and lose")
		require.Zero(t, r.Flows[0].Timeouts, "single losses are repaired by fast retransmit")
	}
}

// TestRenoMathis protects Reno's loss response: under random loss p its
// rate follows the Mathis et al. (1997) model 1.22·MSS/(RTT·√p) within 20%.
func TestRenoMathis(t *testing.T) {
	const rtt = 100 * time.Millisecond
	dur := 400 * time.Second
	if testing.Short() {
		dur = 150 * time.Second
	}
	for _, p := range []float64{0.0005, 0.002, 0.005} {
		r := mustRun(t, Config{RateBps: 1e9, Duration: dur, Warmup: 10 * time.Second, LossProb: p, Seed: 7,
			Flows: []FlowSpec{{Kind: Reno, RTT: rtt}}}, fifoQ(100000))
		got := r.GoodputMbps * 1e6
		// The path RTT is the base RTT plus one packet's serialisation.
		pathRTT := rtt.Seconds() + DefaultMSS*8/1e9
		want := 1.22 * DefaultMSS * 8 / (pathRTT * math.Sqrt(p))
		t.Logf("p=%g: %.3f Mb/s, Mathis %.3f Mb/s (ratio %.3f), timeouts %d", p, got/1e6, want/1e6, got/want, r.Flows[0].Timeouts)
		require.InEpsilon(t, want, got, 0.20, "p=%g", p)
	}
}

// TestScalableRateInverseP protects the scalable (L4S) sender's response:
// under random CE marking with probability p its window is proportional to
// 1/p (RFC 9331 §1.2), unlike Reno's 1/√p. Doubling p must halve the rate:
// W·p is the same for every p within 20%. The constant is derived here:
// DCTCP's W = 2/p assumes a reduction every RTT; ours (as Linux's) reduces
// once per RTT and then only at the first mark after that RTT, which comes
// on average RTT/(W·p) later. A cycle thus lasts RTT·(1 + 1/(Wp)) and the
// window grows 1 + 1/(Wp) packets in it, against a decrease of W·α/2 with
// α ≈ p. Balancing, with x = W·p: x/2 = 1 + 1/x, so x = 1 + √3 ≈ 2.73. The
// window must be within 15% of (1+√3)/p.
func TestScalableRateInverseP(t *testing.T) {
	const rtt = 50 * time.Millisecond
	// A 500-packet window takes ~25 s to settle at +1 packet per 50 ms
	// RTT after slow start: warm up 30 s.
	const dur = 150 * time.Second
	var prods []float64
	for _, p := range []float64{0.005, 0.01, 0.02, 0.04} {
		r := mustRun(t, Config{RateBps: 1e9, Duration: dur, Warmup: 30 * time.Second, MarkProb: p, Seed: 3,
			Flows: []FlowSpec{{Kind: Prague, RTT: rtt}}}, fifoQ(100000))
		pathRTT := rtt.Seconds() + DefaultMSS*8/1e9
		w := r.GoodputMbps * 1e6 / 8 / DefaultMSS * pathRTT // packets per RTT
		t.Logf("p=%g: %.2f Mb/s, window %.1f packets, W·p = %.3f, drops %d", p, r.GoodputMbps, w, w*p, r.Drops)
		require.Zero(t, r.Drops)
		require.InEpsilon(t, 1+math.Sqrt(3), w*p, 0.15, "p=%g", p)
		prods = append(prods, w*p)
	}
	lo, hi := prods[0], prods[0]
	for _, x := range prods {
		lo, hi = min(lo, x), max(hi, x)
	}
	require.Less(t, hi/lo, 1.2, "rate·p must not depend on p")
}

// dropOnce is a FIFO that refuses exactly one arrival: the first at or after
// time at.
type dropOnce struct {
	*fifo.Queue[uint64]
	at      aqm.Time
	dropped bool
}

func (q *dropOnce) Enqueue(p aqm.Packet[uint64], now aqm.Time) aqm.Verdict {
	if !q.dropped && now >= q.at {
		q.dropped = true
		return aqm.DroppedOverlimit
	}
	return q.Queue.Enqueue(p, now)
}

// TestCubicWindowCurve protects CUBIC's growth function: after a single
// loss at window W_max the window follows RFC 9438's
// W(t) = C(t−K)³ + W_max with C = 0.4 and K = ∛(W_max(1−β)/C), β = 0.7,
// through the concave and the convex region. The path is never the
// bottleneck (1 Gb/s, window below the BDP), so nothing else shapes cwnd.
// cwnd aims at W(t+RTT) and closes the gap within about an RTT, so each
// sample must lie between W(t−RTT) and W(t+RTT), give or take 3 packets.
func TestCubicWindowCurve(t *testing.T) {
	const rtt = 100 * time.Millisecond
	type sample struct {
		t    time.Duration
		cwnd float64
	}
	var trace []sample
	cfg := Config{RateBps: 1e9, Duration: 25 * time.Second, Flows: []FlowSpec{{Kind: CUBIC, RTT: rtt}},
		Trace: func(now time.Duration, _ int, cwnd float64) { trace = append(trace, sample{now, cwnd}) }}
	var sm *Sim
	sm, err := New(cfg, func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		f, err := fifo.New(fifo.Config{LimitPackets: 100000}, d)
		return &dropOnce{Queue: f, at: epoch.Add(800 * time.Millisecond)}, err
	})
	require.NoError(t, err)
	r := sm.Run()
	f := sm.flows[0]
	require.EqualValues(t, 1, r.Flows[0].Reductions, "exactly one congestion event")
	require.EqualValues(t, 1, f.retx)

	// W_max is the window when the loss was detected: the largest trace
	// value before the first decrease.
	i := 1
	for i < len(trace) && trace[i].cwnd >= trace[i-1].cwnd {
		i++
	}
	require.Less(t, i, len(trace))
	wmax := trace[i-1].cwnd
	// PRR brings cwnd down to β·W_max over the recovery; the epoch starts
	// with the first ACK after recovery, when cwnd is back at exactly
	// β·W_max (RFC 9438 §4.2).
	j := i
	for j < len(trace) && trace[j].cwnd > cubicBetaTest*wmax+1e-9 {
		j++
	}
	for j < len(trace) && trace[j].cwnd <= cubicBetaTest*wmax+1e-9 {
		j++
	}
	require.Less(t, j, len(trace))
	t0 := trace[j-1].t
	require.InDelta(t, cubicBetaTest*wmax, trace[j-1].cwnd, 1e-6)
	k := math.Cbrt(wmax * (1 - cubicBetaTest) / 0.4)
	w := func(d time.Duration) float64 { x := d.Seconds() - k; return 0.4*x*x*x + wmax }
	t.Logf("W_max %.0f, K %.2fs, epoch at %v", wmax, k, t0)
	checked := 0
	for _, s := range trace[j:] {
		d := s.t - t0
		if d < time.Second || d.Seconds() > k+4 {
			continue
		}
		lo, hi := w(d-rtt)-3, w(d+rtt)+3
		require.True(t, s.cwnd >= lo && s.cwnd <= hi, "t-t0=%v: cwnd %.1f outside [%.1f, %.1f]", d, s.cwnd, lo, hi)
		checked++
	}
	require.Greater(t, checked, 1000)
	// And it really went through both regions: far below W_max early, far
	// above it at the end.
	last := trace[len(trace)-1]
	require.Greater(t, last.cwnd, wmax*1.1)
}

// cubicBetaTest is RFC 9438's β_cubic, restated so the test does not read
// the implementation's constant.
const cubicBetaTest = 0.7
