// Package promexport exposes any [aqm.MetricSource] (a *front.Front, a
// *front.Sharded, a queue's Stats or Detail, the wgtun wrapper) as
// Prometheus metrics, through github.com/prometheus/client_golang:
//
//	f, _ := front.New(q, nil, front.Config{Rate: 95 * aqm.Mbit})
//	prometheus.MustRegister(promexport.New(f, "aqm", prometheus.Labels{"link": "wan"}))
//	http.Handle("/metrics", promhttp.Handler())
//
// Each [aqm.Metric] becomes one sample named prefix_name: a counter
// ([aqm.Counter], with Prometheus's _total suffix, as in
// aqm_sent_packets_total) or a gauge ([aqm.Gauge], as in
// aqm_backlog_bytes), carrying the constant labels. The source is read
// once per scrape, from the scraping goroutine, so it must be safe for
// concurrent use: a front is (its Metrics takes a snapshot under its
// lock), a bare queue used by other goroutines is not.
package promexport
