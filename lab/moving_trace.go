package lab

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// traceSuite is the autorate test on recorded links: for each of
// o.Traces, the moving bottleneck replays o.Duration of the trace from
// o.TraceOffset during the load, scaled by o.TraceScale, and holds the
// window's mean before and after it (so that the idle probes see no
// trace gaps). Rows: the router under autorate from probes; with
// o.AutoratePassive, under autorate from the forwarded flows' own round
// trips with no reflector, timed by timestamp echo and by acknowledgement
// number; fixed at the mean of the measured span; and
// fixed at the 10th percentile of its one-second means.
func traceSuite(o Options) []Config {
	w := Window{From: o.Idle, To: o.Idle + o.Duration}
	scale := o.TraceScale
	if scale == 0 {
		scale = 1
	}
	var out []Config
	for _, tr := range o.Traces {
		sched := tr.Schedule(o.TraceOffset, o.Duration, scale)
		if len(sched) == 0 { // an empty trace: nothing to replay
			continue
		}
		m := &Moving{}
		for _, s := range sched {
			m.Steps = append(m.Steps, RateStep{At: w.From + s.At, Rate: s.Rate})
		}
		span := Window{From: w.From + o.Warmup, To: w.To}
		mean := aqm.Rate(math.Round(m.MeanBps(span.From, span.To)/1e3) * 1e3)
		all := aqm.Rate(math.Round(m.MeanBps(w.From, w.To)/1e3) * 1e3)
		m.Steps = append([]RateStep{{0, all}}, m.Steps...)
		m.Steps = append(m.Steps, RateStep{At: w.To, Rate: all})

		var secs []float64
		hi := MinTraceRate
		for t := span.From; t+time.Second <= span.To; t += time.Second {
			secs = append(secs, m.MeanBps(t, t+time.Second))
		}
		for _, s := range m.Steps {
			hi = max(hi, s.Rate)
		}
		p10 := aqm.Rate(max(math.Round(quantile(secs, 0.1)/1e3)*1e3, float64(MinTraceRate)))
		if math.IsNaN(quantile(secs, 0.1)) {
			p10 = mean
		}
		lo := max(p10/2, MinTraceRate)

		rows := []movingRow{{"+autorate", mean, autorateFlags(lo, hi)}}
		if o.AutoratePassive {
			rows = append(rows, movingRow{"+autorate-passive", mean, passiveFlags(lo, hi, "echo")},
				movingRow{"+autorate-passive-ack", mean, passiveFlags(lo, hi, "ack")})
		}
		rows = append(rows, movingRow{"@mean", mean, nil}, movingRow{"@p10", p10, nil})
		test := "autorate-" + strings.ReplaceAll(tr.Name, ":", "-")
		for _, v := range rows {
			c := o.base(test)
			c.Rate = v.rate
			c.Queue = Queue{Router: "fq-codel"}
			c.Load = []Window{w}
			for i := range 4 {
				c.Flows = append(c.Flows, bulk(i, "up", o.CC, w.From, w.To))
			}
			c.RouterExtra = v.extra
			c.Moving = &Moving{Label: v.label, Steps: m.Steps}
			c.Note = fmt.Sprintf("4 uploads through the router's FQ-CoDel (%s) into an htb on r1 replaying %s from %v, ×%g "+
				"(mean %v over the measured span, 1 s means' 10th percentile %v, 100 ms peak %v), behind pfifo 600",
				v.label, tr.Name, o.TraceOffset, scale, mean, p10, hi)
			out = append(out, c)
		}
	}
	return out
}

// movingRow is one row of a moving-bottleneck test: its label, the
// router's rate and its extra flags.
type movingRow struct {
	label string
	rate  aqm.Rate
	extra []string
}

// passiveFlags are the router's flags for autorate between lo and hi from
// the round trips of the TCP flows it forwards, with no reflector, timed
// by match (echo or ack, aqmrouter's -autorate-passive-match).
func passiveFlags(lo, hi aqm.Rate, match string) []string {
	return []string{"-autorate", ServerAddr + "/24", "-autorate-passive", "-autorate-passive-match", match,
		"-autorate-min", lo.String(), "-autorate-max", hi.String(), "-autorate-delay", "15ms", "-probe-interval", "50ms",
		"-autorate-max-increase", "0.1", "-autorate-detection", "2"}
}
