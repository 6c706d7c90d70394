// Package otelexport exposes any [aqm.MetricSource] (a *front.Front, a
// *front.Sharded, a queue's Stats or Detail, the gVisor qdisc, the wgtun
// wrapper) as OpenTelemetry metrics, through asynchronous instruments of
// go.opentelemetry.io/otel/metric:
//
//	f, _ := front.New(q, nil, front.Config{Rate: 95 * aqm.Mbit})
//	meter := otel.Meter("example.com/router")
//	reg, err := otelexport.New(f, "aqm", attribute.String("queue", "wan")).Register(meter)
//	defer reg.Unregister()
//
// Each [aqm.Metric] the source lists when Register is called becomes one
// instrument named prefix.name (aqm.sent_packets, aqm.backlog_bytes): an
// observable counter for an [aqm.Counter], an observable gauge for an
// [aqm.Gauge], both float64. The unit comes from the name's suffix, in
// UCUM as OpenTelemetry asks: _packets is {packet}, _bytes is By,
// _seconds is s, _bits_per_second is bit/s; other names have none. Every
// observation carries the attributes given to New, which name the source
// (one queue, one link), so that several sources can share one meter.
//
// One callback reads the source once per collection, on the collecting
// goroutine, so the source must be safe for concurrent use: a front is
// (its Metrics takes a snapshot under its lock), a bare queue used by
// other goroutines is not. A name the source lists twice keeps its first
// value, as in package promexport; a metric the source only starts to list
// after Register is not exported.
package otelexport
