package otelexport

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/aqmkit/aqmkit/aqm"
)

// Exporter registers an [aqm.MetricSource]'s metrics as OpenTelemetry
// asynchronous instruments.
type Exporter struct {
	src    aqm.MetricSource
	prefix string
	attrs  attribute.Set
}

// New returns an Exporter of src's metrics under prefix (which may be
// empty), each observation carrying attrs (which may be none).
func New(src aqm.MetricSource, prefix string, attrs ...attribute.KeyValue) *Exporter {
	return &Exporter{src: src, prefix: prefix, attrs: attribute.NewSet(attrs...)}
}

// Unit returns the UCUM unit of an aqm metric name, from its suffix:
// "{packet}", "By", "s", "bit/s", or "" for a count of events.
func Unit(name string) string {
	switch {
	case strings.HasSuffix(name, "_bits_per_second"):
		return "bit/s"
	case strings.HasSuffix(name, "_packets"):
		return "{packet}"
	case strings.HasSuffix(name, "_bytes"):
		return "By"
	case strings.HasSuffix(name, "_seconds"):
		return "s"
	}
	return ""
}

// Name returns the instrument name of the aqm metric name: prefix.name,
// or the bare name without a prefix.
func (e *Exporter) Name(name string) string {
	if e.prefix == "" {
		return name
	}
	return e.prefix + "." + name
}

// Register creates one observable instrument on meter for every metric
// the source lists now, and one callback that observes them all from one
// reading of the source. Unregister the returned registration to stop
// observing. A name the meter refuses (not a valid instrument name) is
// reported in the error and left out; the other instruments are still
// registered, and the registration is nil only if none was.
func (e *Exporter) Register(meter metric.Meter) (metric.Registration, error) {
	type inst struct {
		counter metric.Float64ObservableCounter
		gauge   metric.Float64ObservableGauge
	}
	insts := map[string]inst{}
	var all []metric.Observable
	var errs []error
	for m := range e.src.Metrics() {
		if _, ok := insts[m.Name]; ok {
			continue
		}
		name := e.Name(m.Name)
		desc := metric.WithDescription(fmt.Sprintf("aqmkit %s %s.", m.Kind, m.Name))
		unit := metric.WithUnit(Unit(m.Name))
		var in inst
		var err error
		if m.Kind == aqm.Counter {
			in.counter, err = meter.Float64ObservableCounter(name, desc, unit)
			all = append(all, in.counter)
		} else {
			in.gauge, err = meter.Float64ObservableGauge(name, desc, unit)
			all = append(all, in.gauge)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("otelexport: %s: %w", name, err))
			all = all[:len(all)-1]
			continue
		}
		insts[m.Name] = in
	}
	if len(all) == 0 {
		return nil, errors.Join(errs...)
	}
	set := metric.WithAttributeSet(e.attrs)
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		seen := make(map[string]bool, len(insts))
		for m := range e.src.Metrics() {
			in, ok := insts[m.Name]
			if !ok || seen[m.Name] {
				continue
			}
			seen[m.Name] = true
			if in.counter != nil {
				o.ObserveFloat64(in.counter, m.Value, set)
			} else {
				o.ObserveFloat64(in.gauge, m.Value, set)
			}
		}
		return nil
	}, all...)
	if err != nil {
		errs = append(errs, fmt.Errorf("otelexport: %w", err))
		return nil, errors.Join(errs...)
	}
	return reg, errors.Join(errs...)
}
