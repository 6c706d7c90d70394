package lab

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// WriteMovingSummary writes, for each configuration of rs with a moving
// bottleneck, its MovingFigures averaged over the repetitions that have
// them: added p95 latency, the share of probes more than 30 ms above
// idle, and the goodput's share of the mean capacity. It writes nothing
// when no run had a moving bottleneck.
func WriteMovingSummary(w io.Writer, rs []Result) error {
	type acc struct {
		test, name           string
		n                    int
		p95, over, share, mc float64
		load                 float64
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
		a.n++
		a.p95 += f.AddedP95Ms
		a.over += f.Over30Ms
		a.share += f.CapacityShare
		a.mc += f.MeanCapacity
		a.load += r.Load1
	}
	if len(order) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "test\tconfig\truns\tadded p95 ms\tover 30 ms\tutilisation\tmean capacity Mbit/s\tload1")
	for _, a := range order {
		n := float64(a.n)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f %%\t%.1f %%\t%.2f\t%.2f\n", a.test, a.name, a.n, a.p95/n, 100*a.over/n, 100*a.share/n, a.mc/n/1e6, a.load/n)
	}
	return tw.Flush()
}
