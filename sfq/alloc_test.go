package sfq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

var (
	sfqSinkVerdict aqm.Verdict
	sfqSinkPacket  aqm.Packet[uint64]
)

// TestSFQNoAllocs protects the zero-allocation hot path: one subtest per
// method and drop path, after New.
func TestSFQNoAllocs(t *testing.T) {
	now := aqm.Time(time.Second)
	t.Run("Enqueue+Dequeue", func(t *testing.T) {
		q, err := New[uint64](Config{}, nil)
		require.NoError(t, err)
		i := uint32(0)
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			i++
			sfqSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, Hash: i % 64}}, now)
			sfqSinkPacket, _ = q.Dequeue(now)
		}))
	})
	t.Run("Enqueue/overflow-evict", func(t *testing.T) {
		var drops int
		q, err := New(Config{LimitPackets: 16, HeadDrop: true}, func(aqm.Packet[uint64], aqm.Verdict) { drops++ })
		require.NoError(t, err)
		i := uint32(0)
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			i++
			sfqSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, Hash: i % 3}}, now)
		}))
		require.NotZero(t, drops)
	})
	t.Run("Enqueue/refused", func(t *testing.T) {
		q, err := New[uint64](Config{LimitPackets: 4}, nil)
		require.NoError(t, err)
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			sfqSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, Hash: 1}}, now)
		}))
		require.Equal(t, aqm.DroppedOverlimit, sfqSinkVerdict)
	})
	t.Run("Enqueue/perturb-rehash", func(t *testing.T) {
		q, err := New[uint64](Config{PerturbPeriod: time.Nanosecond}, nil)
		require.NoError(t, err)
		for i := range 100 {
			q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: uint32(i)}}, now)
		}
		tt := now
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			tt++
			sfqSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: uint32(tt)}}, tt)
			sfqSinkPacket, _ = q.Dequeue(tt)
		}))
		require.NotZero(t, q.Detail().Perturbations)
	})
	t.Run("Dequeue/closed-form-skip", func(t *testing.T) {
		q, err := New[uint64](Config{QuantumBytes: 1}, nil)
		require.NoError(t, err)
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			for h := range uint32(4) {
				q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 9000, Hash: h}}, now)
			}
			for range 4 {
				sfqSinkPacket, _ = q.Dequeue(now)
			}
		}))
	})
}
