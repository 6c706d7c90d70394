package promexport

import (
	"iter"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// TestCollectFront protects the mapping from aqm metrics to Prometheus
// samples: names with the prefix (and _total on counters), types, values
// and constant labels, on a real front that carried a few packets.
func TestCollectFront(t *testing.T) {
	q, err := fifo.New[int](fifo.Config{LimitPackets: 3}, nil)
	require.NoError(t, err)
	f, err := front.New(q, clock.NewManual(1), front.Config{Rate: 8 * aqm.Mbit})
	require.NoError(t, err)
	for i := range 5 { // the last two find the queue full
		_, err := f.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100}})
		require.NoError(t, err)
	}
	p, ok := tryOne(f)
	require.True(t, ok)
	require.Equal(t, 0, p)

	c := New(f, "aqm", prometheus.Labels{"link": "wan"})
	const want = `
# HELP aqm_enqueued_packets_total aqmkit counter enqueued_packets.
# TYPE aqm_enqueued_packets_total counter
aqm_enqueued_packets_total{link="wan"} 3
# HELP aqm_sent_bytes_total aqmkit counter sent_bytes.
# TYPE aqm_sent_bytes_total counter
aqm_sent_bytes_total{link="wan"} 100
# HELP aqm_dropped_overlimit_packets_total aqmkit counter dropped_overlimit_packets.
# TYPE aqm_dropped_overlimit_packets_total counter
aqm_dropped_overlimit_packets_total{link="wan"} 2
# HELP aqm_backlog_bytes aqmkit gauge backlog_bytes.
# TYPE aqm_backlog_bytes gauge
aqm_backlog_bytes{link="wan"} 200
# HELP aqm_front_rate_bits_per_second aqmkit gauge front_rate_bits_per_second.
# TYPE aqm_front_rate_bits_per_second gauge
aqm_front_rate_bits_per_second{link="wan"} 8e+06
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"aqm_enqueued_packets_total", "aqm_sent_bytes_total", "aqm_dropped_overlimit_packets_total",
		"aqm_backlog_bytes", "aqm_front_rate_bits_per_second"))

	// Every metric of the source is exposed, and a pedantic registry (which
	// checks descriptors against samples) accepts the collector.
	n := 0
	for range f.Metrics() {
		n++
	}
	require.Equal(t, n, testutil.CollectAndCount(c))
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, n)
}

// tryOne takes one packet from the front without blocking.
func tryOne(f *front.Front[int]) (int, bool) {
	buf := make([]aqm.Packet[int], 1)
	n, _ := f.TryDequeueBatch(buf)
	return buf[0].Payload, n == 1
}

// TestCollectEdgeCases protects the collector against awkward sources: a
// name listed twice keeps its first value, no prefix means the bare name,
// and an invalid name (not UTF-8) is an error at registration, not a
// panic.
func TestCollectEdgeCases(t *testing.T) {
	src := metrics{
		{Name: "depth_packets", Kind: aqm.Gauge, Value: 4},
		{Name: "depth_packets", Kind: aqm.Gauge, Value: 9},
		{Name: "hits", Kind: aqm.Counter, Value: 2},
	}
	c := New(src, "", nil)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP depth_packets aqmkit gauge depth_packets.
# TYPE depth_packets gauge
depth_packets 4
# HELP hits_total aqmkit counter hits.
# TYPE hits_total counter
hits_total 2
`)))
	bad := New(metrics{{Name: "bad\xffname", Kind: aqm.Gauge, Value: 1}}, "aqm", nil)
	require.Error(t, prometheus.NewPedanticRegistry().Register(bad))
}

// metrics is a fixed aqm.MetricSource.
type metrics []aqm.Metric

func (ms metrics) Metrics() iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		for _, m := range ms {
			if !yield(m) {
				return
			}
		}
	}
}
