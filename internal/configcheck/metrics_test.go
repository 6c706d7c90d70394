package configcheck

import (
	"fmt"
	"iter"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/iphdr"
	"github.com/aqmkit/aqmkit/keyed"
	"github.com/aqmkit/aqmkit/queues"
)

// statsMetrics are the Stats names from the tags beside its fields; the
// contract lists them by hand (package aqm is below internal/metrics).
var statsMetrics = metrics.Declare[aqm.Stats]("")

// sharedNames are the metric names two types declare on Go fields of
// different names, each with the reason they mean the same thing.
var sharedNames = map[string]string{}

// dimensionless are the gauges that carry no unit and are not
// probabilities, counts of things or booleans, with the reason.
var dimensionless = map[string]string{
	"count":      "CoDel's and COBALT's count, n in the control law (tc's word)",
	"lastcount":  "CoDel's count when the dropping state was last entered (tc's word)",
	"weight":     "RED's w_q, the averaging weight",
	"wrr_credit": "DualPI2's WRR credit, in byte-percent (Linux credit)",
}

// units are the suffixes that give a metric's unit.
var units = []string{"_packets", "_bytes", "_seconds", "_bits_per_second", "_bytes_per_second"}

// banned are words no metric name uses: events lead with a past participle
// (dropped_, marked_, evicted_) rather than count drops or marks,
// probability is spelled out, durations are in seconds, and tc's
// abbreviations that have a plain word are spelled. (A name may still say
// "drop" as a noun after its first word: next_drop_time_seconds.)
var banned = map[string]string{
	"drops": "dropped_", "marks": "marked_", "prob": "probability",
	"ns": "_seconds", "us": "_seconds", "ms": "_seconds", "avg": "average", "dq": "dequeue", "pkts": "_packets",
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// participle reports whether w reads as a past participle: dropped,
// marked, evicted, rewritten, sent.
func participle(w string) bool {
	return strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "en") || w == "sent"
}

var (
	typDuration = reflect.TypeFor[time.Duration]()
	typTime     = reflect.TypeFor[aqm.Time]()
	typRate     = reflect.TypeFor[aqm.Rate]()
	typCount    = reflect.TypeFor[aqm.Count]()
)

// nameProblems returns what is wrong with one metric's description by the
// house rules (STYLE §6), or nothing.
func nameProblems(d metrics.Desc) []string {
	var bad []string
	leaf := d.Leaf
	if !snake.MatchString(d.Name) || !snake.MatchString(leaf) {
		bad = append(bad, "not lower_snake_case")
	}
	words := strings.Split(leaf, "_")
	if strings.HasPrefix(leaf, "memory_") && strings.Contains(leaf, "allocated") {
		bad = append(bad, "memory_bytes is what the configuration preallocated")
	}
	for _, w := range words {
		if use, ok := banned[w]; ok {
			bad = append(bad, fmt.Sprintf("word %q (use %s)", w, use))
		}
	}
	if words[0] == "drop" || words[0] == "mark" {
		bad = append(bad, "leads with drop_ or mark_ (use dropped_, marked_, evicted_)")
	}
	hasUnit := slices.ContainsFunc(units, func(u string) bool { return strings.HasSuffix(leaf, u) })
	switch d.Type {
	case typDuration, typTime:
		if !strings.HasSuffix(leaf, "_seconds") {
			bad = append(bad, "a duration or instant not in _seconds")
		}
	case typRate:
		if !strings.HasSuffix(leaf, "_bits_per_second") {
			bad = append(bad, "a rate not in _bits_per_second")
		}
	default:
		if strings.HasSuffix(leaf, "_seconds") {
			bad = append(bad, "_seconds on a value that is not a time.Duration or aqm.Time")
		}
	}
	k := d.Type.Kind()
	switch d.Kind {
	case aqm.Counter:
		if d.Type != typCount && (k == reflect.Bool || k == reflect.Float32 || k == reflect.Float64) {
			bad = append(bad, "a counter that is not a count")
		}
		switch {
		case strings.HasSuffix(leaf, "_packets") || strings.HasSuffix(leaf, "_bytes"):
			if !participle(words[0]) {
				bad = append(bad, "a counted event that does not lead with a past participle")
			}
		case hasUnit:
			bad = append(bad, "a counter in a unit other than packets or bytes")
		case !strings.HasSuffix(words[len(words)-1], "s"):
			bad = append(bad, "an event count that does not end in a plural noun")
		}
	case aqm.Gauge:
		_, dimless := dimensionless[leaf]
		if k != reflect.Bool && !hasUnit && !dimless && !strings.HasSuffix(leaf, "probability") &&
			!strings.HasSuffix(words[len(words)-1], "s") {
			bad = append(bad, "a gauge with no unit, not a probability, a number of things or a flag")
		}
	}
	return bad
}

// detailOf returns a queue's Detail, by reflection (the registry hands back
// aqm.Queue).
func detailOf(t *testing.T, q any) any {
	t.Helper()
	m := reflect.ValueOf(q).MethodByName("Detail")
	require.True(t, m.IsValid(), "%T has no Detail method", q)
	return m.Call(nil)[0].Interface()
}

func namesOf(seq iter.Seq[aqm.Metric]) []string {
	var ns []string
	for m := range seq {
		ns = append(ns, m.Name)
	}
	return ns
}

// registryQueues builds every queue type of the registry with defaults and
// puts a few packets through it, so that the Details have something to
// say.
func registryQueues(t *testing.T) []aqm.Queue[*front.Buf] {
	t.Helper()
	var qs []aqm.Queue[*front.Buf]
	for _, cfg := range registryConfigs() {
		q, err := queues.FromConfig[*front.Buf](cfg, nil)
		require.NoError(t, err, "%T", cfg)
		for i := range 50 {
			q.Enqueue(aqm.Packet[*front.Buf]{Meta: aqm.Meta{Size: 100 + uint32(i), Hash: uint32(i % 5), ECN: aqm.ECN(i % 4)}},
				aqm.Time(i)*aqm.Time(time.Millisecond))
		}
		q.Dequeue(aqm.Time(100 * time.Millisecond))
		qs = append(qs, q)
	}
	return qs
}

// TestEveryQueueIsAMetricSource protects one source per queue: every queue
// type of the registry is an aqm.MetricSource whose Metrics are its Stats'
// then its Detail's, with no name twice; and a front over it lists all of
// them, then its own, whose front_ names never meet the queue's.
func TestEveryQueueIsAMetricSource(t *testing.T) {
	for _, q := range registryQueues(t) {
		name := fmt.Sprintf("%T", q)
		ms, ok := q.(aqm.MetricSource)
		require.True(t, ok, "%s is not an aqm.MetricSource", name)
		dm, ok := metrics.Of(detailOf(t, q))
		require.True(t, ok, "%s's Detail declares no metrics", name)
		var want []aqm.Metric
		for _, seq := range []iter.Seq[aqm.Metric]{q.Stats().Metrics(), dm} {
			for m := range seq {
				want = append(want, m)
			}
		}
		var got []aqm.Metric
		for m := range ms.Metrics() {
			got = append(got, m)
		}
		require.Equal(t, want, got, "%s: Stats, then Detail", name)
		names := namesOf(ms.Metrics())
		require.Len(t, slices.Compact(slices.Sorted(slices.Values(names))), len(names), "%s: a name twice", name)

		clk := clock.NewManual(0)
		f, err := front.New(q, clk, front.Config{})
		require.NoError(t, err, name)
		fnames := namesOf(f.Metrics())
		own := namesOf(detailSource{f.Detail()}.Metrics())
		require.Equal(t, append(slices.Clone(names), own...), fnames, "%s behind a front: the queue's, then the front's", name)
		require.Len(t, slices.Compact(slices.Sorted(slices.Values(fnames))), len(fnames), "%s behind a front: a name twice", name)
		for _, n := range own {
			require.True(t, strings.HasPrefix(n, "front_"), n)
		}
	}
}

// TestIPFrontListsTheQueue protects the IP front's metrics: the queue's
// Detail is listed for a queue that classifies itself (CAKE) and for one
// wrapped by HashIP, and no name appears twice.
func TestIPFrontListsTheQueue(t *testing.T) {
	qs := registryQueues(t)
	pool, err := front.NewPool(front.PoolConfig{})
	require.NoError(t, err)
	c, err := cake.New[*front.Buf](cake.Config{Seed: 1}, pool.Drop)
	require.NoError(t, err)
	h := iphdr.NewHasherWithKey(1, 2)
	for _, iq := range []front.IPQueue[cake.Info]{c} {
		x, err := front.NewIP(iq, clock.NewManual(0), front.IPConfig{Pool: pool})
		require.NoError(t, err)
		checkIP(t, namesOf(x.Metrics()), namesOf(iq.(aqm.MetricSource).Metrics()), namesOf(detailSource{x.Detail()}.Metrics()))
	}
	for _, q := range qs {
		if _, own := q.(*cake.Queue[*front.Buf]); own {
			continue
		}
		x, err := front.NewIP(front.HashIP(q, h), clock.NewManual(0), front.IPConfig{Pool: pool})
		require.NoError(t, err, "%T", q)
		checkIP(t, namesOf(x.Metrics()), namesOf(q.(aqm.MetricSource).Metrics()), namesOf(detailSource{x.Detail()}.Metrics()))
	}
}

func checkIP(t *testing.T, got, queue, own []string) {
	t.Helper()
	require.Equal(t, append(slices.Clone(queue), own...), got)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), len(got), "a name twice")
	require.Contains(t, own, "front_pool_dropped_packets")
}

// metricType is one type that lists metrics, with a value of it.
type metricType struct {
	name  string
	descs []metrics.Desc
	value aqm.MetricSource
}

// metricTypes returns every type of the library that lists metrics: the
// Detail of every queue type of the registry, the fronts' Details, the
// keyed queue's Detail and aqm.Stats.
func metricTypes(t *testing.T) []metricType {
	t.Helper()
	var ts []metricType
	add := func(v aqm.MetricSource) {
		typ := reflect.TypeOf(v)
		if d, ok := v.(detailSource); ok {
			typ = reflect.TypeOf(d.v)
		}
		ds, ok := metrics.Lookup(typ)
		require.True(t, ok, "%v lists metrics without declaring them through internal/metrics", typ)
		ts = append(ts, metricType{typ.String(), ds, v})
	}
	for _, q := range registryQueues(t) {
		add(detailSource{detailOf(t, q)})
	}
	qs := registryQueues(t)
	f, err := front.New(qs[0], clock.NewManual(0), front.Config{Rate: aqm.Mbit})
	require.NoError(t, err)
	add(detailSource{f.Detail()})
	x, err := front.NewIP(front.HashIP(qs[1], iphdr.NewHasherWithKey(1, 2)), clock.NewManual(0), front.IPConfig{})
	require.NoError(t, err)
	add(detailSource{x.Detail()})
	k, err := keyed.New(func(p aqm.Packet[*front.Buf]) uint32 { return p.Hash },
		func(uint32) (aqm.Queue[*front.Buf], error) { return qs[0], nil }, keyed.Config{Rate: aqm.Mbit})
	require.NoError(t, err)
	add(detailSource{k.Detail()})
	add(qs[2].Stats())
	return ts
}

// TestMetricNames protects the metric names of the whole house (STYLE §6):
// every metric of every queue's Detail, of the fronts and of aqm.Stats is
// declared in a tag, is lower_snake_case with its unit last, leads an event
// with a past participle, spells probability out, gives durations in
// seconds; Metrics lists exactly the declared names; and a name used by
// two types has the same kind and comes from a Go field of the same name,
// or is in sharedNames with the reason.
func TestMetricNames(t *testing.T) {
	type use struct {
		typ, field string
		kind       aqm.MetricKind
	}
	uses := map[string][]use{}
	statsNames := map[string]bool{"dropped_packets": true, "dropped_bytes": true} // Stats.Dropped(), a method
	for _, d := range statsMetrics.Descs() {
		statsNames[d.Name] = true
	}
	for _, mt := range metricTypes(t) {
		declared := map[string]metrics.Desc{}
		for _, d := range mt.descs {
			declared[d.Name] = d
			for _, p := range nameProblems(d) {
				t.Errorf("%s.%s: metric %q: %s", mt.name, d.Path, d.Name, p)
			}
			uses[d.Name] = append(uses[d.Name], use{mt.name + "." + d.Path, d.Field, d.Kind})
			if mt.name != "aqm.Stats" && statsNames[d.Name] {
				t.Errorf("%s.%s: metric %q is also a Stats metric, which a queue's Metrics lists beside it", mt.name, d.Path, d.Name)
			}
		}
		for m := range mt.value.Metrics() {
			d, ok := declared[m.Name]
			if mt.name == "aqm.Stats" && (m.Name == "dropped_packets" || m.Name == "dropped_bytes") {
				assert.Equal(t, aqm.Counter, m.Kind, m.Name)
				continue
			}
			if assert.True(t, ok, "%s lists %q, which no tag declares", mt.name, m.Name) {
				assert.Equal(t, d.Kind, m.Kind, "%s: %s", mt.name, m.Name)
			}
		}
	}
	require.Contains(t, uses, "memory_bytes")
	require.Contains(t, uses, "evicted_overlimit_packets")
	for name, us := range uses {
		for _, u := range us[1:] {
			if u.kind != us[0].kind {
				t.Errorf("metric %q is a %v in %s and a %v in %s", name, us[0].kind, us[0].typ, u.kind, u.typ)
			}
			if _, ok := sharedNames[name]; !ok && u.field != us[0].field {
				t.Errorf("metric %q comes from field %s in %s and %s in %s: one name, one meaning (or say why in sharedNames)",
					name, us[0].field, us[0].typ, u.field, u.typ)
			}
		}
	}
	for name := range sharedNames {
		assert.Greater(t, len(uses[name]), 1, "sharedNames lists %q, which only one type uses", name)
	}
	for name := range dimensionless {
		assert.Contains(t, uses, name, "dimensionless lists %q, which no type uses", name)
	}
}

// TestNameRulesCatch protects TestMetricNames from passing vacuously: each
// rule refuses a name that breaks it and accepts its corrected form.
func TestNameRulesCatch(t *testing.T) {
	u64, f64, dur, bl := reflect.TypeFor[uint64](), reflect.TypeFor[float64](), typDuration, reflect.TypeFor[bool]()
	for _, c := range []struct {
		leaf string
		kind aqm.MetricKind
		typ  reflect.Type
		ok   bool
	}{
		{"drop_overlimit_packets", aqm.Counter, u64, false},
		{"evicted_overlimit_packets", aqm.Counter, u64, true},
		{"ecn_mark_packets", aqm.Counter, u64, false},
		{"ecn_marks_packets", aqm.Counter, u64, false},
		{"marked_codel_packets", aqm.Counter, u64, true},
		{"overflow_packets", aqm.Counter, u64, false},
		{"prob", aqm.Gauge, f64, false},
		{"probability", aqm.Gauge, f64, true},
		{"delay_ns", aqm.Gauge, dur, false},
		{"delay_seconds", aqm.Gauge, dur, true},
		{"delay_seconds", aqm.Gauge, f64, false},
		{"memory_allocated_bytes", aqm.Gauge, reflect.TypeFor[int](), false},
		{"memory_bytes", aqm.Gauge, reflect.TypeFor[int](), true},
		{"drop_cap_hits", aqm.Counter, u64, false},
		{"capped_dequeues", aqm.Counter, u64, true},
		{"new_flow_count", aqm.Counter, u64, false},
		{"activated_flows", aqm.Counter, u64, true},
		{"wrr", aqm.Gauge, f64, false},
		{"overloaded", aqm.Gauge, bl, true},
		{"dropping", aqm.Counter, bl, false},
		{"avg_delay_seconds", aqm.Gauge, dur, false},
		{"Backlog_bytes", aqm.Gauge, reflect.TypeFor[int](), false},
		{"capacity", aqm.Gauge, typRate, false},
		{"capacity_bits_per_second", aqm.Gauge, typRate, true},
		{"wait_seconds", aqm.Counter, dur, false},
		{"drop_next_time_seconds", aqm.Gauge, typTime, false},
		{"next_drop_time_seconds", aqm.Gauge, typTime, true},
	} {
		got := nameProblems(metrics.Desc{Name: c.leaf, Leaf: c.leaf, Kind: c.kind, Type: c.typ, Field: "X"})
		if c.ok {
			assert.Empty(t, got, "%s (%v %v)", c.leaf, c.kind, c.typ)
		} else {
			assert.NotEmpty(t, got, "%s (%v %v) passed", c.leaf, c.kind, c.typ)
		}
	}
}

var allocSink float64

// TestMetricsAllocs protects the snapshot's budget on the cold path: no
// metric name is built per call, so listing a Detail allocates a handful
// of times whatever its size (CAKE's 200 metrics included), a queue's
// Metrics (Stats and Detail) a few more, and a front's a few more again.
func TestMetricsAllocs(t *testing.T) {
	count := func(seq func() iter.Seq[aqm.Metric]) float64 {
		return testing.AllocsPerRun(50, func() {
			for m := range seq() {
				allocSink += m.Value
			}
		})
	}
	for _, q := range registryQueues(t) {
		d := detailSource{detailOf(t, q)}
		assert.LessOrEqual(t, count(d.Metrics), 4.0, "%T's Detail", q)
		assert.LessOrEqual(t, count(q.(aqm.MetricSource).Metrics), 12.0, "%T", q)
		f, err := front.New(q, clock.NewManual(0), front.Config{})
		require.NoError(t, err)
		assert.LessOrEqual(t, count(f.Metrics), 20.0, "%T behind a front", q)
	}
}

// detailSource lists a queue's Detail's own metrics: the Detail types
// declare them, and the queue's Metrics lists them after its Stats.
type detailSource struct{ v any }

func (d detailSource) Metrics() iter.Seq[aqm.Metric] {
	seq, ok := metrics.Of(d.v)
	if !ok {
		panic(fmt.Sprintf("%T declares no metrics", d.v))
	}
	return seq
}
