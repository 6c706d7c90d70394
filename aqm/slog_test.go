package aqm_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestStatsLogValue protects Stats as a slog.LogValuer: logging it gives
// one group holding every counter and gauge by its metric name, with the
// fields' values, whatever the handler.
func TestStatsLogValue(t *testing.T) {
	s := aqm.Stats{
		Enqueued:         aqm.Count{Packets: 10, Bytes: 1000},
		Dequeued:         aqm.Count{Packets: 6, Bytes: 600},
		Marked:           aqm.Count{Packets: 1, Bytes: 100},
		DroppedOverlimit: aqm.Count{Packets: 2, Bytes: 200},
		DroppedEarly:     aqm.Count{Packets: 3, Bytes: 300},
		DroppedOverload:  aqm.Count{Packets: 4, Bytes: 400},
		DroppedQueued:    aqm.Count{Packets: 1, Bytes: 100},
		Len:              3, Backlog: 300, MaxSize: 1500,
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("queue", "stats", s)
	var rec struct {
		Stats map[string]uint64 `json:"stats"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
	require.Equal(t, map[string]uint64{
		"enqueued_packets": 10, "enqueued_bytes": 1000,
		"sent_packets": 6, "sent_bytes": 600,
		"marked_packets": 1, "marked_bytes": 100,
		"dropped_packets": 9, "dropped_bytes": 900,
		"dropped_overlimit_packets": 2, "dropped_overlimit_bytes": 200,
		"dropped_early_packets": 3, "dropped_early_bytes": 300,
		"dropped_overload_packets": 4, "dropped_overload_bytes": 400,
		"dropped_queued_packets": 1, "dropped_queued_bytes": 100,
		"backlog_packets": 3, "backlog_bytes": 300, "max_packet_bytes": 1500,
	}, rec.Stats)

	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("queue", "stats", aqm.Stats{Len: 2})
	require.Contains(t, buf.String(), " stats.enqueued_packets=0 ")
	require.Contains(t, buf.String(), " stats.backlog_packets=2 ")
}
