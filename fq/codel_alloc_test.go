package fq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/stretchr/testify/require"
)

var (
	coDelSinkPacket  aqm.Packet[uint64]
	coDelSinkVerdict aqm.Verdict
)

// TestCoDelAllocs protects the zero-allocation hot path of FQ-CoDel:
// Enqueue, Dequeue over many flows, the CoDel drop path and the overload
// batch drop.
func TestCoDelAllocs(t *testing.T) {
	drop := func(p aqm.Packet[uint64], why aqm.Verdict) { coDelSinkPacket = p }
	q, err := NewCoDel(CoDelConfig{Seed: 1, LimitPackets: 1000, Control: codel.Control{DisableECN: true}}, drop)
	require.NoError(t, err)
	now := ct0
	seq := uint32(0)
	t.Run("Enqueue+Dequeue/flows", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(2000, func() {
			seq++
			now += aqm.Time(time.Microsecond)
			coDelSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: seq % 300}}, now)
			coDelSinkPacket, _ = q.Dequeue(now)
		}))
	})
	t.Run("Dequeue/congested", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(2000, func() {
			now += aqm.Time(time.Millisecond)
			coDelSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: 1}}, now)
			coDelSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: 1}}, now)
			coDelSinkPacket, _ = q.Dequeue(now)
		}))
		require.NotZero(t, q.Stats().DroppedEarly.Packets)
	})
	t.Run("Enqueue/overload", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(2000, func() {
			seq++
			coDelSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: seq % 7}}, now)
		}))
		require.NotZero(t, q.Detail().EvictedOverlimit)
	})
}
