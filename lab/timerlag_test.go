package lab

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// TestSummarizeTimerLag protects the timer-lateness figures: percentiles
// by the lab's rule, the share over 2 ms, and the time lost beyond 1 ms of
// each wake-up over the span.
func TestSummarizeTimerLag(t *testing.T) {
	late := []float64{11.1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.5, 3} // ms, unsorted
	tl := SummarizeTimerLag(late, time.Second)
	if tl.Wakeups != 10 || tl.P50Ms != 0.55 || tl.MaxMs != 11.1 || tl.Over2Ms != 0.2 || math.Abs(tl.Lost-0.0126) > 1e-12 {
		t.Errorf("SummarizeTimerLag = %+v, want 10 wake-ups, p50 0.55, max 11.1, 20%% over 2 ms, 1.26%% lost", tl)
	}
	if late[0] != 11.1 {
		t.Error("SummarizeTimerLag sorted its argument")
	}
	if !strings.Contains(tl.String(), "beyond 1 ms: 1.3% of the time") {
		t.Errorf("String = %q", tl.String())
	}
	if e := SummarizeTimerLag(nil, time.Second); e.Wakeups != 0 || !math.IsNaN(e.P99Ms) || !strings.Contains(e.String(), "no wake-ups") {
		t.Errorf("empty: %+v %q", e, e.String())
	}
}

// TestMeasureTimerLag protects the measurement itself: it wakes about
// span/interval times (never more) and never reports a negative lateness.
func TestMeasureTimerLag(t *testing.T) {
	tl := MeasureTimerLag(context.Background(), 50*time.Millisecond, TimerLagInterval)
	if tl.Wakeups < 1 || tl.Wakeups > 42 || !(tl.P50Ms >= 0) || tl.MaxMs < tl.P99Ms {
		t.Errorf("MeasureTimerLag over 50 ms = %+v, want 1 to 42 wake-ups and sane percentiles", tl)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if tl := MeasureTimerLag(ctx, time.Hour, TimerLagInterval); tl.Wakeups != 0 {
		t.Errorf("MeasureTimerLag after cancel woke %d times", tl.Wakeups)
	}
}
