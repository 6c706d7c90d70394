package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/aqmkit/aqmkit/sim"
)

// writeSpeedtestPlots draws the speed-test study's figures for each tool,
// burst setting and cross-traffic setting: the test's throughput and its
// RTT against the shaped rate per AQM (mean and 95% interval over seeds);
// box plots per AQM of the throughput and of the loaded RTT (p99) across
// all runs; and the instantaneous throughput (100 ms bins) over the test at
// the highest rate below the line rate, first seed.
func writeSpeedtestPlots(o options, outs []sim.Outcome) error {
	type cond struct{ tool, burst, cross string }
	byCond := map[cond][]sim.Outcome{}
	var conds []cond
	var aqms []string
	for _, oc := range outs {
		p := oc.Run.Params
		c := cond{p["tool"], p["burst"], p["cross"]}
		if _, ok := byCond[c]; !ok {
			conds = append(conds, c)
		}
		byCond[c] = append(byCond[c], oc)
		if !slices.Contains(aqms, oc.Run.AQM) {
			aqms = append(aqms, oc.Run.AQM)
		}
	}
	rateOf := func(oc sim.Outcome) float64 {
		v, _ := strconv.ParseFloat(oc.Run.Params["rate_mbps"], 64)
		return v
	}
	test := func(oc sim.Outcome) sim.GroupResult { return oc.Result.Group("test") }
	for _, c := range conds {
		ocs := byCond[c]
		title := fmt.Sprintf("speedtest %s, burst shaping %s, cross traffic %s", c.tool, c.burst, c.cross)
		name := func(kind string) string {
			return filepath.Join(o.out, fmt.Sprintf("speedtest-%s-burst_%s-cross_%s-%s.%s", c.tool, c.burst, c.cross, kind, o.format))
		}
		// Mean and 95% interval over seeds, against the rate.
		for _, m := range []struct {
			kind, ylabel string
			get          func(sim.Outcome) float64
		}{
			{"throughput-rate", "test goodput (Mb/s)", func(oc sim.Outcome) float64 { return test(oc).GoodputMbps }},
			{"rtt-rate", "test RTT p50 (ms)", func(oc sim.Outcome) float64 { return test(oc).RTT.P50Ms }},
		} {
			p := plot.New()
			p.Title.Text = title
			p.X.Label.Text = "shaped rate (Mb/s)"
			p.Y.Label.Text = m.ylabel
			var lines []any
			for _, a := range aqms {
				var rates []float64
				vals := map[float64][]float64{}
				for _, oc := range ocs {
					if oc.Run.AQM != a {
						continue
					}
					r := rateOf(oc)
					if _, ok := vals[r]; !ok {
						rates = append(rates, r)
					}
					vals[r] = append(vals[r], m.get(oc))
				}
				slices.Sort(rates)
				pts := make([]plotter.XYer, 0, len(rates))
				for _, r := range rates {
					vs := vals[r]
					xy := make(plotter.XYs, len(vs))
					for i, v := range vs {
						xy[i] = plotter.XY{X: r, Y: v}
					}
					pts = append(pts, xy)
				}
				if len(pts) == 0 {
					continue
				}
				ep, err := plotutil.NewErrorPoints(plotutil.MeanAndConf95, pts...)
				if err != nil {
					return err
				}
				lines = append(lines, a, ep)
			}
			if err := plotutil.AddLinePoints(p, lines...); err != nil {
				return err
			}
			for i := 1; i < len(lines); i += 2 {
				if err := plotutil.AddYErrorBars(p, lines[i].(*plotutil.ErrorPoints)); err != nil {
					return err
				}
			}
			if err := p.Save(8*vg.Inch, 5*vg.Inch, name(m.kind)); err != nil {
				return err
			}
		}
		// Distributions across runs, per AQM.
		for _, m := range []struct {
			kind, ylabel string
			get          func(sim.Outcome) float64
		}{
			{"throughput-box", "test goodput / shaped rate (%)", func(oc sim.Outcome) float64 {
				return 100 * test(oc).GoodputMbps / oc.Result.BottleneckMbps
			}},
			{"rtt-box", "test RTT p99 (ms)", func(oc sim.Outcome) float64 { return test(oc).RTT.P99Ms }},
		} {
			p := plot.New()
			p.Title.Text = title + ": across rates and seeds"
			p.Y.Label.Text = m.ylabel
			for i, a := range aqms {
				var vs plotter.Values
				for _, oc := range ocs {
					if oc.Run.AQM == a {
						vs = append(vs, m.get(oc))
					}
				}
				if len(vs) == 0 {
					continue
				}
				b, err := plotter.NewBoxPlot(vg.Points(30), float64(i), vs)
				if err != nil {
					return err
				}
				p.Add(b)
			}
			p.NominalX(aqms...)
			if err := p.Save(6*vg.Inch, 4*vg.Inch, name(m.kind)); err != nil {
				return err
			}
		}
		// Instantaneous throughput at the highest rate below the line rate.
		top := 0.0
		for _, oc := range ocs {
			if r := rateOf(oc); r < 1000 {
				top = max(top, r)
			}
		}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s at %g Mb/s: instantaneous throughput (100 ms bins), first seed", title, top)
		p.X.Label.Text = "time into the test (s)"
		p.Y.Label.Text = "Mb/s"
		var lines []any
		for _, oc := range ocs {
			if rateOf(oc) != top || oc.Run.Rep != 0 {
				continue
			}
			for _, g := range []string{"test", "cross"} {
				bins := oc.Result.Group(g).BinsMbps
				if len(bins) == 0 {
					continue
				}
				pts := make(plotter.XYs, len(bins))
				for i, v := range bins {
					pts[i] = plotter.XY{X: float64(i) * sim.GoodputBin.Seconds(), Y: v}
				}
				lines = append(lines, oc.Run.AQM+" "+g, pts)
			}
		}
		if len(lines) > 0 {
			if err := plotutil.AddLines(p, lines...); err != nil {
				return err
			}
			if err := p.Save(10*vg.Inch, 4*vg.Inch, name("inst-throughput")); err != nil {
				return err
			}
		}
	}
	return nil
}
