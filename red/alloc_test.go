package red

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

var (
	sinkVerdict aqm.Verdict
	sinkPacket  aqm.Packet[uint64]
)

// TestZeroAllocs protects the no-allocation rule on every hot path: below
// min_th, in the band (signals and not), forced, the idle decay, the
// Adaptive RED catch-up, byte mode, and Dequeue.
func TestZeroAllocs(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		level int           // packets kept queued
		step  time.Duration // time between arrivals
	}{
		{"below", Config{MinThreshold: 50, MaxThreshold: 150, Weight: 0.2}, 10, time.Microsecond},
		{"band", Config{MinThreshold: 5, MaxThreshold: 150, Weight: 0.2, MaxP: 0.5}, 40, time.Microsecond},
		{"band-ecn", Config{MinThreshold: 5, MaxThreshold: 150, Weight: 0.2, MaxP: 0.5}, 40, time.Microsecond},
		{"gentle", Config{MinThreshold: 5, MaxThreshold: 15, Weight: 0.2, Gentle: true}, 20, time.Microsecond},
		{"forced", Config{MinThreshold: 5, MaxThreshold: 15, Weight: 0.2}, 40, time.Microsecond},
		{"idle", Config{MinThreshold: 5, MaxThreshold: 15, Weight: 0.2}, 0, time.Millisecond},
		{"ared", Config{MinThreshold: 5, MaxThreshold: 15, Weight: 0.2, Gentle: true, Adaptive: true,
			AdaptInterval: time.Millisecond}, 12, 300 * time.Microsecond},
		{"ared-idle", Config{MinThreshold: 5, MaxThreshold: 15, Weight: 0.2, Gentle: true, Adaptive: true,
			AdaptInterval: time.Millisecond}, 0, 7 * time.Millisecond},
		{"bytes", Config{ByteMode: true, MinThreshold: 5000, MaxThreshold: 150000, Weight: 0.2, MaxP: 0.5}, 40, time.Microsecond},
		{"wait", Config{MinThreshold: 5, MaxThreshold: 150, Weight: 0.2, MaxP: 0.5, Wait: true}, 40, time.Microsecond},
		{"wait-bytes", Config{ByteMode: true, MinThreshold: 5000, MaxThreshold: 150000, Weight: 0.2, MaxP: 0.5, Wait: true}, 40, time.Microsecond},
	}
	for _, tc := range cases {
		q, err := New[uint64](tc.cfg, nil)
		require.NoError(t, err)
		now := t0
		ecn := aqm.NotECT
		if tc.name == "band-ecn" {
			ecn = aqm.ECT0
		}
		step := func() {
			now += aqm.Time(tc.step)
			sinkVerdict = q.Enqueue(aqm.Packet[uint64]{Payload: 1, Meta: aqm.Meta{Size: 1000, ECN: ecn}}, now)
			for q.Len() > tc.level {
				sinkPacket, _ = q.Dequeue(now)
			}
		}
		for range 1000 {
			step()
		}
		t.Run(tc.name+"/Enqueue+Dequeue", func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(1000, step))
		})
	}
	q, err := New[uint64](Config{}, nil)
	require.NoError(t, err)
	t.Run("Dequeue-empty", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() { sinkPacket, _ = q.Dequeue(t0) }))
	})
	t.Run("Detail+Stats", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() { _ = q.Detail(); _ = q.Stats() }))
	})
}
