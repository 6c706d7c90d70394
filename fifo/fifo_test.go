package fifo_test

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/stretchr/testify/require"
)

func fifoFactory(cfg fifo.Config) aqmtest.Factory {
	limit := cfg.LimitPackets
	if limit == 0 {
		limit = fifo.DefaultLimitPackets
	}
	return aqmtest.Factory{
		New: func(_ uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			return fifo.New(cfg, onDrop)
		},
		LimitPackets: limit,
		LimitBytes:   cfg.LimitBytes,
	}
}

var fifoConfigs = map[string]fifo.Config{
	"pfifo-default":   {},
	"pfifo-small":     {LimitPackets: 5},
	"bfifo":           {LimitPackets: 100, LimitBytes: 20000},
	"head-drop":       {LimitPackets: 8, HeadDrop: true},
	"head-drop-bytes": {LimitPackets: 50, LimitBytes: 10000, HeadDrop: true},
}

// TestFIFOReconfigure protects Reconfigure under traffic: limits shrink
// below and grow above the queued packets with nothing lost, duplicated or
// reordered (the kit's Reconfigure check), and a bad config leaves the queue
// as it was.
func TestFIFOReconfigure(t *testing.T) {
	cycle := []fifo.Config{{LimitPackets: 4}, {LimitPackets: 300, LimitBytes: 40000}, {LimitPackets: 16, HeadDrop: true}, {LimitPackets: 64}}
	f := fifoFactory(fifo.Config{LimitPackets: 64})
	f.LimitPackets = 300
	f.LimitBytes = 0
	f.Reconfigure = func(q aqm.Queue[uint64], i int) error {
		return q.(*fifo.Queue[uint64]).Reconfigure(cycle[i%len(cycle)])
	}
	aqmtest.Run(t, f)

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

// TestFIFOConformance protects the baseline's compliance with the whole
// aqm.Queue contract in every mode.
func TestFIFOConformance(t *testing.T) {
	for name, cfg := range fifoConfigs {
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, fifoFactory(cfg)) })
	}
}

// FuzzFIFO protects the contract on arbitrary traces, in head-drop byte
// mode (the mode with the most paths).
func FuzzFIFO(f *testing.F) { aqmtest.Fuzz(f, fifoFactory(fifoConfigs["head-drop-bytes"])) }

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
