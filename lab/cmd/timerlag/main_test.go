package main

import (
	"strings"
	"testing"
	"time"
)

// TestSummary protects timerlag's figures: percentiles by rank, the shares
// over 1, 2 and 5 ms, and the time lost beyond 1 ms of each wake-up.
func TestSummary(t *testing.T) {
	late := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.5, 3, 11} // ms
	got := summary(late, time.Second)
	for _, want := range []string{"over 10 wake-ups", "p50 0.50", "max 11.0 ms", "late > 1 ms 30.0%", "> 2 ms 20.0%", "> 5 ms 10.00%", "beyond 1 ms: 1.2% of the time"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary = %q, want %q in it", got, want)
		}
	}
	if got := summary(nil, time.Second); !strings.Contains(got, "no wake-ups") {
		t.Errorf("summary(nil) = %q", got)
	}
}
