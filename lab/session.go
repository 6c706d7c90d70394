package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Session is one aqmlab invocation: it builds a topology, finds which
// kernel anchors the kernel has, runs the schedule and writes the reports.
type Session struct {
	Router   RouterCommand
	Progress io.Writer
	OutDir   string
	Plots    bool
	// Results are filled in by Run.
	Results []Result
	// Skipped names the configurations left out, with why.
	Skipped []string
	// Namespaces are the names the run used (all removed when Run returns).
	Namespaces []string
}

// Run runs reps repetitions of cfgs and writes results.json, runs.csv,
// summary.csv and summary.txt (and the plots) to OutDir. The namespaces
// are removed on return, whatever happens.
func (s *Session) Run(ctx context.Context, cfgs []Config, reps int) error {
	logf := func(format string, a ...any) {
		if s.Progress != nil {
			fmt.Fprintf(s.Progress, format+"\n", a...)
		}
	}
	var paths []Config
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			return err
		}
		if len(c.Paths) > 0 {
			paths = append(paths, c)
		}
	}
	var extras []time.Duration
	for _, c := range paths {
		if len(c.Paths) > len(extras) {
			extras = c.Paths
		}
	}
	for _, c := range paths {
		for i, e := range c.Paths {
			if extras[i] != e {
				return fmt.Errorf("lab: configurations ask for different extra paths (%v, %v)", extras, c.Paths)
			}
		}
	}
	topo, err := NewTopology(ctx, extras)
	if err != nil {
		return err
	}
	s.Namespaces = topo.Namespaces()
	defer topo.Close()
	logf("aqmlab: namespaces %s-{%s}", topo.ID, strings.Join(trimAll(topo.Namespaces(), topo.ID+"-"), ","))
	for _, l := range topo.Offloads {
		logf("aqmlab: offloads %s", l)
	}
	for _, c := range cfgs {
		if c.Offload.Veth {
			for _, l := range topo.KernelOffloads {
				logf("aqmlab: offloads on (the kernel's own) %s", l)
			}
			break
		}
	}
	tmp, err := os.MkdirTemp("", "aqmlab-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	have, missing := DetectKernel(ctx, topo.Router, "r0", KernelKinds)
	l := &Lab{Router: s.Router, Topo: topo, TmpDir: tmp, Progress: s.Progress, Have: map[string]bool{},
		FlentDir: filepath.Join(s.OutDir, "flent")}
	flentMissing := FlentMissing()
	for _, k := range have {
		l.Have[k] = true
	}
	logf("aqmlab: kernel qdiscs present: %s", strings.Join(have, ", "))
	kinds := make([]string, 0, len(missing))
	for k := range missing {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		logf("aqmlab: kernel anchor %s skipped: %s", k, missing[k])
	}
	var run []Config
	for _, c := range cfgs {
		if c.Flent != "" && len(flentMissing) > 0 {
			why := fmt.Sprintf("%s %s: flent's load needs %s", c.Test, c.Name(), strings.Join(flentMissing, ", "))
			logf("aqmlab: skipped %s", why)
			s.Skipped = append(s.Skipped, why)
			continue
		}
		if k := c.Queue.Kernel; k != nil && !l.Have[k.Kind] {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s %s: the kernel has no %s qdisc (%s)", c.Test, c.Name(), k.Kind, missing[k.Kind]))
			continue
		}
		if c.Queue.Kernel == nil && s.Router.Standin() && c.Queue.Router != "fifo" {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s %s: the stand-in router has only fifo", c.Test, c.Name()))
			continue
		}
		if c.Queue.Kernel == nil && c.Queue.Params != "" && !s.Router.Has("params") {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s %s: the router has no -params flag", c.Test, c.Name()))
			continue
		}
		if c.Offload.GSO != "" && !s.Router.Has("gso") {
			s.Skipped = append(s.Skipped, fmt.Sprintf("%s %s: the router has no -gso flag", c.Test, c.Name()))
			continue
		}
		if c.Queue.Kernel == nil && c.Queue.Limit > 0 && !s.Router.Has("limit") {
			logf("aqmlab: the router has no -limit flag: %s %s runs with the queue's preset limit", c.Test, c.Name())
			c.Queue.Limit = 0
		}
		run = append(run, c)
	}
	logf("aqmlab: %d configurations × %d repetitions, %d skipped", len(run), reps, len(cfgs)-len(run))
	s.Results = l.RunAll(ctx, run, reps)
	if err := WriteReports(s.OutDir, s.Results, s.Skipped, topo, s.Plots); err != nil {
		return err
	}
	logf("aqmlab: reports in %s", s.OutDir)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d runs: %v", len(s.Results), ctx.Err())
	}
	return nil
}

func trimAll(xs []string, prefix string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strings.TrimPrefix(x, prefix)
	}
	return out
}
