package lab

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WritePlots writes flent-like plots into dir: per test, the CDF of the
// probe's RTT under load for every configuration (all repetitions
// pooled); per configuration (first repetition), the probe's RTT over
// time and each flow's goodput over time with their total.
func WritePlots(dir string, rs []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, test := range sortedTests(rs) {
		var cfgOrder []string
		pooled := map[string][]float64{}
		first := map[string]Result{}
		for _, r := range rs {
			if r.Config.Test != test || r.Err != "" {
				continue
			}
			name := r.Config.Name()
			if _, ok := first[name]; !ok {
				cfgOrder = append(cfgOrder, name)
				first[name] = r
			}
			pooled[name] = append(pooled[name], LoadedRTTs(r)...)
		}
		if len(cfgOrder) == 0 {
			continue
		}
		if err := plotCDF(filepath.Join(dir, sanitize(test)+"-latency-cdf.png"), test, cfgOrder, pooled); err != nil {
			return err
		}
		for _, name := range cfgOrder {
			r := first[name]
			base := filepath.Join(dir, sanitize(test+"-"+name))
			if err := plotLatencyTime(base+"-latency.png", r); err != nil {
				return err
			}
			if err := plotThroughputTime(base+"-throughput.png", r); err != nil {
				return err
			}
		}
	}
	return nil
}

// LoadedRTTs returns the probe RTTs (ms) sent in r's load windows, past
// the warm-up.
func LoadedRTTs(r Result) []float64 {
	var out []float64
	for _, s := range r.Probe {
		if s.RTT < 0 {
			continue
		}
		for _, w := range r.Config.Load {
			if s.T >= w.From+r.Config.Warmup && s.T < w.To {
				out = append(out, ms(s.RTT))
				break
			}
		}
	}
	return out
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

func plotCDF(file, test string, order []string, vals map[string][]float64) error {
	p := plot.New()
	p.Title.Text = test + ": probe RTT under load, CDF"
	p.X.Label.Text = "RTT (ms)"
	p.Y.Label.Text = "fraction of probes ≤ x"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = ticks125{}
	p.Legend.Top, p.Legend.Left = true, true
	var lines []any
	for _, name := range order {
		v := append([]float64(nil), vals[name]...)
		if len(v) == 0 {
			continue
		}
		sort.Float64s(v)
		step := max(1, len(v)/2000)
		var pts plotter.XYs
		for i := 0; i < len(v); i += step {
			pts = append(pts, plotter.XY{X: math.Max(v[i], 0.01), Y: float64(i+1) / float64(len(v))})
		}
		pts = append(pts, plotter.XY{X: math.Max(v[len(v)-1], 0.01), Y: 1})
		lines = append(lines, name, pts)
	}
	if len(lines) == 0 {
		return nil
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, file)
}

func plotLatencyTime(file string, r Result) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s: probe RTT over time (idle median %.1f ms)", r.Config.Test, r.Config.Name(), r.IdleMedianMs)
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "RTT (ms)"
	var pts plotter.XYs
	for _, s := range r.Probe {
		if s.RTT >= 0 {
			pts = append(pts, plotter.XY{X: s.T.Seconds(), Y: ms(s.RTT)})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	if err := plotutil.AddLines(p, "probe", pts); err != nil {
		return err
	}
	return p.Save(10*vg.Inch, 4*vg.Inch, file)
}

func plotThroughputTime(file string, r Result) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s: goodput over time (500 ms bins)", r.Config.Test, r.Config.Name())
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "goodput (Mb/s)"
	p.Legend.Top = true
	const bin = 500 * time.Millisecond
	end := r.Config.End()
	nb := int(end / bin)
	total := make([]float64, nb)
	var lines []any
	for i, s := range r.FlowSamples {
		if len(s) == 0 || i >= len(r.Flows) {
			continue
		}
		var pts plotter.XYs
		for b := 0; b < nb; b++ {
			from, to := time.Duration(b)*bin, time.Duration(b+1)*bin
			g := Goodput(s, from, to) / 1e6
			total[b] += g
			pts = append(pts, plotter.XY{X: (from + bin/2).Seconds(), Y: g})
		}
		f := r.Flows[i]
		if len(r.FlowSamples) <= 10 {
			lines = append(lines, fmt.Sprintf("%d %s %s", f.ID, f.Dir, f.CC), pts)
		}
	}
	if len(r.FlowSamples) == 0 {
		return nil
	}
	var tp plotter.XYs
	for b := range total {
		tp = append(tp, plotter.XY{X: (time.Duration(b)*bin + bin/2).Seconds(), Y: total[b]})
	}
	lines = append(lines, "total", tp)
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	return p.Save(10*vg.Inch, 4*vg.Inch, file)
}

// ticks125 labels a log axis at 1, 2 and 5 times each power of ten, so a
// range inside one decade still has labels.
type ticks125 struct{}

func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	if lo <= 0 || hi <= lo {
		return out
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return out
}
