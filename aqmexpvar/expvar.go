// Package aqmexpvar publishes aqmkit metrics through the standard library's
// expvar package, so that /debug/vars shows a queue's counters and gauges
// as one JSON object:
//
//	f, _ := front.New(q, nil, front.Config{Rate: 95 * aqm.Mbit})
//	aqmexpvar.Publish("wan", f) // {"enqueued_packets": 12, ..., "front_rate_bits_per_second": 95000000}
//
// Any [aqm.MetricSource] can be published: a *front.Front or
// *front.Sharded, whose Metrics method takes a snapshot under the front's
// lock; a value snapshot such as an [aqm.Stats]; or a [Func] that gathers
// values on demand.
//
// # Concurrency
//
// expvar reads a variable from its HTTP handler's goroutine, at any time.
// A queue is not safe for concurrent use, so never publish a function that
// reads a bare queue other goroutines use. A front's Metrics already lists
// its queue's Stats and Detail under its lock; anything else goes through
// that lock too, with front.Front.WithQueue:
//
//	aqmexpvar.Publish("wan_fq", aqmexpvar.Func(func() iter.Seq[aqm.Metric] {
//		var ms []aqm.Metric
//		f.WithQueue(func(q aqm.Queue[Buf]) { ms = slices.Collect(q.(*fq.CoDel[Buf]).Metrics()) })
//		return slices.Values(ms)
//	}))
package aqmexpvar

import (
	"errors"
	"expvar"
	"iter"
	"math"
	"strconv"

	"github.com/aqmkit/aqmkit/aqm"
)

// ErrDuplicate is returned by [Publish] for a name expvar already has.
var ErrDuplicate = errors.New("aqmexpvar: name already published")

// Func adapts a function to [aqm.MetricSource]; it is called on every read.
type Func func() iter.Seq[aqm.Metric]

// Metrics calls f.
func (f Func) Metrics() iter.Seq[aqm.Metric] { return f() }

// Var is an expvar.Var that renders a metric source as a JSON object of
// name → value, in the source's order. A metric that is not a finite number
// is rendered as null; a name that repeats keeps its first value.
type Var struct {
	src aqm.MetricSource
}

// New returns a Var over src, to publish with expvar.Publish or to nest in
// an expvar.Map yourself.
func New(src aqm.MetricSource) *Var { return &Var{src: src} }

// Publish publishes src under name with expvar. Unlike expvar.Publish it
// does not panic on a name already in use: it returns [ErrDuplicate].
func Publish(name string, src aqm.MetricSource) (*Var, error) {
	if src == nil {
		return nil, errors.New("aqmexpvar: nil metric source for " + strconv.Quote(name))
	}
	if expvar.Get(name) != nil {
		return nil, errors.Join(ErrDuplicate, errors.New("aqmexpvar: "+strconv.Quote(name)))
	}
	v := New(src)
	expvar.Publish(name, v)
	return v, nil
}

// String renders the metrics as a JSON object; it implements expvar.Var.
func (v *Var) String() string {
	b := make([]byte, 0, 512)
	b = append(b, '{')
	seen := make(map[string]bool, 32)
	for m := range v.src.Metrics() {
		if seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		if len(seen) > 1 {
			b = append(b, ", "...)
		}
		b = strconv.AppendQuote(b, m.Name)
		b = append(b, ": "...)
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendFloat(b, m.Value, 'g', -1, 64)
		}
	}
	return string(append(b, '}'))
}
