package lab

import (
	"math"
	"sort"
	"time"
)

// Percentile returns the p-th percentile (0 <= p <= 100) of xs by linear
// interpolation between the two nearest ranks (the "R-7" definition used by
// spreadsheets and NumPy's default): rank h = (n-1)·p/100, value
// x[floor h] + (h - floor h)·(x[floor h + 1] - x[floor h]) over the sorted
// sample. It returns NaN for an empty sample or a p outside [0, 100]; xs is
// not modified.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return percentileSorted(s, p)
}

func percentileSorted(s []float64, p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	h := float64(len(s)-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// Median is Percentile(xs, 50).
func Median(xs []float64) float64 { return Percentile(xs, 50) }

// Jain returns Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when all
// shares are equal, 1/n when one takes everything. It returns NaN for an
// empty sample and 1 when every share is zero (nothing to be unfair about).
func Jain(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 1
	}
	return s * s / (float64(len(xs)) * s2)
}

// Grade returns the bufferbloat grade of an added latency: "A+" below
// 5 ms, "A" below 30 ms, "B" below 60 ms, "C" below 200 ms, "D" below
// 400 ms and "F" from 400 ms on. A negative added latency (the loaded
// path was faster than the idle median) is an A+.
func Grade(added time.Duration) string {
	switch {
	case added < 5*time.Millisecond:
		return "A+"
	case added < 30*time.Millisecond:
		return "A"
	case added < 60*time.Millisecond:
		return "B"
	case added < 200*time.Millisecond:
		return "C"
	case added < 400*time.Millisecond:
		return "D"
	}
	return "F"
}

// GradeMs is Grade for an added latency in milliseconds; NaN gives "-".
func GradeMs(ms float64) string {
	if math.IsNaN(ms) {
		return "-"
	}
	return Grade(time.Duration(ms * float64(time.Millisecond)))
}

// Range is the median, minimum and maximum of one metric over the
// repetitions of a configuration. N counts the repetitions that had a
// value (NaN values are left out).
type Range struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize returns the Range of xs, ignoring NaN values; with no value
// left every field but N is NaN.
func Summarize(xs []float64) Range {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Range{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	sort.Float64s(v)
	return Range{Median: percentileSorted(v, 50), Min: v[0], Max: v[len(v)-1], N: len(v)}
}

// Rotation returns the order in which repetition rep (from 0) runs n
// configurations: every configuration once, starting with configuration
// rep mod n, so that across n repetitions each one runs in each position
// once and no configuration always follows the same neighbour's warm-up.
func Rotation(n, rep int) []int {
	if n <= 0 {
		return nil
	}
	out := make([]int, n)
	start := rep % n
	if start < 0 {
		start += n
	}
	for i := range out {
		out[i] = (start + i) % n
	}
	return out
}

// Schedule returns every (repetition, configuration) pair of reps
// repetitions of n configurations, interleaved: all configurations of
// repetition 0 in Rotation(n, 0) order, then repetition 1 in Rotation(n, 1)
// order, and so on.
func Schedule(n, reps int) [][2]int {
	var out [][2]int
	for r := 0; r < reps; r++ {
		for _, c := range Rotation(n, r) {
			out = append(out, [2]int{r, c})
		}
	}
	return out
}
