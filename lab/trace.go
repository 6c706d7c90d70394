package lab

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// A capacity trace drives the moving bottleneck from a recorded link: the
// file is read into one capacity per TraceStep (the mean over each 100 ms),
// and a window of it, scaled, becomes the htb's schedule.
//
// Three formats are read, by extension:
//
//   - .up, .down, .mahi: mahimahi's delivery traces, one integer per line,
//     a millisecond at which one 1500-byte packet may leave (n equal lines
//     are n packets in that millisecond); the trace repeats after its last
//     timestamp.
//   - .rate: "<Go duration> <tc rate>" per line, piecewise constant from
//     0s; a last line "<time> end" makes it repeat at that time, and
//     without one the trace ends one step after its last line. '#' starts
//     a comment.
//   - .csv: a header row, then rows of measured throughput: the time in a
//     column "time" (a timestamp, or seconds) or "seq_num" (one second
//     per index), the rate in the only column whose name ends in "_mbps",
//     or the one named after the file as FILE.csv:COLUMN. Each row holds
//     until the next; the last holds as long as the gap before it.
//
// Every error names the file and, where there is one, the line.

// TraceStep is the resolution of a Trace: each step is the mean capacity
// over this span.
const TraceStep = 100 * time.Millisecond

// MaxTracePeriod bounds a trace's length, and so the memory its steps
// take (864000 steps).
const MaxTracePeriod = 24 * time.Hour

// traceMTU is the bytes one delivery opportunity of a mahimahi trace lets
// leave.
const traceMTU = 1500

// Trace is a recorded capacity at TraceStep resolution, one period long;
// it repeats.
type Trace struct {
	// Name is the file's base name (with its :COLUMN for a CSV).
	Name string
	// Bps holds the mean capacity, in bits per second, of each TraceStep
	// from the start; the last may stand for a shorter span (Period).
	Bps []float64
	// Period is the trace's length, after which it repeats.
	Period time.Duration
}

// TraceDirEnv names the environment variable that points the lab at a
// directory of traces.
const TraceDirEnv = "AQMLAB_TRACES"

// TraceDir returns the directory of shared traces: $AQMLAB_TRACES if set,
// else shared/traces beside the repository holding the working directory
// (the directory with go.work, or the lab module's parent). It reports
// an error saying where it looked when there is none.
func TraceDir() (string, error) {
	if d := os.Getenv(TraceDirEnv); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("lab: $%s=%s is not a directory", TraceDirEnv, d)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := ""
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			root = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if root == "" {
		return "", fmt.Errorf("lab: no traces: $%s is unset and no go.work above %s", TraceDirEnv, wd)
	}
	d := filepath.Join(filepath.Dir(root), "shared", "traces")
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return "", fmt.Errorf("lab: no traces: $%s is unset and %s is not a directory", TraceDirEnv, d)
	}
	return d, nil
}

// LoadTrace reads a trace file; spec is its path, followed for a CSV with
// several throughput columns by ":COLUMN". A bare file name that is not in
// the working directory is looked up in TraceDir.
func LoadTrace(spec string) (*Trace, error) {
	path, column := spec, ""
	if i := strings.LastIndex(spec, ".csv:"); i >= 0 {
		path, column = spec[:i+4], spec[i+5:]
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && filepath.Base(path) == path {
		if dir, derr := TraceDir(); derr == nil {
			f, err = os.Open(filepath.Join(dir, path))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lab: trace: %w", err)
	}
	defer f.Close()
	name := filepath.Base(path)
	if column != "" {
		name += ":" + column
	}
	switch ext := filepath.Ext(path); ext {
	case ".up", ".down", ".mahi":
		return ParseDeliveryTrace(name, f)
	case ".rate":
		return ParseRateTrace(name, f)
	case ".csv":
		return ParseThroughputCSV(name, column, f)
	default:
		return nil, fmt.Errorf("lab: trace %s: want a file ending in .up, .down, .mahi, .rate or .csv", path)
	}
}

func traceErr(name string, line int, format string, a ...any) error {
	return fmt.Errorf("lab: trace %s line %d: %s", name, line, fmt.Sprintf(format, a...))
}

// ParseDeliveryTrace reads a mahimahi delivery trace: each opportunity
// adds 1500 bytes to the TraceStep it falls in; the period is the last
// timestamp.
func ParseDeliveryTrace(name string, r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	var ms []int64
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 || v > MaxTracePeriod.Milliseconds() {
			return nil, traceErr(name, line, "%q is not a millisecond timestamp in [0, %d]", s, MaxTracePeriod.Milliseconds())
		}
		if k := len(ms); k > 0 && v < ms[k-1] {
			return nil, traceErr(name, line, "timestamp %d is before the previous one (%d)", v, ms[k-1])
		}
		ms = append(ms, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lab: trace %s: %w", name, err)
	}
	if len(ms) == 0 || ms[len(ms)-1] == 0 {
		return nil, fmt.Errorf("lab: trace %s: no timestamp after 0 ms, so no period to repeat", name)
	}
	t := &Trace{Name: name, Period: time.Duration(ms[len(ms)-1]) * time.Millisecond}
	step := int64(TraceStep / time.Millisecond)
	n := int((ms[len(ms)-1] + step - 1) / step)
	bits := make([]float64, n)
	for _, v := range ms {
		bits[min(int(v/step), n-1)] += traceMTU * 8
	}
	t.Bps = bits
	for i := range t.Bps {
		t.Bps[i] /= t.stepSpan(i).Seconds()
	}
	return t, nil
}

// stepSpan is the span step i stands for: TraceStep, less for a last step
// cut by the period.
func (t *Trace) stepSpan(i int) time.Duration {
	return min(TraceStep, t.Period-time.Duration(i)*TraceStep)
}

// change is a piecewise-constant rate from an offset on.
type change struct {
	at  time.Duration
	bps float64
}

// fromChanges bins piecewise-constant rates over [0, period) into
// TraceSteps.
func fromChanges(name string, cs []change, period time.Duration) *Trace {
	t := &Trace{Name: name, Period: period}
	n := int((period + TraceStep - 1) / TraceStep)
	t.Bps = make([]float64, n)
	for i, c := range cs {
		end := period
		if i+1 < len(cs) {
			end = min(cs[i+1].at, period)
		}
		for from := c.at; from < end; {
			k := int(from / TraceStep)
			to := min(end, time.Duration(k+1)*TraceStep)
			t.Bps[k] += c.bps * (to - from).Seconds()
			from = to
		}
	}
	for i := range t.Bps {
		t.Bps[i] /= t.stepSpan(i).Seconds()
	}
	return t
}

// ParseRateTrace reads a .rate trace.
func ParseRateTrace(name string, r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	var cs []change
	var period time.Duration
	line := 0
	for sc.Scan() {
		line++
		s, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		if period > 0 {
			return nil, traceErr(name, line, "a line after the end")
		}
		if len(f) != 2 {
			return nil, traceErr(name, line, "want \"<time> <rate>\" or \"<time> end\", have %q", strings.TrimSpace(s))
		}
		at, err := time.ParseDuration(f[0])
		if err != nil || at < 0 || at > MaxTracePeriod {
			return nil, traceErr(name, line, "time %q is not a Go duration in [0s, %v]", f[0], MaxTracePeriod)
		}
		switch k := len(cs); {
		case k == 0 && at != 0:
			return nil, traceErr(name, line, "the first step is at %v, want 0s", at)
		case k > 0 && at <= cs[k-1].at:
			return nil, traceErr(name, line, "time %v is not after the previous step's %v", at, cs[k-1].at)
		}
		if f[1] == "end" {
			if len(cs) == 0 {
				return nil, traceErr(name, line, "end before any step")
			}
			period = at
			continue
		}
		rate, err := aqm.ParseRate(f[1])
		if err != nil {
			return nil, traceErr(name, line, "%v", err)
		}
		cs = append(cs, change{at, float64(rate)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lab: trace %s: %w", name, err)
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("lab: trace %s: no steps", name)
	}
	if period == 0 { // the last step lasts one TraceStep
		period = cs[len(cs)-1].at + TraceStep
	}
	return fromChanges(name, cs, period), nil
}

// ParseThroughputCSV reads a table of measured throughput (column: the
// rate column's name; empty picks the only one ending in "_mbps").
func ParseThroughputCSV(name, column string, r io.Reader) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("lab: trace %s line 1: no header row: %v", name, err)
	}
	tcol, rcol, seq := -1, -1, false
	var rates []string
	for i, h := range head {
		h = strings.TrimSpace(h)
		switch {
		case h == "time":
			tcol, seq = i, false
		case h == "seq_num" && tcol < 0:
			tcol, seq = i, true
		}
		if strings.HasSuffix(h, "_mbps") {
			rates = append(rates, h)
			if column == "" {
				rcol = i
			}
		}
		if column != "" && h == column {
			rcol = i
		}
	}
	switch {
	case tcol < 0:
		return nil, traceErr(name, 1, "no column \"time\" or \"seq_num\"")
	case column != "" && rcol < 0:
		return nil, traceErr(name, 1, "no column %q (have %s)", column, strings.Join(head, ", "))
	case column == "" && len(rates) != 1:
		return nil, traceErr(name, 1, "%d columns end in _mbps (%s): name one as FILE.csv:COLUMN", len(rates), strings.Join(rates, ", "))
	}
	var cs []change
	var first time.Time
	var firstSeq int64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil { // a csv.ParseError names the line
			return nil, fmt.Errorf("lab: trace %s: %v", name, err)
		}
		line, _ := cr.FieldPos(0)
		if tcol >= len(rec) || rcol >= len(rec) {
			return nil, traceErr(name, line, "%d fields, want at least %d", len(rec), max(tcol, rcol)+1)
		}
		ts := strings.TrimSpace(rec[tcol])
		var at time.Duration
		if seq {
			v, err := strconv.ParseInt(ts, 10, 64)
			if err != nil || v < 0 || v > 1e6 {
				return nil, traceErr(name, line, "seq_num %q is not an integer in [0, 1e6]", ts)
			}
			if len(cs) == 0 {
				firstSeq = v
			}
			at = time.Duration(v-firstSeq) * time.Second
		} else {
			tv, err := parseStamp(ts)
			if err != nil {
				return nil, traceErr(name, line, "time %q is neither a timestamp nor seconds", ts)
			}
			if len(cs) == 0 {
				first = tv
			}
			at = tv.Sub(first)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[rcol]), 64)
		if err != nil || !(v >= 0) || v > 1e7 {
			return nil, traceErr(name, line, "rate %q is not Mbit/s in [0, 1e7]", rec[rcol])
		}
		if k := len(cs); k > 0 && at <= cs[k-1].at {
			return nil, traceErr(name, line, "time %v from the first row is not after the previous row's %v", at, cs[k-1].at)
		}
		if at > MaxTracePeriod/2 {
			return nil, traceErr(name, line, "time %v from the first row: a trace may last %v", at, MaxTracePeriod)
		}
		cs = append(cs, change{at, v * 1e6})
	}
	if len(cs) < 2 {
		return nil, fmt.Errorf("lab: trace %s: %d rows, want at least two", name, len(cs))
	}
	k := len(cs)
	period := cs[k-1].at + (cs[k-1].at - cs[k-2].at)
	return fromChanges(name, cs, period), nil
}

// parseStamp reads a CSV time: seconds, or a timestamp with or without a
// zone (a time without one is taken as UTC).
func parseStamp(s string) (time.Time, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 0 && v < 1e12 {
		return time.Unix(0, 0).Add(time.Duration(v * 1e9)), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("bad time")
}

// MeanBps is the trace's mean capacity over its period (NaN without one).
func (t *Trace) MeanBps() float64 {
	if t.Period <= 0 {
		return math.NaN()
	}
	var bits float64
	for i, b := range t.Bps {
		bits += b * t.stepSpan(i).Seconds()
	}
	return bits / t.Period.Seconds()
}

// at returns the capacity at offset off, the trace repeating.
func (t *Trace) at(off time.Duration) float64 {
	off %= t.Period
	return t.Bps[min(int(off/TraceStep), len(t.Bps)-1)]
}

// MinTraceRate is the lowest rate a trace's step is given on the htb,
// which takes no zero rate: a step of no capacity (an outage, a gap
// between delivery opportunities) runs at this rate, one 1500-byte packet
// per 187.5 ms.
const MinTraceRate = 64 * aqm.Kbit

// Schedule returns the capacities of dur of the trace from offset from
// (the trace repeating), each multiplied by scale, as steps from offset
// 0: one per TraceStep, equal neighbours merged, none below MinTraceRate.
// A Trace with no steps or no period gives none.
func (t *Trace) Schedule(from, dur time.Duration, scale float64) []RateStep {
	var out []RateStep
	if t.Period <= 0 || len(t.Bps) == 0 {
		return nil
	}
	for off := time.Duration(0); off < dur; off += TraceStep {
		r := aqm.Rate(max(math.Round(t.at(from+off)*scale/1e3)*1e3, float64(MinTraceRate)))
		if k := len(out); k == 0 || out[k-1].Rate != r {
			out = append(out, RateStep{At: off, Rate: r})
		}
	}
	return out
}

// quantile is the q-quantile (0..1) of xs, which it sorts.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return xs[min(int(q*float64(len(xs))), len(xs)-1)]
}
