package aqm

import "log/slog"

// LogValue makes Stats a [slog.LogValuer], so that
//
//	slog.Info("queue", "stats", q.Stats())
//
// logs one group of its counters and gauges, with the names and in the
// order of [Stats.Metrics]: stats.enqueued_packets=…,
// stats.dropped_early_bytes=…, …, stats.backlog_bytes=…. Values are
// whole numbers, exact up to 2^53.
func (s Stats) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 19)
	for m := range s.Metrics() {
		attrs = append(attrs, slog.Uint64(m.Name, uint64(m.Value)))
	}
	return slog.GroupValue(attrs...)
}
