package codel

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// floorQ32 returns floor(2^32/sqrt(n)) = floor(sqrt(2^64/n)) with big
// integers, independent of the code under test.
func floorQ32(n uint32) uint64 {
	x := new(big.Int).Lsh(big.NewInt(1), 64)
	x.Div(x, big.NewInt(int64(n)))
	return x.Sqrt(x).Uint64()
}

// TestInvSqrtFastMatchesNewton protects the float64 shortcut in invSqrt: for
// every count and every starting estimate it must return exactly what the
// Newton iteration (invSqrtNewton) returns, and that must be
// floor(2^32/sqrt(n)) or one less (the bound lawStepCached relies on).
func TestInvSqrtFastMatchesNewton(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	seq := uint32(1 << 22) // counts 2..seq one by one, as the control law steps them
	random := 2_000_000
	if testing.Short() {
		seq, random = 1<<18, 200_000
	}
	slow := 0
	check := func(n, prev uint32) {
		got, want := invSqrt(n, prev), invSqrtNewton(n, prev)
		if got != want {
			t.Fatalf("count %d prev %d: fast %d, Newton %d", n, prev, got, want)
		}
	}
	prev := uint32(one)
	for n := uint32(2); n <= seq; n++ {
		want := invSqrtNewton(n, prev)
		check(n, prev) // the chained estimate of count n-1
		check(n, 0)    // a reseed
		if n&0xfff == 0 {
			f := floorQ32(n)
			require.Truef(t, uint64(want) == f || uint64(want)+1 == f, "count %d: %d vs floor %d", n, want, f)
		}
		r := 4294967296 / math.Sqrt(float64(n))
		if fr := r - math.Floor(r); fr <= 1.0/1024 || fr >= 1-1.0/1024 {
			slow++
		}
		prev = want
	}
	// Random counts over the whole range with chained, reseeded and stale
	// (random) starting values, and the ones near the extremes and near
	// powers of two and four (where 2^32/sqrt(n) is an integer).
	extremes := []uint32{2, 3, 4, 5, maxCount - 1, maxCount, maxCount + 1, math.MaxUint32}
	for k := uint(1); k < 32; k++ {
		for d := int64(-3); d <= 3; d++ {
			if v := int64(1)<<k + d; v >= 2 && v <= math.MaxUint32 {
				extremes = append(extremes, uint32(v))
			}
		}
	}
	for _, n := range extremes {
		check(n, 0)
		check(n, invSqrtNewton(n-1, 0))
		check(n, r.Uint32())
		f := floorQ32(n)
		if n <= maxCount {
			got := uint64(invSqrt(n, 0))
			require.Truef(t, got == f || got+1 == f, "count %d: %d vs floor %d", n, got, f)
		}
	}
	for range random {
		n := uint32(2 + r.Uint64N(maxCount-1))
		check(n, 0)
		check(n, invSqrtNewton(n-1, 0))
		check(n, r.Uint32())
	}
	t.Logf("counts 2..%d: %d (%.2f%%) take the Newton iteration", seq, slow, 100*float64(slow)/float64(seq))
}

// TestLawStepCachedExact protects the control law's shortcut: with the
// cached estimate invSqrt(n) it must equal floor(interval/sqrt(n)) (at least
// 1) exactly, as lawStep computes it, for intervals from 2 ns to
// maxInterval and every count range.
func TestLawStepCachedExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	random := 3_000_000
	if testing.Short() {
		random = 300_000
	}
	check := func(iv int64, n uint32) {
		y := invSqrt(n, 0)
		if got, want := lawStepCached(iv, n, y), lawStep(iv, n, y); got != want {
			t.Fatalf("interval %d count %d: cached %d, exact %d", iv, n, got, want)
		}
	}
	for n := uint32(1); n <= 1<<20; n++ {
		check(int64(defaultInterval), n)
	}
	ivs := []int64{2, 3, 1000, int64(time.Millisecond), int64(defaultInterval), 1<<31 - 1, 1 << 31, 1<<31 + 1, 1 << 32, int64(maxInterval) - 1, int64(maxInterval)}
	ns := []uint32{1, 2, 3, 4, 1 << 20, maxCount - 1, maxCount}
	for _, iv := range ivs {
		for _, n := range ns {
			check(iv, n)
		}
		for range 10000 {
			check(iv, uint32(1+r.Uint64N(maxCount)))
		}
	}
	for range random {
		iv := 2 + r.Int64N(int64(maxInterval)-1)
		switch r.IntN(4) {
		case 0:
			iv = 2 + r.Int64N(1000)
		case 1:
			iv = 2 + r.Int64N(int64(10*time.Second))
		}
		n := uint32(1 + r.Uint64N(maxCount))
		if r.IntN(2) == 0 {
			n = uint32(1 + r.Uint64N(100000))
		}
		check(iv, n)
	}
}
