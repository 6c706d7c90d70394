package pie

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

// TestZeroAllocs protects the hot path: no allocation per Enqueue (accept,
// early drop, mark, tail drop) or Dequeue, nor in the periodic catch-up.
func TestZeroAllocs(t *testing.T) {
	newQ := func(cfg Config) (*Queue[uint64], aqm.Time) {
		q, err := New[uint64](cfg, nil)
		require.NoError(t, err)
		now := aqm.Time(time.Second)
		for i := range 50 {
			q.Enqueue(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500}}, now)
		}
		return q, now
	}
	cases := []struct {
		name string
		cfg  Config
		p    float64
		ecn  aqm.ECN
	}{
		{"enqueue-dequeue", Config{LimitPackets: 100}, 0, aqm.NotECT},
		{"drop", Config{LimitPackets: 100, Control: Control{Derandomize: true, ByteMode: true}}, 0.9, aqm.NotECT},
		{"mark", Config{LimitPackets: 100, Control: Control{RateEstimator: true}}, 0.05, aqm.ECT1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, now := newQ(c.cfg)
			q.ctl.p, q.ctl.old, q.ctl.burst = probCeil(c.p), int64(time.Second), 0
			allocs := testing.AllocsPerRun(1000, func() {
				now += aqm.Time(time.Millisecond) // an update every 15 packets
				sinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, ECN: c.ecn}}, now)
				sinkPacket, _ = q.Dequeue(now)
				q.ctl.p, q.ctl.burst = probCeil(c.p), 0
			})
			require.Zero(t, allocs)
		})
	}
	t.Run("tail-drop", func(t *testing.T) {
		q, now := newQ(Config{LimitPackets: 50})
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			sinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500}}, now)
		}))
	})
	t.Run("idle-catch-up", func(t *testing.T) {
		q, now := newQ(Config{})
		for q.Len() > 0 {
			q.Dequeue(now)
		}
		require.Zero(t, testing.AllocsPerRun(100, func() {
			q.ctl.p = probOne
			now += aqm.Time(time.Minute)
			sinkPacket, _ = q.Dequeue(now)
		}))
	})
}
