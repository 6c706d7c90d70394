package lab

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// TimerLagInterval is the sleep TimerLag measures: 1.2 ms, a shaping
// router's wait for one 1500-byte packet at 50 Mb/s plus its 1 ms wake
// slack.
const TimerLagInterval = 1200 * time.Microsecond

// TimerLag is how late a Go timer fired over a span, measured by an
// otherwise idle process sleeping TimerLagInterval over and over: the
// conditions of a shaping router's consumer waiting for its next
// departure. Go's runtime on Linux sleeps in epoll with whole
// milliseconds, so even an idle machine shows about 1 ms; more is CPU
// contention.
type TimerLag struct {
	Wakeups int `json:"wakeups"`
	// P50Ms, P99Ms and MaxMs are percentiles of the oversleep, in ms.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Over2Ms is the share of wake-ups more than 2 ms late.
	Over2Ms float64 `json:"over_2ms"`
	// Lost is the oversleep beyond the first 1 ms of each wake-up, summed,
	// as a share of the span: what a token bucket whose burst covers the
	// slack and 1 ms of lateness cannot make up.
	Lost float64 `json:"lost"`
}

// MeasureTimerLag sleeps interval on one reused timer until span has
// passed or ctx ends, and summarises the oversleep.
func MeasureTimerLag(ctx context.Context, span, interval time.Duration) TimerLag {
	var late []float64
	t := time.NewTimer(interval)
	defer t.Stop()
	start := time.Now()
	for end := start.Add(span); time.Now().Before(end); {
		t0 := time.Now()
		t.Reset(interval)
		select {
		case <-ctx.Done():
			return SummarizeTimerLag(late, time.Since(start))
		case <-t.C:
		}
		late = append(late, float64(time.Since(t0)-interval)/1e6)
	}
	return SummarizeTimerLag(late, time.Since(start))
}

// SummarizeTimerLag summarises oversleeps in ms over a span.
func SummarizeTimerLag(late []float64, span time.Duration) TimerLag {
	tl := TimerLag{Wakeups: len(late), P50Ms: math.NaN(), P99Ms: math.NaN(), MaxMs: math.NaN(), Over2Ms: math.NaN(), Lost: math.NaN()}
	if len(late) == 0 || span <= 0 {
		return tl
	}
	s := slices.Clone(late)
	slices.Sort(s)
	tl.P50Ms, tl.P99Ms, tl.MaxMs = Percentile(s, 50), Percentile(s, 99), s[len(s)-1]
	over, lost := 0, 0.0
	for _, x := range s {
		if x > 2 {
			over++
		}
		lost += max(x-1, 0)
	}
	tl.Over2Ms = float64(over) / float64(len(s))
	tl.Lost = lost / (float64(span) / 1e6)
	return tl
}

// String is the summary in one line.
func (tl TimerLag) String() string {
	if tl.Wakeups == 0 {
		return "timer lateness: no wake-ups"
	}
	return fmt.Sprintf("timer lateness over %d wake-ups: p50 %.2f p99 %.2f max %.1f ms; %.1f%% over 2 ms; beyond 1 ms: %.1f%% of the time",
		tl.Wakeups, tl.P50Ms, tl.P99Ms, tl.MaxMs, 100*tl.Over2Ms, 100*tl.Lost)
}
