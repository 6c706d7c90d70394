package lab

import (
	"fmt"
	"math"
	"strings"
)

// Thresholds past which a run's machine, not its queue, decided its
// figures. The router's token bucket makes up 5 ms of lateness (its
// default burst) and the lab's claims leave 10 % of the rate: a timer
// whose p99 oversleep is four times that bucket, or lateness the bucket
// cannot make up worth 3 % of the run, says the machine starved the router.
const (
	DisturbedTimerP99Ms = 20
	DisturbedTimerLost  = 0.03
)

// Disturbed says why a run's figures are the machine's rather than the
// queue's, or "" if nothing says so: timers that woke extremely late in an
// idle process beside the router (TimerLag), or another lab run sharing the
// cores (OtherLabs).
func Disturbed(r Result) string {
	var why []string
	tl := r.TimerLag
	if !math.IsNaN(tl.P99Ms) && tl.P99Ms >= DisturbedTimerP99Ms {
		why = append(why, fmt.Sprintf("timer lateness p99 %.1f ms (at least %d ms)", tl.P99Ms, DisturbedTimerP99Ms))
	}
	if !math.IsNaN(tl.Lost) && tl.Lost >= DisturbedTimerLost {
		why = append(why, fmt.Sprintf("timer lateness lost %.1f %% of the run (at least %.0f %%)", 100*tl.Lost, 100*DisturbedTimerLost))
	}
	if len(r.OtherLabs) > 0 {
		why = append(why, fmt.Sprintf("other lab runs %v shared the cores", r.OtherLabs))
	}
	return strings.Join(why, "; ")
}
