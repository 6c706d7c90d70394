package otelexport

import (
	"context"
	"iter"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// point is one collected value.
type point struct {
	value     float64
	unit      string
	monotonic bool // a cumulative monotonic sum, as an observable counter gives
	gauge     bool
	attrs     attribute.Set
}

// collect reads every metric from the reader, by instrument name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]point{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[float64]:
				require.Len(t, d.DataPoints, 1, m.Name)
				out[m.Name] = point{value: d.DataPoints[0].Value, unit: m.Unit, attrs: d.DataPoints[0].Attributes,
					monotonic: d.IsMonotonic && d.Temporality == metricdata.CumulativeTemporality}
			case metricdata.Gauge[float64]:
				require.Len(t, d.DataPoints, 1, m.Name)
				out[m.Name] = point{value: d.DataPoints[0].Value, unit: m.Unit, attrs: d.DataPoints[0].Attributes, gauge: true}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// TestRegisterFront protects the mapping from aqm metrics to OpenTelemetry
// instruments on a real front that carried packets: one instrument per
// metric, named prefix.name, a monotonic cumulative sum for each counter
// and a gauge for each gauge, its unit from the name's suffix, the
// source's attributes on every point, and values equal to the source's at
// each collection.
func TestRegisterFront(t *testing.T) {
	q, err := fifo.New[int](fifo.Config{LimitPackets: 3}, nil)
	require.NoError(t, err)
	f, err := front.New(q, clock.NewManual(1), front.Config{Rate: 8 * aqm.Mbit})
	require.NoError(t, err)
	for i := range 5 { // the last two find the queue full
		_, err := f.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100}})
		require.NoError(t, err)
	}

	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	attrs := attribute.NewSet(attribute.String("queue", "wan"))
	reg, err := New(f, "aqm", attribute.String("queue", "wan")).Register(mp.Meter("test"))
	require.NoError(t, err)

	check := func() {
		got := collect(t, r)
		n := 0
		for m := range f.Metrics() {
			n++
			p, ok := got["aqm."+m.Name]
			require.True(t, ok, m.Name)
			require.Equal(t, m.Value, p.value, m.Name)
			require.Equal(t, m.Kind == aqm.Counter, p.monotonic, m.Name)
			require.Equal(t, m.Kind == aqm.Gauge, p.gauge, m.Name)
			require.Equal(t, Unit(m.Name), p.unit, m.Name)
			require.True(t, attrs.Equals(&p.attrs), m.Name)
		}
		require.Len(t, got, n)
	}
	check()
	got := collect(t, r)
	require.Equal(t, 3.0, got["aqm.enqueued_packets"].value)
	require.Equal(t, 2.0, got["aqm.dropped_overlimit_packets"].value)
	require.Equal(t, 300.0, got["aqm.backlog_bytes"].value)
	require.Equal(t, "By", got["aqm.backlog_bytes"].unit)
	require.Equal(t, "bit/s", got["aqm.front_rate_bits_per_second"].unit)
	require.Equal(t, 8e6, got["aqm.front_rate_bits_per_second"].value)
	require.Equal(t, "", got["aqm.front_wakeups"].unit)

	// The values follow the source from one collection to the next.
	buf := make([]aqm.Packet[int], 2)
	n, _ := f.TryDequeueBatch(buf)
	require.Positive(t, n)
	check()
	require.Equal(t, float64(n), collect(t, r)["aqm.sent_packets"].value)

	require.NoError(t, reg.Unregister())
	require.Empty(t, collect(t, r))
}

// TestRegisterEdgeCases protects the exporter against awkward sources: a
// name listed twice keeps its first value, no prefix means the bare name,
// an invalid name is an error that leaves the other instruments
// registered, and a source with only invalid names registers nothing.
func TestRegisterEdgeCases(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	meter := mp.Meter("test")

	src := metrics{
		{Name: "depth_packets", Kind: aqm.Gauge, Value: 4},
		{Name: "depth_packets", Kind: aqm.Gauge, Value: 9},
		{Name: "hits", Kind: aqm.Counter, Value: 2},
		{Name: "sojourn_seconds", Kind: aqm.Gauge, Value: 0.25},
		{Name: "bad name!", Kind: aqm.Gauge, Value: 1},
	}
	reg, err := New(src, "").Register(meter)
	require.Error(t, err)
	require.ErrorContains(t, err, "bad name!")
	require.NotNil(t, reg)
	got := collect(t, r)
	require.Len(t, got, 3)
	require.Equal(t, 4.0, got["depth_packets"].value)
	require.Equal(t, "{packet}", got["depth_packets"].unit)
	require.Equal(t, 2.0, got["hits"].value)
	require.True(t, got["hits"].monotonic)
	require.Equal(t, "s", got["sojourn_seconds"].unit)
	hits := got["hits"]
	require.Equal(t, 0, hits.attrs.Len())
	require.NoError(t, reg.Unregister())

	reg, err = New(metrics{{Name: "1bad", Kind: aqm.Counter}}, "").Register(meter)
	require.Error(t, err)
	require.Nil(t, reg)
}

// TestUnit protects the suffix-to-unit table, including a name whose
// suffix contains another's (_bits_per_second ends in neither _bytes nor
// _seconds, but must not be read as a count).
func TestUnit(t *testing.T) {
	for name, want := range map[string]string{
		"sent_packets": "{packet}", "backlog_bytes": "By", "delay_seconds": "s",
		"rate_bits_per_second": "bit/s", "wakeups": "", "probability": "", "closed": "",
	} {
		require.Equal(t, want, Unit(name), name)
	}
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
