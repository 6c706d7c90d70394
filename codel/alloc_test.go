package codel

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

var (
	sinkPacket  aqm.Packet[uint64]
	sinkVerdict aqm.Verdict
	sinkAction  Action
)

// TestAllocs protects the zero-allocation hot path: Enqueue, Dequeue while
// idle, while dropping and while marking, and the bare Controller.
func TestAllocs(t *testing.T) {
	drop := func(p aqm.Packet[uint64], why aqm.Verdict) { sinkPacket = p }
	for _, ecn := range []aqm.ECN{aqm.NotECT, aqm.ECT0} {
		q, err := New(Config{LimitPackets: 4096}, drop)
		require.NoError(t, err)
		now := t0
		t.Run("Enqueue/"+ecn.String(), func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(1000, func() {
				sinkVerdict = q.Enqueue(aqm.Packet[uint64]{Payload: 1, Meta: aqm.Meta{Size: 1000, ECN: ecn}}, now)
			}))
		})
		t.Run("Dequeue/congested/"+ecn.String(), func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(1000, func() {
				now += aqm.Time(time.Millisecond)
				sinkVerdict = q.Enqueue(aqm.Packet[uint64]{Payload: 1, Meta: aqm.Meta{Size: 1000, ECN: ecn}}, now)
				sinkPacket, _ = q.Dequeue(now)
			}))
			require.NotZero(t, q.Stats().DroppedEarly.Packets+q.Stats().Marked.Packets)
		})
	}
	t.Run("Controller.Decide", func(t *testing.T) {
		p := Config{}.Params()
		var c Controller
		now := t0
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			now += aqm.Time(time.Millisecond)
			sinkAction = c.Decide(&p, now, time.Second, 1<<20, aqm.NotECT)
		}))
	})
}
