package lab

import (
	"math"
	"strings"
	"testing"
)

// redoDisturbed runs once more, and says so, every configuration whose run
// in rs the machine disturbed (Disturbed), and returns rs with those runs
// replaced by the new ones. A run disturbed again is kept, its reason
// logged: TestLab then judges what it has.
func redoDisturbed(t *testing.T, rs []Result, round func([]Config) []Result) []Result {
	t.Helper()
	var again []Config
	var keep []Result
	for _, r := range rs {
		if why := Disturbed(r); why != "" {
			t.Logf("%s: the machine disturbed this run (%s): running it again", r.Config.Name(), why)
			again = append(again, r.Config)
			continue
		}
		keep = append(keep, r)
	}
	if len(again) == 0 {
		return rs
	}
	for _, r := range round(again) {
		if why := Disturbed(r); why != "" {
			t.Logf("%s: disturbed again (%s): judged as it is", r.Config.Name(), why)
		}
		keep = append(keep, r)
	}
	return keep
}

// TestDisturbed protects the lab's judge of a disturbed machine: extreme
// timer lateness marks a run; an ordinary one, or one beside another lab,
// is not marked; redoDisturbed reruns exactly the marked runs.
func TestDisturbed(t *testing.T) {
	calm := Result{Config: Config{Queue: Queue{Router: "cake"}}, TimerLag: TimerLag{P99Ms: 2, Lost: 0.001}}
	if why := Disturbed(calm); why != "" {
		t.Errorf("a calm run is disturbed: %s", why)
	}
	late := calm
	late.Config.Queue.Router = "fq-codel"
	late.TimerLag.P99Ms = 45
	lost := calm
	lost.Config.Queue.Router = "fifo"
	lost.TimerLag.Lost = 0.25
	shared := calm
	shared.OtherLabs = []int{4242}
	shared.TimerLag.Lost = 0.12 // a busy run, not an extreme one
	if why := Disturbed(shared); why != "" {
		t.Errorf("a run beside another lab with ordinary lateness is disturbed: %s", why)
	}
	for _, c := range []struct {
		r    Result
		want string
	}{{late, "p99 45.0 ms"}, {lost, "25.0 %"}} {
		if why := Disturbed(c.r); !strings.Contains(why, c.want) {
			t.Errorf("Disturbed = %q, want it to say %q", why, c.want)
		}
	}
	nan := calm
	nan.TimerLag = TimerLag{P99Ms: math.NaN(), Lost: math.NaN()}
	if why := Disturbed(nan); why != "" {
		t.Errorf("a run without a timer measurement is disturbed: %s", why)
	}
	var rerun []string
	got := redoDisturbed(t, []Result{calm, late, lost}, func(cfgs []Config) []Result {
		var out []Result
		for _, c := range cfgs {
			rerun = append(rerun, c.Queue.Router)
			out = append(out, Result{Config: c, TimerLag: TimerLag{P99Ms: 1}})
		}
		return out
	})
	if strings.Join(rerun, ",") != "fq-codel,fifo" || len(got) != 3 || got[0].Config.Queue.Router != "cake" {
		t.Errorf("reran %v, kept %d runs; want fq-codel and fifo rerun and three runs", rerun, len(got))
	}
	for _, r := range got {
		if Disturbed(r) != "" {
			t.Errorf("%s: the disturbed run was kept", r.Config.Queue.Router)
		}
	}
}
