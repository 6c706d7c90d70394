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
	n := 400_000
	if testing.Short() {
		n = 100_000
	}
	cases := []struct {
		name  string
		cfg   Config
		level int     // packets held in the queue
		pb    float64 // p_b at that level, derived from the formulas in doc.go
		size  uint32
	}{
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
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Weight = 1
			c.DisableECN = true
			c.LimitPackets = 10_000
			c.LimitBytes = 1 << 30
			c.Seed = 42
			q, err := New[int](c, nil)
			require.NoError(t, err)
			now := aqm.Time(time.Second)
			arrive := func() aqm.Verdict {
				now += aqm.Time(time.Microsecond)
				v := q.Enqueue(aqm.Packet[int]{Size: tc.size}, now)
				for q.Len() > tc.level {
					q.Dequeue(now)
				}
				return v
			}
			for q.Len() < tc.level {
				arrive()
			}
			mean, variance := gapMoments(tc.pb)
			k := int(math.Floor(1 / tc.pb))
			drops, gap, maxGap := 0, 0, 0
			for range n {
				v := arrive()
				require.NotEqual(t, aqm.DroppedOverlimit, v)
				gap++
				if v == aqm.DroppedEarly {
					drops++
					if drops > 1 { // the first gap starts mid-way
						maxGap = max(maxGap, gap)
					}
					gap = 0
				}
			}
			rate := float64(drops) / float64(n)
			want := 1 / mean
			// Renewal CLT: Var[drops] ≈ n·Var[X]/E[X]^3.
			sd := math.Sqrt(float64(n)*variance/(mean*mean*mean)) / float64(n)
			t.Logf("rate %.5f, intended %.5f (2p/(1+p) = %.5f, p_b = %.3f), sd %.5f, max gap %d (K+1 = %d)",
				rate, want, 2*tc.pb/(1+tc.pb), tc.pb, sd, maxGap, k+1)
			require.InDelta(t, want, rate, 5*sd+1e-4)
			require.LessOrEqual(t, maxGap, k+1)
			scale := 1.0 // Detail.Prob is p_b before the byte-mode scaling
			if c.ByteMode {
				scale = float64(tc.size) / float64(q.Config().MeanPacketBytes)
			}
			require.InDelta(t, tc.pb, q.Detail().Prob*scale, 1e-6, "p_b at the held level")
		})
	}
}
