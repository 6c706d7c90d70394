package cobalt_test

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
)

// TestRestartAboveTargetSignalsSecondPacket protects the parity choice of
// docs/design/0022: a controller whose next signal time has passed signals
// on the second packet above target, and schedules the next Interval/sqrt(2) after the first, as
// Linux's COBALT does.
func TestRestartAboveTargetSignalsSecondPacket(t *testing.T) {
	p := cobalt.Control{}.Params()
	for _, idle := range []time.Duration{0, 2 * cobalt.DefaultInterval} {
		var c cobalt.Controller
		now := aqm.Time(10 * time.Second)
		if idle > 0 { // a flow that was active, then idle for two intervals
			c.Decide(&p, now, time.Millisecond, aqm.NotECT)
			now += aqm.Time(idle)
		}
		var got []cobalt.Action
		for range 4 {
			got = append(got, c.Decide(&p, now, 20*time.Millisecond, aqm.NotECT))
			now += aqm.Time(100 * time.Microsecond)
		}
		want := []cobalt.Action{cobalt.Deliver, cobalt.DropCoDel, cobalt.Deliver, cobalt.Deliver}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("idle %v: actions %v, want %v", idle, got, want)
			}
		}
		next := c.State().Next
		wantNext := now - aqm.Time(400*time.Microsecond) + aqm.Time(70710678) // Interval/sqrt(2) of the default 100 ms
		if d := time.Duration(next - wantNext); d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("idle %v: next signal %v, want %v", idle, time.Duration(next), time.Duration(wantNext))
		}
	}
}
