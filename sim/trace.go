package sim

import (
	"bufio"
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

// DeliveryMTU is the bytes one delivery opportunity of a mahimahi-style
// trace lets leave: one 1500-byte packet.
const DeliveryMTU = 1500

// Trace is a bottleneck capacity that follows a schedule: either a rate in
// steps (piecewise constant, possibly zero for an outage) or a list of
// delivery opportunities, each letting [DeliveryMTU] bytes leave, as in
// the cellular traces of mahimahi and Pantheon. Set it as
// [Config.Capacity]; the link then sends each packet as the trace allows,
// from the start of the run, and repeats the trace when it ends. Runs only
// read a Trace, so runs in parallel may share one.
//
// Two text formats load into a Trace:
//
// A rate trace (extension .rate) has one step per line, "<time> <rate>":
// from that time since the start the rate holds until the next line. The
// time is a Go duration ("0s", "2.5s", "250ms"), the rate is in tc syntax
// ("20mbit", "1.5gbit", "0" for an outage). The first step is at 0s and
// times increase. A last line "<time> end" makes the trace repeat from 0s
// at that time; without it the last rate holds forever. '#' starts a
// comment; blank lines are skipped.
//
//	# 50 Mbit/s, a dip to 10 Mbit/s for 10 s, repeating every 30 s
//	0s  50mbit
//	10s 10mbit
//	20s 50mbit
//	30s end
//
// A delivery trace (extension .mahi, or mahimahi's .up and .down) has one
// integer per line: a millisecond timestamp at which one DeliveryMTU may
// leave; a timestamp repeated n times is n opportunities in that
// millisecond. Timestamps do not decrease; the trace repeats after its last
// timestamp, which must be positive (mahimahi's looping). An opportunity
// unused because nothing is queued is lost; a packet larger than
// DeliveryMTU takes several, and a smaller one leaves the rest of its
// opportunity to the packet behind it.
type Trace struct {
	// Name names the trace in reports (the file's base name for LoadTrace).
	Name string

	steps  []traceStep     // a rate trace
	opps   []time.Duration // a delivery trace: offsets, sorted
	period time.Duration   // repeat after; 0: the last step holds
	cum    []float64       // rate trace: bits at the start of each step
}

type traceStep struct {
	at  time.Duration
	bps float64
}

// StepTrace returns a rate trace from steps (At from the start, RateBps;
// zero rates are outages). The first step must be at 0, times must
// increase, and period, if positive, must follow the last step: the trace
// then repeats. Without a period the last rate, which must be positive,
// holds forever.
func StepTrace(name string, period time.Duration, steps ...RateChange) (*Trace, error) {
	t := &Trace{Name: name, period: period}
	for _, s := range steps {
		t.steps = append(t.steps, traceStep{s.At, s.RateBps})
	}
	return t.build()
}

// check reports whether the trace is well formed; it only reads t.
func (t *Trace) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("sim: trace %s: %s", t.Name, fmt.Sprintf(format, a...))
	}
	if t.opps != nil {
		if t.period <= 0 {
			return bad("the last delivery opportunity must be after 0 ms")
		}
		return nil
	}
	if len(t.steps) == 0 || t.steps[0].at != 0 {
		return bad("the first step must be at 0s")
	}
	pos := false
	for i, s := range t.steps {
		if !(s.bps >= 0) || math.IsInf(s.bps, 0) {
			return bad("step %d: rate %v must be a non-negative number", i, s.bps)
		}
		if i > 0 && s.at <= t.steps[i-1].at {
			return bad("step %d: time %v must be after %v", i, s.at, t.steps[i-1].at)
		}
		pos = pos || s.bps > 0
	}
	if t.period < 0 || (t.period > 0 && t.period <= t.steps[len(t.steps)-1].at) {
		return bad("the end (%v) must follow the last step", t.period)
	}
	if t.period == 0 && !(t.steps[len(t.steps)-1].bps > 0) {
		return bad("without an end the last rate holds forever and must be positive")
	}
	if !pos {
		return bad("has no capacity at all")
	}
	return nil
}

// build checks a new trace and fills in its cumulative capacity, once:
// after it the trace is only read, since the runs that share it (every
// repetition and AQM of a scenario) read it concurrently, and New checks
// it again. It returns t, or nil and the error for a trace that fails
// its checks, for the constructors to return.
func (t *Trace) build() (*Trace, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.opps != nil {
		return t, nil
	}
	t.cum = make([]float64, len(t.steps)+1)
	for i, s := range t.steps {
		end := t.period
		if i+1 < len(t.steps) {
			end = t.steps[i+1].at
		}
		t.cum[i+1] = t.cum[i] + s.bps*end.Seconds() - s.bps*s.at.Seconds()
	}
	return t, nil
}

// ParseRateTrace reads a rate trace (see [Trace]).
func ParseRateTrace(name string, r io.Reader) (*Trace, error) {
	t := &Trace{Name: name}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if t.period > 0 {
			return nil, fmt.Errorf("sim: trace %s line %d: nothing may follow the end", name, line)
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("sim: trace %s line %d: want \"<time> <rate>\" or \"<time> end\", got %q", name, line, text)
		}
		at, err := time.ParseDuration(f[0])
		if err != nil {
			return nil, fmt.Errorf("sim: trace %s line %d: %w", name, line, err)
		}
		if f[1] == "end" {
			if at <= 0 {
				return nil, fmt.Errorf("sim: trace %s line %d: the end must be after 0s", name, line)
			}
			t.period = at
			continue
		}
		rate, err := aqm.ParseRate(f[1])
		if err != nil {
			return nil, fmt.Errorf("sim: trace %s line %d: %w", name, line, err)
		}
		t.steps = append(t.steps, traceStep{at, float64(rate)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return t.build()
}

// ParseDeliveryTrace reads a mahimahi-style delivery trace (see [Trace]).
func ParseDeliveryTrace(name string, r io.Reader) (*Trace, error) {
	t := &Trace{Name: name, opps: []time.Duration{}}
	sc := bufio.NewScanner(r)
	line := 0
	last := int64(-1)
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v < 0 || v > int64(24*time.Hour/time.Millisecond) {
			return nil, fmt.Errorf("sim: trace %s line %d: want a millisecond timestamp in [0, 86400000], got %q", name, line, text)
		}
		if v < last {
			return nil, fmt.Errorf("sim: trace %s line %d: timestamp %d is before %d", name, line, v, last)
		}
		last = v
		t.opps = append(t.opps, time.Duration(v)*time.Millisecond)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.opps) == 0 {
		return nil, fmt.Errorf("sim: trace %s: no delivery opportunities", name)
	}
	t.period = t.opps[len(t.opps)-1]
	return t.build()
}

// LoadTrace reads a trace file: a rate trace if its name ends in .rate, a
// delivery trace if it ends in .mahi, .up or .down, a throughput table if
// it ends in .csv (see [ParseThroughputCSV]; "file.csv:column" picks one
// of several throughput columns). Its Name is the base name without the
// extension (.up and .down stay, since mahimahi's pairs share a base
// name), followed by "-column" when a column was named. An error names
// the file and, for a bad line, the line.
func LoadTrace(path string) (*Trace, error) {
	file, column := splitColumn(path)
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ext := filepath.Ext(file)
	var t *Trace
	// Parse under the path, so that an error names the file.
	switch ext {
	case ".rate":
		t, err = ParseRateTrace(file, f)
	case ".mahi", ".up", ".down":
		t, err = ParseDeliveryTrace(file, f)
	case ".csv":
		t, err = ParseThroughputCSV(file, column, f)
	default:
		return nil, errors.New("sim: " + path + ": a trace file ends in .rate, .mahi, .up, .down or .csv")
	}
	if err != nil {
		return nil, err
	}
	t.Name = traceName(file, column)
	return t, nil
}

// Period is how long the trace runs before it repeats; zero for a rate
// trace whose last rate holds forever.
func (t *Trace) Period() time.Duration { return t.period }

// bitsTo is the capacity from the start to off, in bits.
func (t *Trace) bitsTo(off time.Duration) float64 {
	if off <= 0 {
		return 0
	}
	total, base := 0.0, time.Duration(0)
	if t.period > 0 && t.opps == nil {
		reps := off / t.period
		base = reps * t.period
		total = float64(reps) * t.cum[len(t.steps)]
	}
	if t.opps != nil {
		return float64((&traceLink{t: t}).firstOpp(off)) * DeliveryMTU * 8
	}
	in := off - base
	i := max(0, sort1(t.steps, in))
	return total + t.cum[i] + t.steps[i].bps*(in-t.steps[i].at).Seconds()
}

// sort1 returns the index of the step in effect at in (the last with at ≤ in).
func sort1(steps []traceStep, in time.Duration) int {
	i, found := slices.BinarySearchFunc(steps, in, func(s traceStep, d time.Duration) int {
		switch {
		case s.at < d:
			return -1
		case s.at > d:
			return 1
		}
		return 0
	})
	if found {
		return i
	}
	return i - 1
}

// BitsBetween is the capacity from `from` to `to` after the start, in
// bits.
func (t *Trace) BitsBetween(from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	return t.bitsTo(to) - t.bitsTo(from)
}

// MeanBps is the mean capacity over the first d of the run.
func (t *Trace) MeanBps(d time.Duration) float64 { return t.BitsBetween(0, d) / d.Seconds() }

// WindowBps returns the lowest and highest mean capacity over consecutive
// windows of length w in the first d of the run (of d itself when it is
// shorter than w).
func (t *Trace) WindowBps(w, d time.Duration) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	w = min(w, d)
	for a := time.Duration(0); a+w <= d; a += w {
		r := t.BitsBetween(a, a+w) / w.Seconds()
		lo, hi = min(lo, r), max(hi, r)
	}
	return lo, hi
}

// traceLink is the link's state under a Trace: where in a delivery trace
// the link is, and what is left of the current opportunity.
type traceLink struct {
	t       *Trace
	k       int64 // the current opportunity (global index over repetitions)
	credit  int   // bytes left in it
	started bool
}

// oppAt is the instant (offset from the start) of global opportunity k.
func (l *traceLink) oppAt(k int64) time.Duration {
	n := int64(len(l.t.opps))
	return time.Duration(k/n)*l.t.period + l.t.opps[k%n]
}

// firstOpp is the global index of the first opportunity at or after off,
// which is also the number of opportunities before off.
func (l *traceLink) firstOpp(off time.Duration) int64 {
	if off <= 0 {
		return 0
	}
	n := int64(len(l.t.opps))
	reps := off / l.t.period
	in := off - reps*l.t.period
	if in == 0 {
		// The last opportunities of the previous repetition are at its
		// end, which is off.
		reps, in = reps-1, l.t.period
	}
	i, _ := slices.BinarySearch(l.t.opps, in)
	return int64(reps)*n + int64(i)
}

// txEnd returns when a packet of size bytes that starts at now has left.
func (l *traceLink) txEnd(now aqm.Time, size uint32) aqm.Time {
	off := now.Sub(epoch)
	if l.t.opps != nil {
		switch {
		case !l.started:
			l.started, l.k, l.credit = true, l.firstOpp(off), DeliveryMTU
		case l.credit == 0 || l.oppAt(l.k) < off:
			// The current opportunity is used up, or passed while the
			// link was idle (what it had left is lost).
			l.k, l.credit = max(l.k+1, l.firstOpp(off)), DeliveryMTU
		}
		need := int(size)
		for need > l.credit {
			need -= l.credit
			l.k++
			l.credit = DeliveryMTU
		}
		l.credit -= need
		return epoch.Add(l.oppAt(l.k))
	}
	// A rate trace: the instant by which the capacity since off covers
	// the packet, found by bisection on the monotone capacity function.
	want := l.t.bitsTo(off) + float64(size)*8
	lo, hi := off, off+time.Millisecond
	for l.t.bitsTo(hi) < want {
		lo, hi = hi, off+2*(hi-off)
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if l.t.bitsTo(mid) < want {
			lo = mid
		} else {
			hi = mid
		}
	}
	return epoch.Add(hi)
}

// pingObserver is a queue that wants the probe flows' round-trip times
// (the autorate scenario's shaped path).
type pingObserver interface {
	observePing(now aqm.Time, flow, slot int32, rtt time.Duration)
}

// initHooks sets up the trace-driven link, the wake-ups of a queue that
// paces itself, and the probe observer, for New.
func (s *Sim) initHooks() {
	if s.cfg.Capacity != nil {
		s.capLink = &traceLink{t: s.cfg.Capacity}
	}
	s.paced, _ = s.q.(aqm.Paced)
	s.pingObs, _ = s.q.(pingObserver)
	if s.pktObs, _ = s.q.(packetObserver); s.pktObs != nil {
		s.pktObs.setPacketInfo(s.packetInfo)
	}
}

// txEnd is when a packet of size bytes that starts now has left the link.
func (s *Sim) txEnd(size uint32) aqm.Time {
	if s.capLink != nil {
		return s.capLink.txEnd(s.now, size)
	}
	return s.now + aqm.Time(float64(size)*s.nsPerByte+0.5)
}

// wakePaced schedules the link's next look at a queue that holds packets
// back (aqm.Paced): without it the link would wait for the next arrival.
func (s *Sim) wakePaced() {
	if s.paced == nil || s.pacedPending {
		return
	}
	if t := s.paced.NextDeparture(s.now); t > s.now {
		s.pacedPending = true
		s.ag.push(event{at: t, kind: evPaced})
	}
}

// pacedWake is the wake-up event of wakePaced.
func (s *Sim) pacedWake() {
	s.pacedPending = false
	if !s.busy {
		s.startTx()
	}
}

// observePing hands a probe's round-trip time to the queue if it wants it.
func (s *Sim) observePing(f *flow, slot int32, rtt time.Duration) {
	if s.pingObs != nil {
		s.pingObs.observePing(s.now, f.id, slot, rtt)
	}
}

func (t *Trace) validate(bad func(field string, v any, rule string)) {
	if err := t.check(); err != nil {
		bad("Capacity", t.Name, err.Error())
	}
}
