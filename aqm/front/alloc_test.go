package front_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/front"
	"github.com/aqmkit/aqmkit/clock"
)

var (
	sinkVerdict aqm.Verdict
	sinkPacket  aqm.Packet[uint64]
	sinkOK      bool
	sinkErr     error
	sinkN       int
)

// TestAllocs protects the per-packet paths from allocating: Enqueue,
// TryDequeue, Dequeue and DequeueBatch when a packet is ready.
func TestAllocs(t *testing.T) {
	f := front.New[uint64](newFIFO(t, aqm.FIFOConfig{}, nil), clock.NewMono())
	ctx := context.Background()
	buf := make([]aqm.Packet[uint64], 4)
	t.Run("Enqueue+TryDequeue", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			sinkVerdict = f.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100}})
			sinkPacket, sinkOK = f.TryDequeue()
		}))
	})
	t.Run("Enqueue+Dequeue", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			sinkVerdict = f.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100}})
			sinkPacket, sinkErr = f.Dequeue(ctx)
		}))
	})
	t.Run("Enqueue+DequeueBatch", func(t *testing.T) {
		require.Zero(t, testing.AllocsPerRun(1000, func() {
			sinkVerdict = f.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100}})
			sinkN, sinkErr = f.DequeueBatch(ctx, buf)
		}))
	})
}

// BenchmarkEnqueueDequeue measures one packet through the front uncontended:
// two lock round trips and two clock reads.
func BenchmarkEnqueueDequeue(b *testing.B) {
	q, _ := aqm.NewFIFO[uint64](aqm.FIFOConfig{}, nil)
	f := front.New[uint64](q, clock.NewMono())
	b.ReportAllocs()
	for b.Loop() {
		f.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100}})
		sinkPacket, sinkOK = f.TryDequeue()
	}
}

// BenchmarkParallelEnqueue measures contended Enqueue from all Ps with one
// consumer draining in batches.
func BenchmarkParallelEnqueue(b *testing.B) {
	q, _ := aqm.NewFIFO[uint64](aqm.FIFOConfig{LimitPackets: 4096}, nil)
	f := front.New[uint64](q, clock.NewMono())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]aqm.Packet[uint64], 64)
		for {
			if _, err := f.DequeueBatch(ctx, buf); err != nil {
				return
			}
		}
	}()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			f.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100}})
		}
	})
	cancel()
	<-done
}
