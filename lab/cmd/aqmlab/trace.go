package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/lab"
)

// traceFlags are the flags that make the autorate test replay recorded
// capacity traces.
type traceFlags struct {
	files   string
	offset  time.Duration
	scale   float64
	passive bool
}

func (t *traceFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&t.files, "trace", "", "autorate: replay these capacity traces in the moving bottleneck, comma-separated, each its own test "+
		"(mahimahi .up/.down/.mahi, .rate, or a throughput .csv, FILE.csv:COLUMN to pick a column); a bare name not in the "+
		"working directory is looked up in $"+lab.TraceDirEnv+" or ../shared/traces beside the repository")
	fs.DurationVar(&t.offset, "trace-offset", 0, "where in each trace the load starts (the trace repeats)")
	fs.Float64Var(&t.scale, "trace-scale", 1, "multiply every rate of the traces by this `factor`")
	fs.BoolVar(&t.passive, "autorate-passive", false, "autorate: add a row whose router takes its delay samples from the forwarded TCP flows' "+
		"timestamps, with no reflector")
}

// apply loads the traces into o; the flags need the autorate test.
func (t *traceFlags) apply(o *lab.Options, tests []string) error {
	if t.files == "" && !t.passive {
		return nil
	}
	if !slices.Contains(tests, "autorate") {
		return fmt.Errorf("-trace and -autorate-passive apply to the autorate test, which is not asked for")
	}
	if !(t.scale > 0) || t.scale > 1000 {
		return fmt.Errorf("-trace-scale %v: want a factor in (0, 1000]", t.scale)
	}
	if t.offset < 0 {
		return fmt.Errorf("-trace-offset %v: must not be negative", t.offset)
	}
	o.AutoratePassive = t.passive
	o.TraceOffset, o.TraceScale = t.offset, t.scale
	if t.files == "" {
		return nil
	}
	for _, f := range strings.Split(t.files, ",") {
		tr, err := lab.LoadTrace(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("-trace: %v", err)
		}
		o.Traces = append(o.Traces, tr)
	}
	return nil
}
