package red

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestAverageCountsSegments protects RED's packet-mode average with GSO
// super-packets: a queue of two 10-segment super-packets averages as 20
// wire packets, exactly as 20 single packets do.
func TestAverageCountsSegments(t *testing.T) {
	cfg := Config{MinThreshold: 50, MaxThreshold: 150, Weight: 1, LimitPackets: 400, Seed: 1}
	gso, err := New[int](cfg, nil)
	require.NoError(t, err)
	single, err := New[int](cfg, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	for range 2 {
		require.Equal(t, aqm.Enqueued, gso.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 14480, Segments: 10}}, now))
	}
	for range 20 {
		require.Equal(t, aqm.Enqueued, single.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1448}}, now))
	}
	// The next arrival updates the average with weight 1: it becomes the
	// queue it finds.
	gso.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1448}}, now)
	single.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1448}}, now)
	require.Equal(t, 20.0, gso.Detail().Avg)
	require.Equal(t, single.Detail().Avg, gso.Detail().Avg)
	require.Equal(t, 21, gso.Len())
	require.Equal(t, gso.Stats().Enqueued, single.Stats().Enqueued)
}
