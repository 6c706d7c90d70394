package promexport

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aqmkit/aqmkit/aqm"
)

// Collector is a [prometheus.Collector] over an [aqm.MetricSource].
type Collector struct {
	src    aqm.MetricSource
	prefix string
	labels prometheus.Labels

	mu    sync.Mutex
	descs map[string]*prometheus.Desc // by aqm metric name
}

// New returns a Collector that exposes src's metrics under prefix (which
// may be empty) with the given constant labels (which may be nil). Names
// that are not valid Prometheus names are reported as errors at scrape or
// registration time, never as a panic.
func New(src aqm.MetricSource, prefix string, constLabels prometheus.Labels) *Collector {
	return &Collector{src: src, prefix: prefix, labels: constLabels, descs: map[string]*prometheus.Desc{}}
}

// desc returns the descriptor of the aqm metric m, made once.
func (c *Collector) desc(m aqm.Metric) *prometheus.Desc {
	key := m.Name + "/" + m.Kind.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.descs[key]; ok {
		return d
	}
	name := m.Name
	if c.prefix != "" {
		name = c.prefix + "_" + name
	}
	if m.Kind == aqm.Counter {
		name += "_total"
	}
	d := prometheus.NewDesc(name, "aqmkit "+m.Kind.String()+" "+m.Name+".", nil, c.labels)
	c.descs[key] = d
	return d
}

// Describe sends the descriptors of the metrics the source lists now.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

// Collect reads the source once and sends one sample per metric; a name
// the source lists twice keeps its first value.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	seen := map[string]bool{}
	for m := range c.src.Metrics() {
		if seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		d := c.desc(m)
		vt := prometheus.GaugeValue
		if m.Kind == aqm.Counter {
			vt = prometheus.CounterValue
		}
		s, err := prometheus.NewConstMetric(d, vt, m.Value)
		if err != nil {
			s = prometheus.NewInvalidMetric(d, err)
		}
		ch <- s
	}
}
