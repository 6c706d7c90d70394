package lab

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// A moving bottleneck is a kernel htb class on r1, after the router on the
// client-to-server path, whose rate follows a schedule: a link whose
// capacity the router does not know (a modem, a base station), which the
// router's queue sits in front of. The router's front runs at a fixed rate
// or under autorate (aqmrouter -autorate), whose probes leave the router's
// namespace through r1 and so wait in the htb's queue.

// Moving is the moving bottleneck of a run.
type Moving struct {
	// Label is appended to the queue's label in reports ("+autorate",
	// "@mean").
	Label string `json:"label"`
	// Qdisc is htb's child: the device's buffer (pfifo 600 by default).
	Qdisc KernelQdisc `json:"qdisc"`
	// Steps are the capacities (IP rates; htb's class rate is scaled by
	// 1514/1500) from their offsets from the run's epoch, in order; the
	// first holds from the start.
	Steps []RateStep `json:"steps"`
}

// RateStep is a capacity from an offset on.
type RateStep struct {
	At   time.Duration `json:"at_ns"`
	Rate aqm.Rate      `json:"rate"`
}

// rateAt is the capacity at offset t.
func (m *Moving) rateAt(t time.Duration) aqm.Rate {
	i := sort.Search(len(m.Steps), func(i int) bool { return m.Steps[i].At > t })
	return m.Steps[max(i-1, 0)].Rate
}

// MeanBps is the mean capacity from offset from to offset to.
func (m *Moving) MeanBps(from, to time.Duration) float64 {
	if to <= from {
		return float64(m.rateAt(from))
	}
	var bits float64
	t := from
	for t < to {
		next := to
		if i := sort.Search(len(m.Steps), func(i int) bool { return m.Steps[i].At > t }); i < len(m.Steps) {
			next = min(next, m.Steps[i].At)
		}
		bits += float64(m.rateAt(t)) * (next - t).Seconds()
		t = next
	}
	return bits / (to - from).Seconds()
}

// htbClass is the tc arguments that set class 1:1 of dev to rate.
func htbClass(verb, dev string, rate aqm.Rate) []string {
	return []string{"class", verb, "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", fmt.Sprintf("%dbit", HTBRate(rate)), "quantum", "1514"}
}

// startMoving installs the moving bottleneck on dev in ns and changes its
// rate at each step's offset from epoch, until the returned stop is
// called; stop waits for the changer and removes the qdisc. changes
// receives each step's lateness, for the report.
func startMoving(ctx context.Context, ns, dev string, m *Moving, epoch time.Time, rtt time.Duration) (stop func() []time.Duration, err error) {
	if len(m.Steps) == 0 {
		return nil, fmt.Errorf("lab: moving bottleneck without steps")
	}
	ClearKernel(ctx, ns, dev)
	if _, err := nsRun(ctx, ns, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"); err != nil {
		return nil, err
	}
	if _, err := nsRun(ctx, ns, "tc", htbClass("add", dev, m.Steps[0].Rate)...); err != nil {
		ClearKernel(ctx, ns, dev)
		return nil, err
	}
	q := m.Qdisc
	if q.Kind == "" {
		q = KernelQdisc{Kind: "pfifo", Limit: 600}
	}
	if _, err := nsRun(ctx, ns, "tc", append([]string{"qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:"}, q.childArgs(m.Steps[0].Rate, rtt)...)...); err != nil {
		ClearKernel(ctx, ns, dev)
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan []time.Duration, 1)
	tc := newTCChanger(cctx, ns, len(m.Steps))
	go func() {
		var late []time.Duration
		defer func() { done <- late }()
		defer tc.close()
		for _, s := range m.Steps[1:] {
			at := epoch.Add(s.At)
			select {
			case <-cctx.Done():
				return
			case <-time.After(time.Until(at)):
			}
			if err := tc.run(htbClass("change", dev, s.Rate)); err != nil {
				return
			}
			late = append(late, time.Since(at))
		}
	}()
	return func() []time.Duration {
		cancel()
		late := <-done
		ClearKernel(context.Background(), ns, dev)
		return late
	}, nil
}

// AutorateLab is the autorate test's schedule: 40 Mbit/s, 10 Mbit/s for
// 10 s from 10 s into the load, 40 Mbit/s again; the simulator's
// step-down-up trace, behind a 600-packet pfifo.
func autorateSteps(loadFrom time.Duration) []RateStep {
	return []RateStep{{0, 40 * aqm.Mbit}, {loadFrom + 10*time.Second, 10 * aqm.Mbit}, {loadFrom + 20*time.Second, 40 * aqm.Mbit}}
}

// autorateSuite is the autorate test: 4 uploads (o.CC) through the router's
// FQ-CoDel towards the moving bottleneck, the router's rate driven by
// autorate from probes to the server's UDP echo, beside the rate fixed at
// the schedule's mean over the measured span and at its minimum.
func autorateSuite(o Options) []Config {
	if len(o.Traces) > 0 {
		return traceSuite(o)
	}
	w := Window{From: o.Idle, To: o.Idle + o.Duration}
	steps := autorateSteps(w.From)
	probe := &Moving{Steps: steps}
	mean := aqm.Rate(probe.MeanBps(w.From+o.Warmup, w.To))
	lo := steps[0].Rate
	hi := steps[0].Rate
	for _, s := range steps {
		lo, hi = min(lo, s.Rate), max(hi, s.Rate)
	}
	mean = aqm.Rate(math.Round(float64(mean)/1e3) * 1e3)
	var out []Config
	for _, v := range []struct {
		label string
		rate  aqm.Rate
		extra []string
	}{
		{"+autorate", mean, autorateFlags(lo/2, hi)},
		{"@mean", mean, nil},
		{"@min", lo, nil},
	} {
		c := o.base("autorate")
		c.Rate = v.rate
		c.Queue = Queue{Router: "fq-codel"}
		c.Load = []Window{w}
		for i := range 4 {
			c.Flows = append(c.Flows, bulk(i, "up", o.CC, w.From, w.To))
		}
		c.RouterExtra = v.extra
		c.Moving = &Moving{Label: v.label, Steps: steps}
		c.Note = fmt.Sprintf("4 uploads through the router's FQ-CoDel (%s) into an htb on r1 at %v, %v from %v to %v, behind pfifo 600",
			v.label, hi, lo, steps[1].At, steps[2].At)
		out = append(out, c)
	}
	return out
}

// autorateFlags are the router's flags for autorate between lo and hi
// from probes to the server's UDP echo at 20 Hz.
func autorateFlags(lo, hi aqm.Rate) []string {
	return []string{"-autorate", ServerAddr + "/24", "-reflectors", fmt.Sprintf("udp:%s:%d", ServerAddr, udpPort),
		"-autorate-min", lo.String(), "-autorate-max", hi.String(), "-autorate-delay", "15ms", "-probe-interval", "50ms",
		"-autorate-max-increase", "0.1", "-autorate-detection", "2"}
}

// MovingFigures are a moving-bottleneck run's figures against the
// capacity: added latency p95 and the share of the capacity the uploads
// got over the measured span (the load window less its warm-up).
type MovingFigures struct {
	AddedP95Ms    float64 `json:"added_p95_ms"`
	Over30Ms      float64 `json:"over_30ms"` // share of loaded probes more than 30 ms above the idle median
	CapacityShare float64 `json:"capacity_share"`
	MeanCapacity  float64 `json:"mean_capacity_bps"`
}

// Figures computes MovingFigures from a run's result; NaN figures where
// the run lacks what they need.
func (r Result) MovingFigures() MovingFigures {
	f := MovingFigures{AddedP95Ms: math.NaN(), Over30Ms: math.NaN(), CapacityShare: math.NaN(), MeanCapacity: math.NaN()}
	c := r.Config
	if c.Moving == nil || len(c.Load) == 0 {
		return f
	}
	from, to := c.Load[0].From+c.Warmup, c.Load[0].To
	var loaded []float64
	for _, s := range r.Probe {
		if s.T >= from && s.T < to && s.RTT >= 0 {
			loaded = append(loaded, ms(s.RTT))
		}
	}
	if len(loaded) > 0 && !math.IsNaN(r.IdleMedianMs) {
		sort.Float64s(loaded)
		f.AddedP95Ms = Percentile(loaded, 95) - r.IdleMedianMs
		n := 0
		for _, v := range loaded {
			if v-r.IdleMedianMs > 30 {
				n++
			}
		}
		f.Over30Ms = float64(n) / float64(len(loaded))
	}
	f.MeanCapacity = c.Moving.MeanBps(from, to)
	if f.MeanCapacity > 0 && !math.IsNaN(r.GoodputUpBps) {
		f.CapacityShare = r.GoodputUpBps / f.MeanCapacity
	}
	return f
}
