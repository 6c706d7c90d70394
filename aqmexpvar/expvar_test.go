package aqmexpvar_test

import (
	"context"
	"encoding/json"
	"expvar"
	"iter"
	"math"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqmexpvar"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// TestPublishFront protects the exporter's purpose under -race: a front
// published with expvar is read from the HTTP handler's goroutine while
// producers and a consumer run, every read is valid JSON with the front's
// metric names, and the final read equals the front's own Stats.
func TestPublishFront(t *testing.T) {
	q, err := fifo.New[int](fifo.Config{LimitPackets: 64}, nil)
	require.NoError(t, err)
	f, err := front.New(q, nil, front.Config{})
	require.NoError(t, err)
	_, err = aqmexpvar.Publish("aqmexpvar_test_front", f)
	require.NoError(t, err)
	_, err = aqmexpvar.Publish("aqmexpvar_test_front", f)
	require.ErrorIs(t, err, aqmexpvar.ErrDuplicate, "no panic on a second publish")

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.Run(ctx, func([]aqm.Packet[int]) {}) })
	for range 2 {
		wg.Go(func() {
			for i := range 2000 {
				_, _ = f.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100}})
			}
		})
	}
	srv := httptest.NewServer(expvar.Handler())
	defer srv.Close()
	for range 20 {
		resp, err := srv.Client().Get(srv.URL)
		require.NoError(t, err)
		var all map[string]json.RawMessage
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&all))
		resp.Body.Close()
		var m map[string]float64
		require.NoError(t, json.Unmarshal(all["aqmexpvar_test_front"], &m))
		require.Contains(t, m, "enqueued_packets")
		require.Contains(t, m, "front_rate_bits_per_second")
		require.LessOrEqual(t, m["sent_packets"], m["enqueued_packets"])
	}
	cancel()
	wg.Wait()
	var m map[string]float64
	require.NoError(t, json.Unmarshal([]byte(expvar.Get("aqmexpvar_test_front").String()), &m))
	st := f.Stats()
	require.Equal(t, float64(st.Enqueued.Packets), m["enqueued_packets"])
	require.Equal(t, float64(st.Dequeued.Bytes), m["sent_bytes"])
	require.Equal(t, float64(st.Len), m["backlog_packets"])
	n := 0
	for range f.Metrics() {
		n++
	}
	require.Len(t, m, n)
}

// TestVarRendering protects the JSON rendering: source order, first value
// of a repeated name, null for values JSON cannot hold, and quoting.
func TestVarRendering(t *testing.T) {
	src := aqmexpvar.Func(func() iter.Seq[aqm.Metric] {
		return func(yield func(aqm.Metric) bool) {
			for _, m := range []aqm.Metric{
				{Name: "b", Value: 2.5},
				{Name: "a", Value: 1e21},
				{Name: "b", Value: 9},
				{Name: `q"x`, Value: math.NaN()},
				{Name: "inf", Value: math.Inf(1)},
			} {
				if !yield(m) {
					return
				}
			}
		}
	})
	s := aqmexpvar.New(src).String()
	require.Equal(t, `{"b": 2.5, "a": 1e+21, "q\"x": null, "inf": null}`, s)
	require.True(t, json.Valid([]byte(s)))
	var st map[string]float64
	require.NoError(t, json.Unmarshal([]byte(aqmexpvar.New(aqm.Stats{Len: 3}).String()), &st), "a value snapshot renders too")
	require.Equal(t, 3.0, st["backlog_packets"])
	_, err := aqmexpvar.Publish("aqmexpvar_test_nil", nil)
	require.Error(t, err)
	require.Nil(t, expvar.Get("aqmexpvar_test_nil"))
}
