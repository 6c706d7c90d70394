package aqm_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/stretchr/testify/require"
)

// loopOnly hides a queue's burst path so the helpers must fall back to loops.
type loopOnly[T any] struct{ aqm.Queue[T] }

// TestBatchHelpersFallBack protects the generic burst helpers on a queue
// without a burst path: verdicts written per packet, accepted count, short
// verdict slices offering only what they can hold, and dequeue stopping
// when the queue is empty.
func TestBatchHelpersFallBack(t *testing.T) {
	f, err := fifo.New[int](fifo.Config{LimitPackets: 3}, nil)
	require.NoError(t, err)
	q := loopOnly[int]{f}
	ps := make([]aqm.Packet[int], 5)
	for i := range ps {
		ps[i] = aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100}}
	}
	vs := make([]aqm.Verdict, 4) // one short: the fifth packet is not offered
	require.Equal(t, 3, aqm.EnqueueBatch[int](q, ps, vs, 10))
	require.Equal(t, []aqm.Verdict{aqm.Enqueued, aqm.Enqueued, aqm.Enqueued, aqm.DroppedOverlimit}, vs)
	require.Equal(t, uint64(4), f.Stats().Offered().Packets)
	buf := make([]aqm.Packet[int], 8)
	n := aqm.DequeueBatch[int](q, buf, 20)
	require.Equal(t, 3, n)
	for i := range n {
		require.Equal(t, i, buf[i].Payload)
		require.Equal(t, aqm.Time(10), buf[i].Enqueued)
	}
	require.Zero(t, aqm.DequeueBatch[int](q, buf, 30))
}
