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
		counts := [...]struct {
			name string
			c    Count
		}{
			{"enqueued", s.Enqueued},
			{"sent", s.Dequeued},
			{"marked", s.Marked},
			{"dropped", s.Dropped()},
			{"dropped_overlimit", s.DroppedOverlimit},
			{"dropped_early", s.DroppedEarly},
			{"dropped_overload", s.DroppedOverload},
			{"dropped_queued", s.DroppedQueued},
		}
		for _, c := range counts {
			if !yield(Metric{c.name + "_packets", Counter, float64(c.c.Packets)}) ||
				!yield(Metric{c.name + "_bytes", Counter, float64(c.c.Bytes)}) {
				return
			}
		}
		_ = yield(Metric{"backlog_packets", Gauge, float64(s.Len)}) &&
			yield(Metric{"backlog_bytes", Gauge, float64(s.Backlog)}) &&
			yield(Metric{"max_packet_bytes", Gauge, float64(s.MaxSize)})
	}
}
