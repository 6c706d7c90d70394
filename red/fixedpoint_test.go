package red

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// probQ32 returns the Q0.32 probability the queue computes for average a
// (white-box: the same function signal uses).
func probQ32(q *Queue[int], a float64) uint64 { return q.prob(a) }

// exactQ32 is p·2^32 in exact rational arithmetic from the float64 inputs.
func exactQ32(maxP, minTh, maxTh, a float64, gentle bool) *big.Rat {
	r := func(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }
	var p *big.Rat
	if a < maxTh || !gentle {
		num := new(big.Rat).Mul(r(maxP), new(big.Rat).Sub(r(a), r(minTh)))
		p = num.Quo(num, new(big.Rat).Sub(r(maxTh), r(minTh)))
	} else {
		// max_p + (1−max_p)(a−max_th)/max_th
		t := new(big.Rat).Mul(new(big.Rat).Sub(big.NewRat(1, 1), r(maxP)), new(big.Rat).Sub(r(a), r(maxTh)))
		t.Quo(t, r(maxTh))
		p = t.Add(t, r(maxP))
	}
	return p.Mul(p, new(big.Rat).SetInt64(1<<32))
}

// TestFixedPointErrorBound protects the documented bound on the Q0.32
// probability: for random configurations and averages, the computed p_b·2^32
// lies in (exact − 1 − 2^−18, exact + 2^−18], where exact is computed in
// rational arithmetic from the same float64 inputs.
func TestFixedPointErrorBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 10000
	if testing.Short() {
		n = 2000
	}
	lo := new(big.Rat).SetFloat64(-1 - 0x1p-18)
	hi := new(big.Rat).SetFloat64(0x1p-18)
	worst := 0.0
	for i := range n {
		byteMode := r.IntN(2) == 0
		minTh := 1 + r.IntN(1000)
		if byteMode {
			minTh = 1 + r.IntN(1<<30)
		}
		maxTh := minTh + 1 + r.IntN(4*minTh)
		maxP := []float64{1, 0.5, 0.02, 0.01, r.Float64()*0.999 + 0.001}[r.IntN(5)]
		gentle := r.IntN(2) == 0
		q, err := New[int](Config{LimitPackets: 5000, LimitBytes: 1 << 40, MinThreshold: minTh, MaxThreshold: maxTh, MaxP: maxP, Gentle: gentle, ByteMode: byteMode}, nil)
		require.NoError(t, err)
		top := float64(maxTh)
		if gentle {
			top = 2 * float64(maxTh)
		}
		a := float64(minTh) + r.Float64()*(top-float64(minTh))
		if i%7 == 0 { // exact thresholds too
			a = []float64{float64(minTh), float64(maxTh), math.Nextafter(top, 0)}[r.IntN(3)]
		}
		if !gentle && a >= float64(maxTh) {
			continue // forced region, not a probability
		}
		got := probQ32(q, a)
		ex := exactQ32(maxP, float64(minTh), float64(maxTh), a, gentle)
		diff := new(big.Rat).Sub(new(big.Rat).SetInt64(int64(got)), ex)
		require.Truef(t, diff.Cmp(lo) > 0 && diff.Cmp(hi) <= 0,
			"case %d: got %d exact %s (min %d max %d maxP %v gentle %v a %v)", i, got, ex.FloatString(6), minTh, maxTh, maxP, gentle, a)
		d, _ := diff.Float64()
		worst = math.Max(worst, math.Abs(d))
	}
	t.Logf("worst |error| = %.6f Q0.32 units (bound 1 + 2^-18)", worst)
}
