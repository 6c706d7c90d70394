package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/aqmkit/aqmkit/sim"
)

// writePlots draws, for each case of the scenario and from each AQM's
// first repetition: the queueing-delay CDF (per traffic class where there
// are several), the queueing delay over time and the throughput over time.
func writePlots(o options, sc sim.Scenario, outs []sim.Outcome) error {
	if sc.Name == "speedtest" && len(outs) > 0 && outs[0].Run.Params != nil {
		return writeSpeedtestPlots(o, outs)
	}
	type entry struct {
		aqm string
		r   *sim.Result
	}
	var groups []string
	byGroup := map[string][]entry{}
	for _, oc := range outs {
		if oc.Run.Rep != 0 {
			continue
		}
		g := oc.Run.Group
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], entry{oc.Run.AQM, oc.Result})
	}
	classes := []string{"all"}
	if sc.Name == "l4s" {
		classes = []string{"l4s", "classic"}
	}
	for _, g := range groups {
		es := byGroup[g]
		name := func(kind string) string {
			return filepath.Join(o.out, fmt.Sprintf("%s-%s-%s.%s", sc.Name, sanitize(g), kind, o.format))
		}

		// Queueing-delay CDF, log-scaled delay axis.
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s %s: queueing delay CDF", sc.Name, g)
		p.X.Label.Text = "queueing delay (ms)"
		p.Y.Label.Text = "fraction of packets ≤ x"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top, p.Legend.Left = true, true
		var lines []any
		for _, e := range es {
			for _, c := range classes {
				h := e.r.DelayHistogram(c)
				if h == nil || h.Count() == 0 {
					continue
				}
				vals, frac := h.CDF()
				pts := make(plotter.XYs, len(vals))
				for i := range vals {
					// A log axis cannot show 0: clamp at 1 µs.
					pts[i] = plotter.XY{X: math.Max(vals[i].Seconds()*1e3, 1e-3), Y: frac[i]}
				}
				label := e.aqm
				if len(classes) > 1 {
					label += " " + c
				}
				lines = append(lines, label, pts)
			}
		}
		if len(lines) > 0 {
			if err := plotutil.AddLines(p, lines...); err != nil {
				return err
			}
			if err := p.Save(8*vg.Inch, 5*vg.Inch, name("delay-cdf")); err != nil {
				return err
			}
		}

		// Time series.
		for _, ts := range []struct {
			kind, title, ylabel string
			get                 func(*sim.Series) []float64
		}{
			{"delay-time", "mean queueing delay per interval", "queueing delay (ms)", func(s *sim.Series) []float64 { return s.QueueDelayMs }},
			{"throughput-time", "goodput per interval", "goodput (Mb/s)", func(s *sim.Series) []float64 { return s.ThroughputMbps }},
		} {
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s %s: %s", sc.Name, g, ts.title)
			p.X.Label.Text = "time (s)"
			p.Y.Label.Text = ts.ylabel
			var lines []any
			for _, e := range es {
				s := e.r.Series
				if s == nil {
					continue
				}
				ys := ts.get(s)
				pts := make(plotter.XYs, len(ys))
				for i := range ys {
					pts[i] = plotter.XY{X: s.T[i], Y: ys[i]}
				}
				lines = append(lines, e.aqm, pts)
				if sc.Name == "l4s" && ts.kind == "throughput-time" {
					for _, c := range []string{"l4s", "classic"} {
						cs := s.ClassMbps[c]
						cp := make(plotter.XYs, len(cs))
						for i := range cs {
							cp[i] = plotter.XY{X: s.T[i], Y: cs[i]}
						}
						lines = append(lines, e.aqm+" "+c, cp)
					}
				}
			}
			if len(lines) == 0 {
				continue
			}
			if err := plotutil.AddLines(p, lines...); err != nil {
				return err
			}
			if err := p.Save(10*vg.Inch, 4*vg.Inch, name(ts.kind)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sanitize turns a case name into a file-name fragment.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		case r == ':':
			return '_'
		}
		return '_'
	}, s)
}
