package codel

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// exactInvSqrtQ32 returns 2^32/sqrt(n) as a float64 (exact enough: 53 bits).
func exactInvSqrtQ32(n uint32) float64 { return 4294967296 / math.Sqrt(float64(n)) }

// TestInvSqrtSequentialError protects the cached Newton inverse square root
// against drifting from math.Sqrt as count rises one by one, the way the
// control law updates it: the error must stay within 2 units of 2^-32.
func TestInvSqrtSequentialError(t *testing.T) {
	n := uint32(1 << 20)
	if testing.Short() {
		n = 1 << 16
	}
	var c Controller
	c.setCount(1)
	worst := 0.0
	for k := uint32(2); k <= n; k++ {
		c.setCount(k)
		want := min(exactInvSqrtQ32(k), one)
		err := math.Abs(float64(c.invSqrt) - want)
		worst = max(worst, err)
		if err > 2 {
			t.Fatalf("count %d: got %d want %.1f", k, c.invSqrt, want)
		}
	}
	t.Logf("worst error over counts 1..%d: %.2f units of 2^-32", n, worst)
}

// TestInvSqrtJumps protects the reseeding path: any jump in count (re-entry
// to delta, overload count bumps, saturation) gives the same accuracy as a
// step of one.
func TestInvSqrtJumps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var c Controller
	for i := range 20000 {
		n := uint32(1 + r.Uint64N(maxCount))
		if i%2 == 0 {
			n = uint32(1 + r.Uint64N(1000))
		}
		c.count = 0
		c.setCount(n)
		require.LessOrEqualf(t, math.Abs(float64(c.invSqrt)-min(exactInvSqrtQ32(n), one)), 2.0, "count %d", n)
		// A stale estimate from a much smaller or larger count must not
		// poison the result either.
		c.invSqrt = uint32(r.Uint32())
		c.count = n - 1
		c.setCount(n)
		require.LessOrEqualf(t, math.Abs(float64(c.invSqrt)-min(exactInvSqrtQ32(n), one)), 2.0, "count %d from a stale value", n)
	}
}

// TestLawStepExact protects the control law's spacing: it must equal
// floor(interval/sqrt(count)) exactly (checked with big integers), never 0.
func TestLawStepExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	check := func(iv int64, n uint32) {
		var c Controller
		c.setCount(n)
		s := lawStep(iv, n, c.invSqrt)
		// floor(iv/sqrt(n)) is the largest s with s^2*n <= iv^2.
		want := new(big.Int).Sqrt(new(big.Int).Div(new(big.Int).Mul(big.NewInt(iv), big.NewInt(iv)), big.NewInt(int64(n))))
		w := max(want.Int64(), 1)
		require.Equalf(t, w, s, "interval %d count %d", iv, n)
	}
	for n := uint32(1); n <= 2000; n++ {
		check(int64(defaultInterval), n)
	}
	for range 20000 {
		iv := 2 + r.Int64N(int64(maxInterval)-1)
		if r.IntN(4) == 0 {
			iv = 2 + r.Int64N(1000)
		}
		check(iv, uint32(1+r.Uint64N(maxCount)))
	}
	check(int64(maxInterval), maxCount)
	check(2, maxCount)
}

// TestLinuxNewtonHazard documents (and so protects the fix for) the fault
// that AddCount avoids: a single Linux-style Q0.16 Newton step from the
// value cached for count 1 at count 3 (after a bump of 1 and one increment)
// collapses to 2/65536, a spacing of about 3 us; our update stays exact.
func TestLinuxNewtonHazard(t *testing.T) {
	linuxStep := func(rec uint16, count uint32) uint16 { // Linux arithmetic, our own transcription of the formula
		y := uint64(rec) << 16
		y2 := (y * y) >> 32
		v := (uint64(3) << 32) - uint64(count)*y2
		v >>= 2
		v = (v * y) >> (32 - 2 + 1)
		return uint16(v >> 16)
	}
	require.Equal(t, uint16(2), linuxStep(0xFFFF, 3), "the Linux model collapses")
	var c Controller
	c.setCount(1)
	c.AddCount(1)
	c.setCount(c.count + 1)
	require.Equal(t, uint32(3), c.count)
	require.InDelta(t, exactInvSqrtQ32(3), float64(c.invSqrt), 2)
}
