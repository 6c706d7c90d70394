package cobalt

import (
	"testing"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/require"
)

// TestBlueDropsMarkedPackets protects BLUE's policing of ECN senders: a
// packet the CoDel half has just marked CE still meets BLUE's draw, so with
// BLUE's probability at 1 an ECN-capable packet is dropped, not marked,
// and the drop counts as an overload drop of an ECN-capable packet.
func TestBlueDropsMarkedPackets(t *testing.T) {
	q, err := New[int](Config{LimitPackets: 2, BlueIncrement: 1, Seed: 1}, nil)
	require.NoError(t, err)
	at := func(ms int) aqm.Time { return aqm.Time(ms) * aqm.Time(time.Millisecond) }
	for i := range 3 { // the third overflows: BLUE to 1, CoDel forced to signal
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100, ECN: aqm.ECT0}}, at(10))
	}
	require.InDelta(t, 1, q.Detail().BlueProbability, 1e-9)
	p, ok := q.Dequeue(at(20))
	require.False(t, ok, "BLUE at probability 1 must drop every packet, got %+v", p)
	s, d := q.Stats(), q.Detail()
	require.Equal(t, uint64(2), s.DroppedOverload.Packets)
	require.Zero(t, s.Marked.Packets)
	require.Equal(t, uint64(2), d.BlueDrops)
	require.Zero(t, d.Marks)
	// The mark still counts as a CoDel signal: the episode's count moved on.
	require.Equal(t, uint32(2), d.Count)

	// The controller says the CoDel half marked the packet BLUE dropped.
	prm := Config{BlueIncrement: 1}.Params()
	var c Controller
	var src rng.Source
	src.Seed(1)
	c.QueueFull(&prm, at(10))
	require.Equal(t, DropBlue, c.Signal(&prm, &src, at(20), 10*time.Millisecond, aqm.ECT1))
	require.True(t, c.Marked())
	require.Equal(t, DropBlue, c.Signal(&prm, &src, at(21), 11*time.Millisecond, aqm.ECT1))
	require.False(t, c.Marked(), "not due: the CoDel half did not mark")
}

// TestControllerSize protects the per-flow footprint the docs promise: a
// Controller is 32 bytes, so fair queues embed one per flow cheaply.
func TestControllerSize(t *testing.T) {
	require.Equal(t, uintptr(32), unsafe.Sizeof(Controller{}))
}
