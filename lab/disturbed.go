package lab

import (
	"fmt"
	"math"
	"strings"
)

// Thresholds past which a run's machine, not its queue, decided its
// figures: timer lateness beyond every run the lab's notes record (late %
// 1.0 to 17.7 per run at load averages 0.2 to 1.3, in docs/design/0101;
// p99 1.7 to 10.9 ms at load averages 3 to 8, in docs/design/0060).
const (
	DisturbedTimerP99Ms = 15
	DisturbedTimerLost  = 0.20
)

// Disturbed says why a run's figures are the machine's rather than the
// queue's, or "" if nothing says so: timers that woke extremely late in an
// idle process beside the router at its niceness (TimerLag). Another lab
// sharing the cores (OtherLabs) is not enough on its own: on a shared
// machine it is common, and running again would meet it again.
func Disturbed(r Result) string {
	var why []string
	tl := r.TimerLag
	if !math.IsNaN(tl.P99Ms) && tl.P99Ms >= DisturbedTimerP99Ms {
		why = append(why, fmt.Sprintf("timer lateness p99 %.1f ms (at least %d ms)", tl.P99Ms, DisturbedTimerP99Ms))
	}
	if !math.IsNaN(tl.Lost) && tl.Lost >= DisturbedTimerLost {
		why = append(why, fmt.Sprintf("timer lateness lost %.1f %% of the run (at least %.0f %%)", 100*tl.Lost, 100*DisturbedTimerLost))
	}
	return strings.Join(why, "; ")
}
