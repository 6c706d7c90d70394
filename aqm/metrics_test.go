package aqm_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestStatsMetrics protects the exported metric list: unique names, the
// right kinds, values equal to the Stats fields, and early stop honoured.
func TestStatsMetrics(t *testing.T) {
	s := aqm.Stats{
		Enqueued:         aqm.Count{Packets: 10, Bytes: 1000},
		Dequeued:         aqm.Count{Packets: 6, Bytes: 600},
		Marked:           aqm.Count{Packets: 1, Bytes: 100},
		DroppedOverlimit: aqm.Count{Packets: 2, Bytes: 200},
		DroppedEarly:     aqm.Count{Packets: 3, Bytes: 300},
		DroppedQueued:    aqm.Count{Packets: 1, Bytes: 100},
		Len:              3, Backlog: 300, MaxSize: 100,
	}
	got := map[string]aqm.Metric{}
	for m := range s.Metrics() {
		_, dup := got[m.Name]
		require.False(t, dup, m.Name)
		got[m.Name] = m
	}
	require.Equal(t, 19, len(got))
	require.Equal(t, 6.0, got["sent_packets"].Value)
	require.Equal(t, 500.0, got["dropped_bytes"].Value)
	require.Equal(t, 3.0, got["dropped_early_packets"].Value)
	require.Equal(t, aqm.Gauge, got["backlog_bytes"].Kind)
	require.Equal(t, 300.0, got["backlog_bytes"].Value)
	require.Equal(t, aqm.Counter, got["enqueued_bytes"].Kind)
	require.Equal(t, "gauge", aqm.Gauge.String())
	n := 0
	for range s.Metrics() {
		n++
		if n == 2 {
			break
		}
	}
	require.Equal(t, 2, n)
}
