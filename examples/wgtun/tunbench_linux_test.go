//go:build linux

package wgtun

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"
)

// pathMode is one way of moving packets from tun a to tun b.
type pathMode struct {
	name string
	cfg  *Config // nil: the raw device
}

// BenchmarkTUNPath measures the throughput of one kernel TCP flow through
// two real TUN devices with offloads (see tunPath), read raw and through
// the wrapper, unshaped. Each iteration is one round: every mode in turn,
// on a fresh path, for WGTUN_BENCH_SECONDS (default 3 s); run it with
// -benchtime=5x for five interleaved rounds. It reports each mode's median
// in Gbit/s, its range, and the median ratio to the raw device.
func BenchmarkTUNPath(b *testing.B) {
	modes := tunModes()
	d := 3 * time.Second
	if s := getenvFloat("WGTUN_BENCH_SECONDS"); s > 0 {
		d = time.Duration(s * float64(time.Second))
	}
	got := make([][]float64, len(modes))
	cpu := make([][]float64, len(modes)) // process CPU seconds per GB moved
	round := 0
	for b.Loop() {
		for r := range modes {
			i := (r + round) % len(modes) // each round starts one mode later
			m := modes[i]
			p := newTUNPath(b)
			var src reader = p.a
			if m.cfg != nil {
				w, err := New(p.a, *m.cfg)
				if err != nil {
					b.Fatal(err)
				}
				src = w
			}
			var n int64
			var err error
			c0 := cpuTime()
			p.runPath(src, nil, func() { n, err = p.tcpBulk(d) })
			if err != nil {
				b.Fatal(err)
			}
			got[i] = append(got[i], float64(n*8)/d.Seconds()/1e9)
			cpu[i] = append(cpu[i], (cpuTime()-c0).Seconds()/(float64(n)/1e9))
			if w, ok := src.(*Device); ok && round == 0 {
				mt := metricsOf(w)
				b.Logf("%s: read %v packets, %v direct reads, %v copied; queue enqueued %v, dropped %v, marked %v",
					m.name, mt["wgtun_read_packets"], mt["wgtun_direct_reads"], mt["wgtun_copied_packets"],
					mt["enqueued_packets"], mt["dropped_packets"], mt["marked_packets"])
			}
		}
		round++
	}
	raw := slices.Clone(got[0])
	for i, m := range modes {
		g := slices.Clone(got[i])
		slices.Sort(g)
		ratios := make([]float64, len(g))
		for k := range got[i] {
			ratios[k] = got[i][k] / raw[k]
		}
		slices.Sort(ratios)
		c := slices.Clone(cpu[i])
		slices.Sort(c)
		b.ReportMetric(g[len(g)/2], m.name+"_Gbit/s")
		b.Logf("%-13s median %.2f Gbit/s, range [%.2f, %.2f], ratio to raw median %.3f range [%.3f, %.3f]; CPU %.2f s/GB [%.2f, %.2f]; rounds %v",
			m.name, g[len(g)/2], g[0], g[len(g)-1], ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1],
			c[len(c)/2], c[0], c[len(c)-1], fmtAll(got[i]))
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fmtAll(xs []float64) string {
	s := ""
	for _, x := range xs {
		s += fmt.Sprintf(" %.2f", x)
	}
	return s
}
