package lab

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
)

// WriteMovingSummary writes, for each configuration of rs with a moving
// bottleneck, its MovingFigures over the repetitions that have them, each
// as the median and [lowest, highest]: added p95 latency, the share of
// probes more than 30 ms above idle, and the goodput's share of the mean
// capacity; the mean capacity and load average are means. It writes
// nothing when no run had a moving bottleneck.
func WriteMovingSummary(w io.Writer, rs []Result) error {
	type acc struct {
		test, name       string
		p95, over, share []float64
		mc, load         float64
	}
	var order []*acc
	by := map[string]*acc{}
	for _, r := range rs {
		if r.Config.Moving == nil || r.Err != "" {
			continue
		}
		f := r.MovingFigures()
		if math.IsNaN(f.AddedP95Ms) || math.IsNaN(f.CapacityShare) {
			continue
		}
		k := r.Config.Test + "\x00" + r.Config.Name()
		a := by[k]
		if a == nil {
			a = &acc{test: r.Config.Test, name: r.Config.Name()}
			by[k] = a
			order = append(order, a)
		}
		a.p95 = append(a.p95, f.AddedP95Ms)
		a.over = append(a.over, 100*f.Over30Ms)
		a.share = append(a.share, 100*f.CapacityShare)
		a.mc += f.MeanCapacity
		a.load += r.Load1
	}
	if len(order) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "test\tconfig\truns\tadded p95 ms\tover 30 ms %\tutilisation %\tmean capacity Mbit/s\tload1")
	for _, a := range order {
		n := float64(len(a.p95))
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%.2f\t%.2f\n", a.test, a.name, len(a.p95),
			medianRange(a.p95), medianRange(a.over), medianRange(a.share), a.mc/n/1e6, a.load/n)
	}
	return tw.Flush()
}

// medianRange formats xs, which it sorts, as "median [lowest, highest]";
// the median of an even count is the mean of the middle two.
func medianRange(xs []float64) string {
	slices.Sort(xs)
	n := len(xs)
	med := xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return fmt.Sprintf("%.1f [%.1f, %.1f]", med, xs[0], xs[n-1])
}
