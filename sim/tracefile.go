package sim

import (
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
)

// ParseThroughputCSV reads a table of measured throughput as a rate trace:
// a header row, then one row per interval. The time is the column "time"
// (a timestamp such as 2024-05-27T11:18:46.964511, RFC 3339 with or without
// a zone, or seconds as a number) or "seq_num" (an interval index, one
// second each); the rate is the column named by column, or, when column is
// empty, the only column whose name ends in "_mbps" (Mbit/s). Row i's rate
// holds from its time until row i+1's (measured from the first row), and
// the trace repeats one interval (the last gap between rows) after the last
// row. Rows must go forward in time; empty and negative rates are refused.
//
// Such tables (nuttcp's intervals, the 5Gophers per-second throughput) hold
// what TCP achieved, not the capacity: use them as a capacity's shape.
func ParseThroughputCSV(name, column string, r io.Reader) (*Trace, error) {
	bad := func(line int, format string, a ...any) error {
		return fmt.Errorf("sim: trace %s line %d: %s", name, line, fmt.Sprintf(format, a...))
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("sim: trace %s: no header row: %w", name, err)
	}
	tcol, rcol, seq := -1, -1, false
	var rates []string
	for i, h := range head {
		h = strings.TrimSpace(h)
		switch {
		case h == "time":
			tcol = i
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
		return nil, bad(1, "no time column (want \"time\" or \"seq_num\") in %q", strings.Join(head, ","))
	case column != "" && rcol < 0:
		return nil, bad(1, "no column %q (columns: %s)", column, strings.Join(head, ", "))
	case column == "" && len(rates) != 1:
		return nil, bad(1, "want one throughput column ending in _mbps, found %d; name one as file.csv:column (columns: %s)",
			len(rates), strings.Join(head, ", "))
	}
	t := &Trace{Name: name}
	var first time.Time
	var firstSeq int64
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil { // a csv.ParseError names the line
			return nil, fmt.Errorf("sim: trace %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if tcol >= len(rec) || rcol >= len(rec) {
			return nil, bad(line, "has %d fields, want at least %d", len(rec), max(tcol, rcol)+1)
		}
		var at time.Duration
		ts := strings.TrimSpace(rec[tcol])
		if seq {
			v, err := strconv.ParseInt(ts, 10, 64)
			if err != nil || v < 0 || v > 1e6 {
				return nil, bad(line, "seq_num %q is not an integer in [0, 1000000]", ts)
			}
			if n == 0 {
				firstSeq = v
			}
			at = time.Duration(v-firstSeq) * time.Second
		} else {
			tv, err := parseStamp(ts)
			if err != nil {
				return nil, bad(line, "time %q is neither a timestamp nor seconds", ts)
			}
			if n == 0 {
				first = tv
			}
			at = tv.Sub(first)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[rcol]), 64)
		if err != nil || !(v >= 0) || v > 1e7 {
			return nil, bad(line, "rate %q is not a number of Mbit/s in [0, 1e7]", rec[rcol])
		}
		if k := len(t.steps); k > 0 && at <= t.steps[k-1].at {
			return nil, bad(line, "time %v after the first row is not after the previous row's %v", at, t.steps[k-1].at)
		}
		t.steps = append(t.steps, traceStep{at, v * 1e6})
	}
	switch k := len(t.steps); k {
	case 0:
		return nil, fmt.Errorf("sim: trace %s: no rows", name)
	case 1:
		t.period = time.Second
		if !seq {
			return nil, fmt.Errorf("sim: trace %s: one row gives no interval; want at least two", name)
		}
	default:
		t.period = 2*t.steps[k-1].at - t.steps[k-2].at
	}
	return t.build()
}

// parseStamp reads a timestamp, with or without a zone, or seconds.
func parseStamp(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || v > 1e10 {
		return time.Time{}, errors.New("bad time")
	}
	return time.Unix(0, 0).Add(time.Duration(v * 1e9)), nil
}

// splitColumn splits "file.csv:column" into the file and the column; any
// other path is returned whole.
func splitColumn(path string) (file, column string) {
	i := strings.LastIndex(path, ".csv:")
	if i < 0 {
		return path, ""
	}
	if _, err := os.Stat(path); err == nil {
		return path, "" // a file whose name holds ".csv:"
	}
	return path[:i+4], path[i+5:]
}

// traceName is a trace's report name: the file's base name without its
// extension (but with mahimahi's .up or .down), and the column if one was
// picked.
func traceName(file, column string) string {
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	if ext := filepath.Ext(file); ext == ".up" || ext == ".down" {
		name += ext // mahimahi's pairs share a base name
	}
	if column != "" {
		name += "-" + strings.TrimSuffix(column, "_mbps")
	}
	return name
}

// EmptyQueueWait returns the q-quantile (0 < q < 1) of the time a lone
// packet waits for the link with nothing queued ahead of it, over one
// period of the trace (a minute if it does not repeat) at a uniformly
// random arrival instant: what a sparse probe sees at best. In a delivery
// trace it waits for the next opportunity; in a rate trace for the end of
// the outage (zero rate) it arrived in, and for nothing otherwise. With
// gaps g_i over a span D, P(wait > x) = Σ max(0, g_i − x) / D. No queue or
// controller brings a probe's delay quantile below this floor.
func (t *Trace) EmptyQueueWait(q float64) time.Duration {
	span := traceSpan(t)
	var gaps []time.Duration
	if t.opps != nil {
		prev := time.Duration(0) // the previous repetition's last opportunity
		for _, o := range t.opps {
			if o > prev {
				gaps = append(gaps, o-prev)
			}
			prev = o
		}
	} else {
		var run time.Duration
		for i, s := range t.steps {
			end := span
			if i+1 < len(t.steps) {
				end = min(t.steps[i+1].at, span)
			}
			if s.at >= span {
				break
			}
			if s.bps == 0 {
				run += end - s.at
				continue
			}
			if run > 0 {
				gaps = append(gaps, run)
				run = 0
			}
		}
		if run > 0 {
			if t.period > 0 && len(gaps) > 0 && t.steps[0].bps == 0 {
				gaps[0] += run // the outage wraps round to the start
			} else {
				gaps = append(gaps, run)
			}
		}
	}
	if len(gaps) == 0 || !(q > 0 && q < 1) {
		return 0
	}
	// Over the k longest gaps (g_1 ≥ … ≥ g_k), P(wait > x) = (S_k − k·x)/D
	// for x in [g_{k+1}, g_k]: the quantile is x = (S_k − (1−q)·D)/k for
	// the first k where that x is at least g_{k+1}.
	slices.Sort(gaps)
	slices.Reverse(gaps)
	budget := (1 - q) * float64(span)
	var sum float64
	for k, g := range gaps {
		sum += float64(g)
		x := (sum - budget) / float64(k+1)
		next := 0.0
		if k+1 < len(gaps) {
			next = float64(gaps[k+1])
		}
		if x >= next {
			return time.Duration(math.Round(max(x, 0)))
		}
	}
	return 0
}

// floorMs is the trace's empty-queue wait at q, in ms, for reports.
func (t *Trace) floorMs(q float64) float64 { return float64(t.EmptyQueueWait(q)) / 1e6 }
