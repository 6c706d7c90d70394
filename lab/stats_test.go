package lab

import (
	"math"
	"testing"
	"time"
)

// TestPercentile protects the R-7 interpolation: exact ranks, values
// between ranks, the ends, and NaN for empty or out-of-range input.
func TestPercentile(t *testing.T) {
	xs := []float64{40, 10, 30, 20} // sorted: 10 20 30 40
	for _, c := range []struct{ p, want float64 }{
		{0, 10}, {100, 40}, {50, 25}, {25, 17.5}, {75, 32.5}, {99, 39.7}, {100.0 / 3, 20},
	} {
		if got := Percentile(xs, c.p); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if xs[0] != 40 {
		t.Errorf("Percentile sorted its input in place: %v", xs)
	}
	if got := Percentile([]float64{7}, 99); got != 7 {
		t.Errorf("one value: %v, want 7", got)
	}
	for _, bad := range []float64{-1, 101, math.NaN()} {
		if got := Percentile(xs, bad); !math.IsNaN(got) {
			t.Errorf("Percentile(p=%v) = %v, want NaN", bad, got)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

// TestPercentileSlow protects Percentile against a slow model: for random
// samples, the interpolated value has at least p % of the sample at or
// below it and lies between the neighbouring order statistics.
func TestPercentileSlow(t *testing.T) {
	seed := uint32(12345)
	next := func() float64 { seed = seed*1664525 + 1013904223; return float64(seed>>8) / (1 << 24) }
	for n := 1; n < 40; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Floor(next() * 50)
		}
		for _, p := range []float64{1, 10, 50, 90, 99} {
			v := Percentile(xs, p)
			le, lt := 0, 0
			for _, x := range xs {
				if x <= v {
					le++
				}
				if x < v {
					lt++
				}
			}
			// v sits between order statistics k and k+1 with k = floor((n-1)p/100).
			k := int(math.Floor(float64(n-1) * p / 100))
			if le < k+1 || lt > k+1 {
				t.Fatalf("n=%d p=%v: %v has %d values <= and %d < it, want >= %d and <= %d", n, p, v, le, lt, k+1, k+1)
			}
		}
	}
}

// TestGrade protects the bufferbloat scale's edges.
func TestGrade(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{
		{-3, "A+"}, {0, "A+"}, {4.999, "A+"}, {5, "A"}, {29.9, "A"}, {30, "B"}, {59.9, "B"}, {60, "C"},
		{199.9, "C"}, {200, "D"}, {399.9, "D"}, {400, "F"}, {5000, "F"}, {math.NaN(), "-"},
	} {
		if got := GradeMs(c.ms); got != c.want {
			t.Errorf("GradeMs(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
	if got := Grade(45 * time.Millisecond); got != "B" {
		t.Errorf("Grade(45ms) = %q, want B", got)
	}
}

// TestJain protects Jain's index: 1 for equal shares, 1/n for one taker,
// and the formula on an uneven case.
func TestJain(t *testing.T) {
	if got := Jain([]float64{5, 5, 5, 5}); math.Abs(got-1) > 1e-12 {
		t.Errorf("equal shares: %v, want 1", got)
	}
	if got := Jain([]float64{10, 0, 0, 0}); math.Abs(got-0.25) > 1e-12 {
		t.Errorf("one taker of 4: %v, want 0.25", got)
	}
	// (1+2+3)^2 / (3 * (1+4+9)) = 36/42
	if got := Jain([]float64{1, 2, 3}); math.Abs(got-36.0/42) > 1e-12 {
		t.Errorf("1,2,3: %v, want %v", got, 36.0/42)
	}
	if got := Jain(nil); !math.IsNaN(got) {
		t.Errorf("empty: %v, want NaN", got)
	}
	if got := Jain([]float64{0, 0}); got != 1 {
		t.Errorf("all zero: %v, want 1", got)
	}
}

// TestSummarize protects medians and ranges over repetitions, NaNs left out.
func TestSummarize(t *testing.T) {
	r := Summarize([]float64{3, math.NaN(), 1, 2})
	if r.Median != 2 || r.Min != 1 || r.Max != 3 || r.N != 3 {
		t.Errorf("Summarize = %+v, want median 2 [1, 3] of 3", r)
	}
	if r := Summarize([]float64{math.NaN()}); r.N != 0 || !math.IsNaN(r.Median) {
		t.Errorf("all NaN: %+v", r)
	}
}

// TestRotation protects the interleaved, rotated schedule: every
// configuration once per repetition, each in every position once over n
// repetitions.
func TestRotation(t *testing.T) {
	if got := Rotation(3, 1); got[0] != 1 || got[1] != 2 || got[2] != 0 {
		t.Errorf("Rotation(3, 1) = %v, want [1 2 0]", got)
	}
	const n = 4
	pos := make([][n]int, n) // pos[config][position] = times
	sched := Schedule(n, n)
	if len(sched) != n*n {
		t.Fatalf("Schedule(%d, %d) has %d runs", n, n, len(sched))
	}
	for i, rc := range sched {
		if rc[0] != i/n {
			t.Fatalf("run %d is of repetition %d, want %d (repetitions must not interleave with each other)", i, rc[0], i/n)
		}
		pos[rc[1]][i%n]++
	}
	for c := range pos {
		for p, k := range pos[c] {
			if k != 1 {
				t.Errorf("config %d ran %d times in position %d, want 1", c, k, p)
			}
		}
	}
	if Rotation(0, 3) != nil {
		t.Error("Rotation(0, _) is not empty")
	}
	if got := Rotation(3, -1); got[0] != 2 {
		t.Errorf("Rotation(3, -1) = %v, want to start at 2", got)
	}
}
