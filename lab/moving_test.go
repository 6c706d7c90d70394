package lab

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestMovingSchedule protects the moving bottleneck's arithmetic: the rate
// at an offset, the mean over a span across steps, and the autorate
// test's three configurations (autorate, the mean, the minimum) with
// distinct names and the mean of the measured span.
func TestMovingSchedule(t *testing.T) {
	m := &Moving{Steps: []RateStep{{0, 40 * aqm.Mbit}, {10 * time.Second, 10 * aqm.Mbit}, {20 * time.Second, 40 * aqm.Mbit}}}
	for at, want := range map[time.Duration]aqm.Rate{0: 40 * aqm.Mbit, 9 * time.Second: 40 * aqm.Mbit, 10 * time.Second: 10 * aqm.Mbit, 25 * time.Second: 40 * aqm.Mbit} {
		if got := m.rateAt(at); got != want {
			t.Errorf("rate at %v: %v, want %v", at, got, want)
		}
	}
	if got := m.MeanBps(5*time.Second, 30*time.Second); math.Abs(got-28e6) > 1 { // (15·40 + 10·10)/25
		t.Errorf("mean %v, want 28e6", got)
	}
	if got := m.MeanBps(12*time.Second, 18*time.Second); math.Abs(got-10e6) > 1 {
		t.Errorf("mean within a step %v", got)
	}
	cfgs, err := Suite("autorate", Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
		names[c.Name()] = true
		if c.Moving == nil || len(c.Moving.Steps) != 3 {
			t.Fatalf("%s: no schedule", c.Name())
		}
	}
	if len(cfgs) != 3 || !names["fq-codel+autorate"] || !names["fq-codel@mean"] || !names["fq-codel@min"] {
		t.Errorf("configs %v", names)
	}
	// Load from 3 s for 30 s, 5 s warm-up: 40 Mb/s to 13 s, 10 to 23 s.
	if cfgs[1].Rate != 28*aqm.Mbit || cfgs[2].Rate != 10*aqm.Mbit {
		t.Errorf("fixed rates %v and %v, want 28mbit and 10mbit", cfgs[1].Rate, cfgs[2].Rate)
	}
}

// TestMovingFigures protects the figures against the capacity: p95 of the
// loaded probes less the idle median, the share above 30 ms, and goodput
// over the mean capacity.
func TestMovingFigures(t *testing.T) {
	cfgs, _ := Suite("autorate", Options{})
	r := Result{Config: cfgs[0], IdleMedianMs: 20, GoodputUpBps: 14e6}
	from := cfgs[0].Load[0].From + cfgs[0].Warmup
	for i := range 100 {
		rtt := 25 * time.Millisecond
		if i >= 90 {
			rtt = 120 * time.Millisecond
		}
		r.Probe = append(r.Probe, ProbeSample{T: from + time.Duration(i)*10*time.Millisecond, RTT: rtt})
	}
	r.Probe = append(r.Probe, ProbeSample{T: time.Second, RTT: time.Second}) // before the span: left out
	f := r.MovingFigures()
	if math.Abs(f.Over30Ms-0.1) > 1e-9 || math.Abs(f.CapacityShare-0.5) > 1e-9 || f.AddedP95Ms < 5 || f.AddedP95Ms > 100 {
		t.Errorf("figures %+v", f)
	}
}

// TestMovingSummary protects the moving-bottleneck table: one line per
// configuration, each figure's median and range over its runs, failed
// runs and runs without a moving bottleneck left out.
func TestMovingSummary(t *testing.T) {
	cfgs, _ := Suite("autorate", Options{})
	from := cfgs[0].Load[0].From + cfgs[0].Warmup
	run := func(c Config, goodput float64, err string) Result {
		r := Result{Config: c, IdleMedianMs: 20, GoodputUpBps: goodput, Err: err}
		for i := range 10 {
			r.Probe = append(r.Probe, ProbeSample{T: from + time.Duration(i)*time.Second, RTT: 30 * time.Millisecond})
		}
		return r
	}
	plain := cfgs[1]
	plain.Moving = nil
	var b strings.Builder
	err := WriteMovingSummary(&b, []Result{run(cfgs[0], 14e6, ""), run(cfgs[0], 7e6, ""), run(cfgs[0], 28e6, "failed"), run(cfgs[0], 2.8e6, ""), run(plain, 1e6, "")})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// Mean capacity 28 Mbit/s: 14, 7 and 2.8 Mbit/s are 50, 25 and 10 %,
	// median 25 (the mean would be 28.3).
	if len(lines) != 2 || !strings.Contains(lines[1], "fq-codel+autorate") || !strings.Contains(lines[1], " 3 ") ||
		!strings.Contains(lines[1], "25.0 [10.0, 50.0]") || !strings.Contains(lines[1], "10.0") {
		t.Errorf("table:\n%s", b.String())
	}
}
