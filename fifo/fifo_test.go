package fifo_test

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/stretchr/testify/require"
)

// TestFIFOReconfigure protects Reconfigure at the edges the kit's cycle
// does not reach: a bad config leaves the queue as it was, and a limit
// shrunk below the queued packets keeps them, in order, and refuses
// arrivals.
func TestFIFOReconfigure(t *testing.T) {
	q, err := fifo.New[int](fifo.Config{LimitPackets: 4}, nil)
	require.NoError(t, err)
	for i := range 4 {
		require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Payload: i}, 1))
	}
	require.Error(t, q.Reconfigure(fifo.Config{LimitPackets: -3}))
	require.NoError(t, q.Reconfigure(fifo.Config{LimitPackets: 2}))
	require.Equal(t, 4, q.Len(), "shrinking keeps queued packets")
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(aqm.Packet[int]{Payload: 9}, 2))
	for i := range 4 {
		p, ok := q.Dequeue(3)
		require.True(t, ok)
		require.Equal(t, i, p.Payload, "order kept across Reconfigure")
	}
}

// TestFIFOConfigErrors protects validation: every bad field is named, and
// the error wraps ErrInvalidConfig.
func TestFIFOConfigErrors(t *testing.T) {
	_, err := fifo.New[int](fifo.Config{LimitPackets: -1, LimitBytes: -5}, nil)
	require.Error(t, err)
	require.True(t, errors.Is(err, aqm.ErrInvalidConfig))
	require.ErrorContains(t, err, "fifo: LimitPackets (-1)")
	require.ErrorContains(t, err, "fifo: LimitBytes (-5)")
	_, err = fifo.New[int](fifo.Config{LimitPackets: 1 << 25}, nil)
	require.ErrorContains(t, err, "LimitPackets")
}

// TestFIFOSteps protects tail drop, head drop and the byte limit at fixed
// instants.
func TestFIFOSteps(t *testing.T) {
	var dropped []int
	q, err := fifo.New(fifo.Config{LimitPackets: 3, LimitBytes: 250, HeadDrop: true},
		func(p aqm.Packet[int], v aqm.Verdict) { dropped = append(dropped, p.Payload) })
	require.NoError(t, err)
	t0 := aqm.Time(1e9)
	steps := []struct {
		payload int
		size    uint32
		want    aqm.Verdict
		drops   []int // every packet the DropFunc has seen so far
		len     int
	}{
		{1, 100, aqm.Enqueued, nil, 1},
		{2, 100, aqm.Enqueued, nil, 2},
		{3, 100, aqm.Enqueued, []int{1}, 2},   // bytes: 300 > 250, so 1 goes
		{4, 10, aqm.Enqueued, []int{1}, 3},    // 210 bytes, 3 packets (drops are cumulative)
		{5, 10, aqm.Enqueued, []int{1, 2}, 3}, // packet limit: 2 goes
		{6, 251, aqm.DroppedOverlimit, []int{1, 2}, 3},
	}
	for i, s := range steps {
		v := q.Enqueue(aqm.Packet[int]{Payload: s.payload, Meta: aqm.Meta{Size: s.size}}, t0+aqm.Time(i))
		require.Equal(t, s.want, v, "step %d", i)
		require.Equal(t, s.drops, dropped, "step %d", i)
		require.Equal(t, s.len, q.Len(), "step %d", i)
	}
	p, ok := q.Dequeue(t0 + 10)
	require.True(t, ok)
	require.Equal(t, 3, p.Payload)
	require.Equal(t, t0+2, p.Enqueued)
}
