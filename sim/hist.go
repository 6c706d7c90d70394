package sim

import (
	"math"
	"math/bits"
	"time"
)

// Histogram is a log-linear histogram of non-negative durations in
// nanoseconds, in the style of HdrHistogram: values below 128 ns have their
// own bucket, and above that each power of two is split into 64 buckets, so a
// bucket's width is at most 1/64 of its lower bound (a relative error below
// 1.6% for any percentile). It has a fixed size (3776 buckets, about 30 KB),
// so recording never allocates. The exact mean and maximum are kept too.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    float64
	max    int64
}

// 128 linear buckets, then 57 octaves (shifts 1..57 cover values up to
// 2^64) of 64 buckets each: 128 + 57·64 = 3776.
const histBuckets = 128 + 57*64

func histIndex(v uint64) int {
	if v < 128 {
		return int(v)
	}
	shift := bits.Len64(v) - 7 // v>>shift is in [64, 128)
	return 128 + (shift-1)*64 + int(v>>uint(shift)) - 64
}

// histBounds returns the half-open value range [lo, hi) of bucket i.
func histBounds(i int) (lo, hi float64) {
	if i < 128 {
		return float64(i), float64(i + 1)
	}
	shift := (i-128)/64 + 1
	m := uint64((i-128)%64 + 64)
	return float64(m << uint(shift)), float64((m + 1) << uint(shift))
}

// Record adds one value. Negative values count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(uint64(v))]++
	h.n++
	h.sum += float64(v)
	if v > h.max {
		h.max = v
	}
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Mean returns the exact mean, or 0 if the histogram is empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Max returns the largest recorded value.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the q-quantile (q in [0, 1]), interpolated linearly
// inside its bucket and never above Max. It returns 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = math.Min(math.Max(q, 0), 1)
	rank := q * float64(h.n) // the value below which rank samples fall
	var cum float64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		if cum+float64(c) >= rank {
			lo, hi := histBounds(i)
			v := lo + (hi-lo)*(rank-cum)/float64(c)
			return time.Duration(math.Min(v, float64(h.max)))
		}
		cum += float64(c)
	}
	return time.Duration(h.max)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// CDF returns the empirical distribution as points (value, fraction of
// samples ≤ value), one per non-empty bucket at the bucket's upper bound
// (capped at Max).
func (h *Histogram) CDF() (vals []time.Duration, frac []float64) {
	if h.n == 0 {
		return nil, nil
	}
	var cum uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		cum += c
		_, hi := histBounds(i)
		vals = append(vals, time.Duration(math.Min(hi, float64(h.max))))
		frac = append(frac, float64(cum)/float64(h.n))
	}
	return vals, frac
}
