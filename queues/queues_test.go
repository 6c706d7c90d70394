package queues_test

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/queues"
	"github.com/aqmkit/aqmkit/red"
)

// configOf returns the effective configuration a queue reports through its
// Config method, by reflection, since the registry hands back aqm.Queue.
func configOf(t *testing.T, q any) any {
	t.Helper()
	m := reflect.ValueOf(q).MethodByName("Config")
	require.True(t, m.IsValid(), "%T has no Config method", q)
	return m.Call(nil)[0].Interface()
}

// field reads a named field of a configuration struct (0 if it has none).
func field(cfg any, name string) (reflect.Value, bool) {
	v := reflect.ValueOf(cfg)
	f := v.FieldByName(name)
	return f, f.IsValid()
}

// TestEveryNameBuilds protects the registry's promise: every listed name
// builds, with defaults and with a link preset, into a queue of the
// configuration type Spec.Config returns, and Names, List and Lookup agree.
func TestEveryNameBuilds(t *testing.T) {
	names := queues.Names()
	require.Len(t, names, len(queues.List()))
	require.Equal(t, len(names), len(slices.Compact(slices.Sorted(slices.Values(names)))), "names are unique")
	for _, s := range queues.List() {
		assert.NotEmpty(t, s.Description, s.Name)
		assert.NotEmpty(t, s.Reference, s.Name)
		got, ok := queues.Lookup(s.Name)
		require.True(t, ok, s.Name)
		assert.Equal(t, s.Name, got.Name)
		for _, o := range []queues.Options{{}, {Rate: 50 * aqm.Mbit, Seed: 7}, {Rate: 2 * aqm.Mbit, RTT: 40 * time.Millisecond, Seed: 3}} {
			cfg, err := s.Config(o)
			require.NoError(t, err, "%s %+v", s.Name, o)
			q, err := queues.New[uint64](s.Name, o, nil)
			require.NoError(t, err, "%s %+v", s.Name, o)
			require.NotNil(t, q)
			eff := configOf(t, q)
			assert.Equal(t, reflect.TypeOf(cfg), reflect.TypeOf(eff), s.Name)
			if o.Seed != 0 {
				if seed, ok := field(eff, "Seed"); ok {
					assert.Equal(t, o.Seed, seed.Uint(), "%s keeps the seed", s.Name)
				}
			}
		}
	}
}

// TestPresetsFollowTheRate protects the link presets: with a rate, the
// limits are the algorithm's ConfigForLink (so a slow link gets a small
// buffer, not the 10 GbE default), and LimitPackets overrides the preset.
func TestPresetsFollowTheRate(t *testing.T) {
	o := queues.Options{Rate: 10 * aqm.Mbit, RTT: 20 * time.Millisecond}
	for name, want := range map[string]any{
		"fifo":     fifo.ConfigForLink(o.Rate, o.RTT),
		"fq-codel": fq.CoDelConfigForLink(o.Rate, o.RTT),
		"cake":     cake.ConfigForLink(o.Rate, o.RTT),
	} {
		s, _ := queues.Lookup(name)
		got, err := s.Config(o)
		require.NoError(t, err)
		wl, _ := field(want, "LimitPackets")
		gl, _ := field(got, "LimitPackets")
		assert.Equal(t, wl.Int(), gl.Int(), name)
	}
	for _, s := range queues.List() {
		got, err := s.Config(queues.Options{Rate: 10 * aqm.Mbit, LimitPackets: 123})
		require.NoError(t, err)
		gl, ok := field(got, "LimitPackets")
		require.True(t, ok, "%s has a packet limit", s.Name)
		assert.EqualValues(t, 123, gl.Int(), "%s takes the LimitPackets override", s.Name)
	}
	c, err := queues.List()[1].Config(queues.Options{Rate: 10 * aqm.Mbit})
	require.NoError(t, err)
	rc := c.(red.Config)
	assert.Equal(t, 10*aqm.Mbit, rc.LinkRate, "red sizes its thresholds from the rate")
}

// TestShapesIsPaced protects Spec.Shapes: exactly the queues that pace
// themselves at a rate (aqm.Paced) say so, so that a program knows to run
// their front unlimited.
func TestShapesIsPaced(t *testing.T) {
	for _, s := range queues.List() {
		q, err := queues.New[uint64](s.Name, queues.Options{Rate: 10 * aqm.Mbit, Seed: 1}, nil)
		require.NoError(t, err)
		_, paced := q.(aqm.Paced)
		assert.Equal(t, s.Shapes, paced, s.Name)
	}
}

// TestMarksUnderOverload protects Spec.Marks and Options.DisableECN: under
// an overload of ECN-capable packets, a queue that says it marks returns
// some packets with CE; with DisableECN (where allowed) and for queues that
// do not mark, none comes out with CE, and the overload is dropped instead.
func TestMarksUnderOverload(t *testing.T) {
	for _, s := range queues.List() {
		for _, disable := range []bool{false, true} {
			q, err := queues.New[uint64](s.Name, queues.Options{Rate: 10 * aqm.Mbit, Seed: 1, DisableECN: disable}, nil)
			if disable && err != nil {
				require.ErrorIs(t, err, aqm.ErrInvalidConfig, s.Name)
				continue
			}
			require.NoError(t, err, s.Name)
			ce, dropped := overload(q)
			switch {
			case s.Marks && !disable:
				assert.Positive(t, ce, "%s marks", s.Name)
			default:
				assert.Zero(t, ce, "%s disable=%v marks nothing", s.Name, disable)
				assert.Positive(t, dropped, "%s disable=%v drops the overload", s.Name, disable)
			}
		}
	}
}

// overload offers ECT(0) packets of 20 flows at 40 Mb/s to q and takes
// them at 10 Mb/s for 4 s of virtual time; it returns how many left with CE
// and how many were dropped in all.
func overload(q aqm.Queue[uint64]) (ce, dropped int) {
	const size = 1500
	arrival := aqm.Time(size * 8 * 1e9 / 40e6)
	departure := aqm.Time(size * 8 * 1e9 / 10e6)
	now, next := aqm.Time(time.Second), aqm.Time(time.Second)
	end := now + aqm.Time(4*time.Second)
	for i := uint64(0); now < end; i++ {
		q.Enqueue(aqm.Packet[uint64]{Payload: i, Meta: aqm.Meta{Size: size, Hash: uint32(i%20) * 0x9e3779b1, ECN: aqm.ECT0}}, now)
		now += arrival
		for now >= next {
			if p, ok := q.Dequeue(next); ok && p.ECN == aqm.CE {
				ce++
			}
			next += departure
		}
	}
	st := q.Stats()
	return ce, int(st.Dropped().Packets)
}

// TestFromConfigCoversEveryType protects FromConfig: each configuration type
// the registry lists builds from its zero value, and anything else is an
// ErrInvalidConfig, not a panic.
func TestFromConfigCoversEveryType(t *testing.T) {
	for _, s := range queues.List() {
		c, err := s.Config(queues.Options{})
		require.NoError(t, err)
		zero := reflect.Zero(reflect.TypeOf(c)).Interface()
		q, err := queues.FromConfig[int](zero, nil)
		require.NoError(t, err, "%s's %T", s.Name, zero)
		require.NotNil(t, q)
	}
	for _, bad := range []any{nil, 3, &fifo.Config{}, struct{}{}} {
		q, err := queues.FromConfig[int](bad, nil)
		assert.ErrorIs(t, err, aqm.ErrInvalidConfig, "%T", bad)
		assert.Nil(t, q)
	}
	q, err := queues.FromConfig[int](fifo.Config{LimitPackets: -1}, nil)
	assert.ErrorIs(t, err, aqm.ErrInvalidConfig)
	assert.Nil(t, q, "a bad configuration gives a nil interface, not a typed nil")
}

// TestErrors protects the registry's errors: an unknown name lists the
// known ones, bad options name their field, and queues that cannot turn
// ECN off refuse DisableECN rather than ignore it.
func TestErrors(t *testing.T) {
	_, err := queues.New[int]("fq-codl", queues.Options{}, nil)
	require.ErrorIs(t, err, queues.ErrUnknown)
	assert.Contains(t, err.Error(), "fq-codel")
	_, err = queues.New[int]("codel", queues.Options{RTT: -1, LimitPackets: -2}, nil)
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "RTT")
	assert.Contains(t, err.Error(), "LimitPackets")
	for _, name := range []string{"cake", "dualpi2"} {
		_, err = queues.New[int](name, queues.Options{DisableECN: true}, nil)
		var ce *aqm.ConfigError
		require.True(t, errors.As(err, &ce), name)
		assert.Equal(t, "DisableECN", ce.Field)
	}
	_, err = queues.Spec{}.Config(queues.Options{})
	assert.ErrorIs(t, err, queues.ErrUnknown)
}

// TestNameFlagAndText protects Name: tc's spelling and case are accepted
// and normalised, unknown names are refused by flag parsing and by JSON.
func TestNameFlagAndText(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := queues.Name("fifo")
	fs.Var(&n, "aqm", "")
	require.NoError(t, fs.Parse([]string{"-aqm", "FQ_CODEL"}))
	assert.Equal(t, queues.Name("fq-codel"), n)
	require.Error(t, fs.Parse([]string{"-aqm", "nope"}))

	var file struct{ AQM queues.Name }
	require.NoError(t, json.Unmarshal([]byte(`{"AQM":"cake"}`), &file))
	assert.Equal(t, "cake", file.AQM.String())
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"AQM":"bogus"}`), &file), queues.ErrUnknown)
	b, err := json.Marshal(file)
	require.NoError(t, err)
	assert.JSONEq(t, `{"AQM":"cake"}`, string(b))
}
