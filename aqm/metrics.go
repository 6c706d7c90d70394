package aqm

import "iter"

// MetricKind says how a [Metric] behaves over time.
type MetricKind uint8

const (
	// Counter only grows (until the queue is rebuilt): packets, bytes, drops.
	Counter MetricKind = iota
	// Gauge goes up and down: queue length, backlog, a probability.
	Gauge
)

// String returns "counter" or "gauge".
func (k MetricKind) String() string {
	if k == Gauge {
		return "gauge"
	}
	return "counter"
}

// Metric is one named value of a queue's statistics, for exporters:
// expvar, Prometheus, OpenTelemetry, logs. Names are lower_snake_case in
// the words of Linux tc's statistics ("sent_packets", "backlog_bytes",
// "dropped_early_packets"); units are in the name. Counters count from the
// queue's construction.
type Metric struct {
	Name  string
	Kind  MetricKind
	Value float64
}

// MetricSource is anything that lists its values as [Metric]s: [Stats],
// every queue of this module (its Stats, then its Detail's, from one
// snapshot taken when Metrics is called), every queue's Detail type, and
// the fronts. A name means one thing wherever it appears.
type MetricSource interface {
	Metrics() iter.Seq[Metric]
}

// Metrics lists every counter and gauge of s, in a fixed order:
// enqueued, sent, marked, the total drops (dropped_packets, dropped_bytes)
// and the drops by reason (each in packets and bytes), the backlog and the
// largest packet seen. The names are those in the tags beside the fields
// (a Count's name followed by _packets and _bytes).
func (s Stats) Metrics() iter.Seq[Metric] {
	return func(yield func(Metric) bool) {
		counts := [...]Count{s.Enqueued, s.Dequeued, s.Marked, s.Dropped(), s.DroppedOverlimit,
			s.DroppedEarly, s.DroppedOverload, s.DroppedQueued}
		for i, c := range counts {
			if !yield(Metric{countNames[i][0], Counter, float64(c.Packets)}) ||
				!yield(Metric{countNames[i][1], Counter, float64(c.Bytes)}) {
				return
			}
		}
		_ = yield(Metric{"backlog_packets", Gauge, float64(s.Len)}) &&
			yield(Metric{"backlog_bytes", Gauge, float64(s.Backlog)}) &&
			yield(Metric{"max_packet_bytes", Gauge, float64(s.MaxSize)})
	}
}

// countNames are the names of the counts Stats.Metrics lists, in packets
// and in bytes, written out so that listing them builds no string.
var countNames = [...][2]string{
	{"enqueued_packets", "enqueued_bytes"},
	{"sent_packets", "sent_bytes"},
	{"marked_packets", "marked_bytes"},
	{"dropped_packets", "dropped_bytes"},
	{"dropped_overlimit_packets", "dropped_overlimit_bytes"},
	{"dropped_early_packets", "dropped_early_bytes"},
	{"dropped_overload_packets", "dropped_overload_bytes"},
	{"dropped_queued_packets", "dropped_queued_bytes"},
}
