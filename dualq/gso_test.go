package dualq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestStepCountsSegments protects the packet-count step with GSO
// super-packets: an L4S packet leaving with more than StepThresholdPackets
// wire packets behind it is marked, however they are grouped, and a mark
// on a super-packet counts once per segment.
func TestStepCountsSegments(t *testing.T) {
	q, err := New[int](Config{StepThresholdPackets: 5, LimitPackets: 100, Seed: 1}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	// Two 8-segment super-packets, then one packet: 17 wire packets in
	// three packets, all L4S.
	for i := 1; i <= 2; i++ {
		require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 8 * 1448, ECN: aqm.ECT1, Segments: 8}}, now))
	}
	require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Payload: 3, Meta: aqm.Meta{Size: 1448, ECN: aqm.ECT1}}, now))
	require.Equal(t, 17, q.Len())
	// The first leaves 9 wire packets behind it (two packets): above the
	// step, marked, eight marks.
	p, ok := q.Dequeue(now)
	require.True(t, ok)
	require.Equal(t, 1, p.Payload)
	require.Equal(t, aqm.CE, p.ECN)
	require.Equal(t, uint64(8), q.Stats().Marked.Packets)
	require.Equal(t, uint64(8), q.Detail().MarkedStep)
	// The second leaves 1: below the step, not marked.
	p, ok = q.Dequeue(now)
	require.True(t, ok)
	require.Equal(t, 2, p.Payload)
	require.Equal(t, aqm.ECT1, p.ECN)
	require.Equal(t, uint64(8), q.Stats().Marked.Packets)
	require.Equal(t, 1, q.Len())
}
