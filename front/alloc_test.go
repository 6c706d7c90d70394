package front_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

var (
	sinkVerdict aqm.Verdict
	sinkPacket  aqm.Packet[uint64]
	sinkErr     error
	sinkN       int
)

// TestAllocs protects the per-packet paths from allocating: Enqueue,
// EnqueueBatch, Dequeue, DequeueBatch and TryDequeueBatch, with and without
// a rate, staged or not, on a front and on a sharded front.
func TestAllocs(t *testing.T) {
	ctx := context.Background()
	ps := make([]aqm.Packet[uint64], 32)
	for i := range ps {
		ps[i] = pkt(uint64(i), 100)
		ps[i].Hash = uint32(i) * 0x9e3779b1
	}
	vs := make([]aqm.Verdict, 32)
	buf := make([]aqm.Packet[uint64], 32)
	for _, c := range []front.Config{{}, {Rate: 100 * aqm.Gbit}, {Staged: true}, {Rate: 100 * aqm.Gbit, Staged: true}} {
		rate, name := c.Rate, c.Rate.String()
		if c.Staged {
			name += "/staged"
		}
		f := newFront(t, newFIFO(t, fifo.Config{}, nil), nil, c)
		t.Run("Front/"+name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(1000, func() {
				sinkVerdict, sinkErr = f.Enqueue(pkt(0, 100))
				sinkPacket, sinkErr = f.Dequeue(ctx)
				sinkN, sinkErr = f.EnqueueBatch(ps, vs)
				sinkN, sinkErr = f.DequeueBatch(ctx, buf)
				sinkN, _ = f.TryDequeueBatch(buf)
			}))
		})
		s, err := front.NewSharded(func(int) (aqm.Queue[uint64], error) {
			return fifo.New[uint64](fifo.Config{}, nil)
		}, nil, front.ShardedConfig{Shards: 4, Config: front.Config{Rate: rate, Staged: c.Staged}})
		require.NoError(t, err)
		t.Run("Sharded/"+name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(1000, func() {
				sinkVerdict, sinkErr = s.Enqueue(pkt(0, 100))
				sinkN, sinkErr = s.EnqueueBatch(ps, vs)
				sinkN, sinkErr = s.DequeueBatch(ctx, buf)
				sinkN, _ = s.TryDequeueBatch(buf)
			}))
		})
	}
}

// BenchmarkEnqueueDequeue measures one packet through the front uncontended:
// two lock round trips and two clock reads.
func BenchmarkEnqueueDequeue(b *testing.B) {
	q, _ := fifo.New[uint64](fifo.Config{}, nil)
	f, _ := front.New[uint64](q, clock.NewCoarse(nil), front.Config{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sinkVerdict, sinkErr = f.Enqueue(pkt(0, 100))
		sinkPacket, sinkErr = f.Dequeue(ctx)
	}
}
