package metrics_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
)

type inner struct {
	Hits uint32 `metric:"hits,counter"`
	Free int8   `metric:"free_buffers,gauge"`
}

type row struct {
	Sent  uint64        `metric:"sent_packets,counter"`
	Delay time.Duration `metric:"delay_seconds,gauge"`
}

type base struct {
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

type sample struct {
	base
	Dropping bool          `metric:"dropping,gauge"`
	P        float32       `metric:"probability,gauge"`
	Wait     time.Duration `metric:"wait_seconds,gauge"`
	Next     aqm.Time      `metric:"next_update_time_seconds,gauge"`
	Rate     aqm.Rate      `metric:"rate_bits_per_second,gauge"`
	Refused  aqm.Count     `metric:"refused,counter"`
	Avg      float64       `metric:"average_queue,gauge,unit=ByteMode"`
	ByteMode bool          `metric:"-"`
	Pool     inner         `metric:"pool"`
	N        int           `metric:"-"`
	Rows     [3]row        `metric:"tin,each=N"`
	Name     string        `metric:"-"`
	Credit   int64         `metric:"credit_bytes,gauge"`
	U16      uint16        `metric:"u16_packets,gauge"`
	I16      int16         `metric:"i16_packets,gauge"`
	I32      int32         `metric:"i32_packets,gauge"`
	U        uint          `metric:"u_packets,gauge"`
	U8       uint8         `metric:"u8_packets,gauge"`
	F64      float64       `metric:"f64,gauge"`
	private  int
}

var sampleSet = metrics.Declare[sample]("x_")

func collect(d sample) []aqm.Metric {
	var ms []aqm.Metric
	for m := range sampleSet.Of(d) {
		ms = append(ms, m)
	}
	return ms
}

// TestSetLists protects the emitter's reading of every tag form: kinds,
// conversions (bool to 0/1, durations and instants to seconds, a Count to
// two metrics), the unit switch, nested structs, arrays cut at their count
// field, the prefix, and the order of the fields.
func TestSetLists(t *testing.T) {
	d := sample{
		base: base{MemoryBytes: 4096}, Dropping: true, P: 0.25, Wait: 1500 * time.Millisecond,
		Next: aqm.Time(3 * time.Second), Rate: 8 * aqm.Mbit, Refused: aqm.Count{Packets: 2, Bytes: 3000},
		Avg: 7.5, Pool: inner{Hits: 9, Free: -1}, N: 2,
		Rows:   [3]row{{Sent: 1, Delay: time.Millisecond}, {Sent: 2, Delay: 2 * time.Millisecond}, {Sent: 99}},
		Credit: -5, U16: 16, I16: -16, I32: 32, U: 1, U8: 8, F64: 0.5, private: 1,
	}
	want := []aqm.Metric{
		{Name: "x_memory_bytes", Kind: aqm.Gauge, Value: 4096},
		{Name: "x_dropping", Kind: aqm.Gauge, Value: 1},
		{Name: "x_probability", Kind: aqm.Gauge, Value: 0.25},
		{Name: "x_wait_seconds", Kind: aqm.Gauge, Value: 1.5},
		{Name: "x_next_update_time_seconds", Kind: aqm.Gauge, Value: 3},
		{Name: "x_rate_bits_per_second", Kind: aqm.Gauge, Value: 8e6},
		{Name: "x_refused_packets", Kind: aqm.Counter, Value: 2},
		{Name: "x_refused_bytes", Kind: aqm.Counter, Value: 3000},
		{Name: "x_average_queue_packets", Kind: aqm.Gauge, Value: 7.5},
		{Name: "x_pool_hits", Kind: aqm.Counter, Value: 9},
		{Name: "x_pool_free_buffers", Kind: aqm.Gauge, Value: -1},
		{Name: "x_tin0_sent_packets", Kind: aqm.Counter, Value: 1},
		{Name: "x_tin0_delay_seconds", Kind: aqm.Gauge, Value: 0.001},
		{Name: "x_tin1_sent_packets", Kind: aqm.Counter, Value: 2},
		{Name: "x_tin1_delay_seconds", Kind: aqm.Gauge, Value: 0.002},
		{Name: "x_credit_bytes", Kind: aqm.Gauge, Value: -5},
		{Name: "x_u16_packets", Kind: aqm.Gauge, Value: 16},
		{Name: "x_i16_packets", Kind: aqm.Gauge, Value: -16},
		{Name: "x_i32_packets", Kind: aqm.Gauge, Value: 32},
		{Name: "x_u_packets", Kind: aqm.Gauge, Value: 1},
		{Name: "x_u8_packets", Kind: aqm.Gauge, Value: 8},
		{Name: "x_f64", Kind: aqm.Gauge, Value: 0.5},
	}
	require.Equal(t, want, collect(d))

	d.ByteMode, d.Dropping, d.N = true, false, 0
	got := collect(d)
	require.Len(t, got, len(want)-4, "no tin rows with N = 0")
	assert.Equal(t, aqm.Metric{Name: "x_average_queue_bytes", Kind: aqm.Gauge, Value: 7.5}, got[8])
	assert.Equal(t, 0.0, got[1].Value, "false is 0")
	assert.Equal(t, "x_credit_bytes", got[11].Name)

	n := 0
	for range sampleSet.Of(d) {
		n++
		if n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n, "stops when the loop breaks")
}

// TestDescs protects the descriptions tests rely on: every metric the Set
// can list, with its leaf name, Go field, path and declaring type, and
// Lookup finding them by type.
func TestDescs(t *testing.T) {
	ds := sampleSet.Descs()
	byName := map[string]metrics.Desc{}
	for _, d := range ds {
		byName[d.Name] = d
	}
	require.Len(t, byName, len(ds), "names are unique")
	// 22 listed above, the bytes twin of average_queue and the third row's two.
	require.Len(t, ds, 22+1+2)
	tin2 := byName["x_tin2_delay_seconds"]
	assert.Equal(t, "delay_seconds", tin2.Leaf)
	assert.Equal(t, "Delay", tin2.Field)
	assert.Equal(t, "Rows[2].Delay", tin2.Path)
	assert.Equal(t, reflect.TypeFor[row](), tin2.Owner)
	assert.Equal(t, reflect.TypeFor[time.Duration](), tin2.Type)
	rb := byName["x_refused_bytes"]
	assert.Equal(t, "refused_bytes", rb.Leaf)
	assert.Equal(t, "Refused", rb.Field)
	assert.Equal(t, aqm.Counter, rb.Kind)
	mem := byName["x_memory_bytes"]
	assert.Equal(t, "base.MemoryBytes", mem.Path)
	assert.Equal(t, reflect.TypeFor[base](), mem.Owner)
	assert.Equal(t, "average_queue_bytes", byName["x_average_queue_bytes"].Leaf)
	assert.Equal(t, "pool_free_buffers", "pool_"+byName["x_pool_free_buffers"].Leaf)

	got, ok := metrics.Lookup(reflect.TypeFor[sample]())
	require.True(t, ok)
	assert.Equal(t, ds, got)
	_, ok = metrics.Lookup(reflect.TypeFor[row]())
	assert.False(t, ok, "row was never declared on its own")
}

type (
	noTag   struct{ A int }
	badKind struct {
		A int `metric:"a_packets,level"`
	}
	badOption struct {
		A int `metric:"a_packets,gauge,scale=2"`
	}
	badSwitch struct {
		A int `metric:"a,gauge,unit=B"`
		B int `metric:"-"`
	}
	durNoSeconds struct {
		A time.Duration `metric:"a_ns,gauge"`
	}
	timeNoSecs struct {
		A aqm.Time `metric:"a_ns,gauge"`
	}
	rateNoUnit struct {
		A aqm.Rate `metric:"a,gauge"`
	}
	stringMetric struct {
		A string `metric:"a,gauge"`
	}
	dupName struct {
		A int `metric:"a_packets,gauge"`
		B int `metric:"a_packets,counter"`
	}
	dupCount struct {
		A aqm.Count `metric:"a,counter"`
		B int       `metric:"a_bytes,gauge"`
	}
	noKindScalar struct {
		A int `metric:"a"`
	}
	eachNotArray struct {
		A inner `metric:"a,each=N"`
		N int   `metric:"-"`
	}
	eachBadCount struct {
		A [2]inner `metric:"a,each=N"`
		N uint     `metric:"-"`
	}
	emptyName struct {
		A int `metric:",gauge"`
	}
	privateTagged struct {
		a int `metric:"a,gauge"`
	}
	countSwitch struct {
		A aqm.Count `metric:"a,counter,unit=B"`
		B bool      `metric:"-"`
	}
)

var _ = privateTagged{}.a // read, so that the field exists for Declare to refuse

// TestDeclareRefuses protects the checks Declare makes, each a panic that
// names the type and the field, so that a bad tag fails every test of the
// package that declares it.
func TestDeclareRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		fn    func()
		field string
	}{
		"no tag":             {func() { metrics.Declare[noTag]("") }, ".A:"},
		"bad kind":           {func() { metrics.Declare[badKind]("") }, ".A:"},
		"bad option":         {func() { metrics.Declare[badOption]("") }, ".A:"},
		"switch not bool":    {func() { metrics.Declare[badSwitch]("") }, ".A:"},
		"duration unit":      {func() { metrics.Declare[durNoSeconds]("") }, ".A:"},
		"time unit":          {func() { metrics.Declare[timeNoSecs]("") }, ".A:"},
		"rate unit":          {func() { metrics.Declare[rateNoUnit]("") }, ".A:"},
		"string":             {func() { metrics.Declare[stringMetric]("") }, ".A:"},
		"duplicate":          {func() { metrics.Declare[dupName]("") }, ".B:"},
		"duplicate of count": {func() { metrics.Declare[dupCount]("") }, ".B:"},
		"no kind":            {func() { metrics.Declare[noKindScalar]("") }, ".A:"},
		"each not array":     {func() { metrics.Declare[eachNotArray]("") }, ".A:"},
		"each count uint":    {func() { metrics.Declare[eachBadCount]("") }, ".A:"},
		"empty name":         {func() { metrics.Declare[emptyName]("") }, ".A:"},
		"private tagged":     {func() { metrics.Declare[privateTagged]("") }, ".a:"},
		"count switch":       {func() { metrics.Declare[countSwitch]("") }, ".A:"},
		"not a struct":       {func() { metrics.Declare[int]("") }, "int is not"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "Declare accepted it")
				assert.Contains(t, fmt.Sprint(r), "metrics: ")
				assert.Contains(t, fmt.Sprint(r), c.field, "names the type and field")
			}()
			c.fn()
		})
	}
}

type small struct {
	A uint64        `metric:"a_packets,counter"`
	B time.Duration `metric:"b_seconds,gauge"`
	C [4]row        `metric:"tin,each=N"`
	N int           `metric:"-"`
}

var smallSet = metrics.Declare[small]("")

var sink float64

// TestAllocs protects the cold path's budget: listing allocates nothing,
// and Of allocates once for a struct of up to 128 bytes (the closure that
// holds the copy), as the hand-written lists it replaced did.
func TestAllocs(t *testing.T) {
	d := small{A: 1, B: 2, N: 3}
	yield := func(m aqm.Metric) bool { sink += m.Value; return true }
	assert.Zero(t, testing.AllocsPerRun(100, func() { smallSet.Emit(&d, yield) }))
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() {
		seq := smallSet.Of(d)
		seq(yield)
	}), 1.0)
	big := sample{N: 3}
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() {
		seq := sampleSet.Of(big)
		seq(func(m aqm.Metric) bool { sink += m.Value; return true })
	}), 2.0)
}
