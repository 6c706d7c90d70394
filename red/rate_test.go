package red

import (
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// gapMoments returns E[X] and Var[X] for RED's inter-signal gap X with a
// constant p (Floyd and Jacobson 1993, §7): with R uniform in (0, 1] and
// the signal at the first count with count·p ≥ R, P(X ≤ n) = min(1, n·p),
// so P(X = n) = p for 1 ≤ n ≤ K = ⌊1/p⌋ and P(X = K+1) = 1 − K·p.
// E[X] = Σ_{n=0..K} (1 − n·p) = (K+1)(1 − K·p/2); when 1/p is an integer
// this is (1/p + 1)/2 and the signal rate 1/E[X] is 2p/(1+p).
func gapMoments(p float64) (mean, variance float64) {
	k := math.Floor(1 / p)
	mean = (k + 1) * (1 - k*p/2)
	var m2 float64
	for n := 1.0; n <= k; n++ {
		m2 += p * n * n
	}
	m2 += (1 - k*p) * (k + 1) * (k + 1)
	return mean, m2 - mean*mean
}

// TestGapMomentsFormula protects the closed form used below against the
// textbook case: for 1/p integer the rate is 2p/(1+p).
func TestGapMomentsFormula(t *testing.T) {
	for _, p := range []float64{0.5, 0.25, 0.1, 0.02, 0.01} {
		mean, _ := gapMoments(p)
		require.InDelta(t, 2*p/(1+p), 1/mean, 1e-12, "p=%v", p)
	}
}

// TestLongRunEarlyDropRate protects RED's intended drop rate: with the
// queue (and, with w_q = 1, the average) held at a fixed level between the
// thresholds by a long-lived overload, the fraction of arrivals dropped
// early converges to 1/E[X] from gapMoments, i.e. 2p_b/(1+p_b) when 1/p_b is
// an integer. This tells the paper's uniformization apart from ns's Wait
// option (≈ 2p_b/3) and DPDK's formula (≈ p_b). No gap ever exceeds K+1.
func TestLongRunEarlyDropRate(t *testing.T) {
	for _, tc := range rateCases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Seed = 42
			r := measureGaps(t, tc, c)
			// Detail.Prob is p_b before the byte-mode scaling; measureGaps
			// scales it, and it must be the p_b the case derives.
			require.InDelta(t, tc.pb, r.p, 1e-6, "p_b at the held level")
			mean, variance := gapMoments(tc.pb)
			k := int(math.Floor(1 / tc.pb))
			rate, want := float64(r.drops)/float64(r.n), 1/mean
			// Renewal CLT: Var[drops] ≈ n·Var[X]/E[X]^3.
			sd := math.Sqrt(float64(r.n)*variance/(mean*mean*mean)) / float64(r.n)
			t.Logf("rate %.5f, intended %.5f (2p/(1+p) = %.5f, p_b = %.3f), sd %.5f, max gap %d (K+1 = %d)",
				rate, want, 2*tc.pb/(1+tc.pb), tc.pb, sd, r.maxGap, k+1)
			require.InDelta(t, want, rate, 5*sd+1e-4)
			require.LessOrEqual(t, r.maxGap, k+1)
		})
	}
}

// rateCase is a RED configuration held at a fixed level between its
// thresholds, for the long-run rate tests.
type rateCase struct {
	name  string
	cfg   Config
	level int     // packets held in the queue
	pb    float64 // p_b at that level, derived from the formulas in doc.go, times Size/Mean in byte mode
	size  uint32
}

var rateCases = []rateCase{
	// p_b = max_p·(L−min)/(max−min) = 0.02·50/100.
	{"pb=0.01", Config{MinThreshold: 10, MaxThreshold: 110, MaxP: 0.02}, 60, 0.01, 1000},
	// 0.06·50/100 = 0.03: 1/p_b = 33.3 is not an integer.
	{"pb=0.03", Config{MinThreshold: 10, MaxThreshold: 110, MaxP: 0.06}, 60, 0.03, 1000},
	// 0.4·25/100 = 0.1.
	{"pb=0.1", Config{MinThreshold: 10, MaxThreshold: 110, MaxP: 0.4}, 35, 0.1, 1000},
	// Gentle: max_p + (1−max_p)(L−max)/max = 0.02 + 0.98·55/110 = 0.51.
	{"gentle pb=0.51", Config{MinThreshold: 10, MaxThreshold: 110, MaxP: 0.02, Gentle: true}, 165, 0.51, 1000},
	// Byte mode with Size = MeanPacketBytes: thresholds in bytes, same p_b.
	{"bytes pb=0.01", Config{MinThreshold: 10_000, MaxThreshold: 110_000, MaxP: 0.02, ByteMode: true}, 60, 0.01, 1000},
	// Byte mode, Size = Mean/2: the level is 35·500 = 17500 bytes, so
	// p_b = 0.4·(17500−10000)/100000 = 0.03, scaled by 500/1000 to 0.015.
	{"bytes half-size pb=0.015", Config{MinThreshold: 10_000, MaxThreshold: 110_000, MaxP: 0.4, ByteMode: true}, 35, 0.015, 500},
}

// gapResult is what measureGaps saw over n arrivals at the held level.
type gapResult struct {
	n, drops       int
	minGap, maxGap int     // between early drops; the first gap is left out (it starts mid-way)
	p              float64 // p_b at the level, scaled by Size/Mean in byte mode
}

// measureGaps builds a queue from c (w_q = 1, no ECN, limits far away),
// fills it to tc.level with one more arrival at that level, reads p, then
// counts early drops over 400,000 arrivals (100,000 with -short) while
// dequeuing back to the level after each.
func measureGaps(t *testing.T, tc rateCase, c Config) gapResult {
	t.Helper()
	r := gapResult{n: 400_000, minGap: math.MaxInt}
	if testing.Short() {
		r.n = 100_000
	}
	c.Weight, c.DisableECN = 1, true
	c.LimitPackets, c.LimitBytes = 10_000, 1<<30
	q, err := New[int](c, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	arrive := func() aqm.Verdict {
		now += aqm.Time(time.Microsecond)
		v := q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: tc.size}}, now)
		for q.Len() > tc.level {
			q.Dequeue(now)
		}
		return v
	}
	for q.Len() < tc.level {
		arrive()
	}
	arrive() // the first arrival that finds the level
	r.p = q.Detail().Prob
	if c.ByteMode {
		r.p *= float64(tc.size) / float64(q.Config().MeanPacketBytes)
	}
	gap := 0
	for range r.n {
		v := arrive()
		require.NotEqual(t, aqm.DroppedOverlimit, v)
		gap++
		if v == aqm.DroppedEarly {
			r.drops++
			if r.drops > 1 {
				r.minGap, r.maxGap = min(r.minGap, gap), max(r.maxGap, gap)
			}
			gap = 0
		}
	}
	return r
}
