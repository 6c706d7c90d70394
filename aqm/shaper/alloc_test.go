package shaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/shaper"
	"github.com/aqmkit/aqmkit/clock"
)

var (
	sinkVerdict aqm.Verdict
	sinkPacket  aqm.Packet[uint64]
	sinkOK      bool
	sinkWait    time.Duration
)

// TestAllocs protects the per-packet paths from allocating: EnqueueAt,
// Enqueue (one clock read) and Next, both when a packet leaves and when the
// bucket says wait.
func TestAllocs(t *testing.T) {
	s, err := shaper.New[uint64](newFIFO(t, 1024), clock.NewMono(), shaper.Config{RateBitsPerSec: 8e6, BurstBytes: 1})
	require.NoError(t, err)
	now := clock.Epoch
	t.Run("EnqueueAt+Next", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			now += aqm.Time(time.Millisecond) // 1000 bytes of credit
			sinkVerdict = s.EnqueueAt(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000}}, now)
			sinkPacket, sinkOK, sinkWait = s.Next(now)
		}))
	})
	t.Run("Next-wait", func(t *testing.T) {
		s.EnqueueAt(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000}}, now)
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			sinkPacket, sinkOK, sinkWait = s.Next(now)
		}))
	})
	t.Run("Enqueue", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(100, func() {
			sinkVerdict = s.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000}})
		}))
	})
}

// BenchmarkEnqueueNext measures one packet through the shaper's lock and
// bucket around a FIFO, with time passed in (no clock read).
func BenchmarkEnqueueNext(b *testing.B) {
	q, _ := aqm.NewFIFO[uint64](aqm.FIFOConfig{LimitPackets: 1024}, nil)
	s, _ := shaper.New[uint64](q, clock.NewMono(), shaper.Config{RateBitsPerSec: 8e9})
	now := clock.Epoch
	b.ReportAllocs()
	for b.Loop() {
		now += 1000 // 1 µs: 1000 bytes at 8 Gbit/s
		s.EnqueueAt(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000}}, now)
		sinkPacket, sinkOK, sinkWait = s.Next(now)
	}
}
