package queues_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/queues"
)

// TestParamsRoundTrip protects the promise that every setting Params lists
// reads back through SetParams as the same value, for every registry queue
// and every field type they use (durations, rates, floats, named modes).
func TestParamsRoundTrip(t *testing.T) {
	for _, s := range queues.List() {
		cfg, err := s.Config(queues.Options{Rate: 20 * aqm.Mbit, Seed: 7})
		require.NoError(t, err, s.Name)
		ps := queues.Params(cfg)
		require.NotEmpty(t, ps, s.Name)
		var pairs []string
		for _, p := range ps {
			pairs = append(pairs, p.Name+"="+p.Value)
		}
		got, err := queues.SetParams(cfg, strings.Join(pairs, ","))
		require.NoError(t, err, s.Name)
		assert.Equal(t, cfg, got, s.Name)
	}
}

// TestSetParamsChangesFields protects the name matching (case, dashes,
// embedded Control structs) and the parsing of each kind of value.
func TestSetParamsChangesFields(t *testing.T) {
	c, err := queues.SetParams(codel.Config{}, "target=2ms, Interval=40ms,limit_packets=77,disable-ecn=true")
	require.NoError(t, err)
	cc := c.(codel.Config)
	assert.Equal(t, 2*time.Millisecond, cc.Target)
	assert.Equal(t, 40*time.Millisecond, cc.Interval)
	assert.Equal(t, 77, cc.LimitPackets)
	assert.True(t, cc.DisableECN)

	c, err = queues.SetParams(cake.Config{}, "rate=50mbit,tinmode=diffserv4,overhead=-4,seed=0x10")
	require.NoError(t, err)
	k := c.(cake.Config)
	assert.Equal(t, 50*aqm.Mbit, k.Rate)
	assert.Equal(t, cake.DiffServ4, k.TinMode)
	assert.Equal(t, -4, k.Overhead)
	assert.Equal(t, uint64(16), k.Seed)

	orig := fq.CoDelConfig{}
	c, err = queues.SetParams(orig, "DisableFloodGuard=true")
	require.NoError(t, err)
	assert.True(t, c.(fq.CoDelConfig).DisableFloodGuard)
	assert.False(t, orig.DisableFloodGuard, "SetParams must not change its argument")
}

// TestSetParamsErrors protects the errors a user sees for a typo: a
// ConfigError naming Params (with the fields there are) or the field.
func TestSetParamsErrors(t *testing.T) {
	for _, c := range []struct {
		params, field, in string
	}{
		{"targte=5ms", "Params", "fields: Target, Interval"},
		{"target", "Params", "name=value"},
		{"target=5", "Target", "duration"},
		{"disable-ecn=maybe", "DisableECN", "true or false"},
		{"limit-packets=1.5", "LimitPackets", "integer"},
	} {
		_, err := queues.SetParams(codel.Config{}, c.params)
		var ce *aqm.ConfigError
		require.ErrorAs(t, err, &ce, c.params)
		assert.Equal(t, c.field, ce.Field, c.params)
		assert.Contains(t, err.Error(), c.in, c.params)
	}
	_, err := queues.SetParams(cake.Config{}, "tinmode=diffserv9")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "diffserv4", "the error lists the mode names")
	_, err = queues.SetParams(nil, "a=b")
	require.Error(t, err)
}

// TestOptionsParams protects Options.Params through New: the setting
// reaches the built queue, and a value the algorithm refuses is an
// ErrInvalidConfig, not a panic or a silent default.
func TestOptionsParams(t *testing.T) {
	q, err := queues.New[int]("codel", queues.Options{Rate: 10 * aqm.Mbit, Params: "target=3ms,interval=30ms"}, nil)
	require.NoError(t, err)
	got := configOf(t, q).(codel.Config)
	assert.Equal(t, 3*time.Millisecond, got.Target)
	assert.Equal(t, 30*time.Millisecond, got.Interval)

	_, err = queues.New[int]("codel", queues.Options{Params: "target=200ms,interval=100ms"}, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, aqm.ErrInvalidConfig), "%v", err)
}

// FuzzSetParams protects the promise that no params string panics.
func FuzzSetParams(f *testing.F) {
	for _, s := range []string{"target=5ms", "=,=,", "tinmode=besteffort", "rate=1e9999gbit", "seed=-1", "flows=99999999999999999999"} {
		f.Add(s)
	}
	cfgs := []any{codel.Config{}, cake.Config{}, fq.PIEConfig{}}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range cfgs {
			got, err := queues.SetParams(c, s)
			if err == nil && reflect.TypeOf(got) != reflect.TypeOf(c) {
				t.Fatalf("SetParams(%T) returned a %T", c, got)
			}
		}
	})
}
