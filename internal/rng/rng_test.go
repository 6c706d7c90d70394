package rng

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSeedDeterminism protects reproducibility: the same seed gives the same
// stream, different seeds differ, and Seed restarts a stream.
func TestSeedDeterminism(t *testing.T) {
	a, b, c := New(7), New(7), New(8)
	first := a.Uint64()
	require.Equal(t, first, b.Uint64())
	require.NotEqual(t, first, c.Uint64())
	a.Seed(7)
	require.Equal(t, first, a.Uint64())
}

// TestUniformity protects the decision quality: Uint32 and Float64 means are
// those of a uniform distribution (within 5 standard errors).
func TestUniformity(t *testing.T) {
	s := New(1)
	const n = 200000
	var sum32, sumF float64
	for range n {
		sum32 += float64(s.Uint32()) / (1 << 32)
		f := s.Float64()
		require.True(t, f >= 0 && f < 1)
		sumF += f
	}
	se := math.Sqrt(1.0/12/n) * 5
	require.InDelta(t, 0.5, sum32/n, se)
	require.InDelta(t, 0.5, sumF/n, se)
}

// TestNoAllocs protects the hot path: drawing never allocates.
func TestNoAllocs(t *testing.T) {
	s := New(3)
	require.Zero(t, testing.AllocsPerRun(1000, func() { s.Uint32(); s.Uint64(); s.Float64() }))
}

// TestSeedOrRandom protects the default-seed rule: a given seed is kept,
// and zero draws distinct non-zero secrets.
func TestSeedOrRandom(t *testing.T) {
	if SeedOrRandom(42) != 42 {
		t.Fatal("a non-zero seed must be kept")
	}
	seen := map[uint64]bool{}
	for range 64 {
		v := SeedOrRandom(0)
		if v == 0 || seen[v] {
			t.Fatalf("drawn seed %d is zero or repeated", v)
		}
		seen[v] = true
	}
}
