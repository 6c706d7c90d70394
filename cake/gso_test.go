package cake

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestGSOChargedPerSegment protects the shaper's charge for a GSO
// super-packet: each segment pays the overhead and the framing, as it
// will on the wire, not the super-packet once.
func TestGSOChargedPerSegment(t *testing.T) {
	q, err := New[int](Config{Rate: 10_000_000, Overhead: 40, Framing: ATM}, nil)
	require.NoError(t, err)
	// Three 1000-byte segments: 1040 bytes each, 22 cells of 53 bytes.
	one := q.adjLenOf(aqm.Meta{Size: 1000})
	require.Equal(t, uint32(22*53), one)
	require.Equal(t, 3*one, q.adjLenOf(aqm.Meta{Size: 3000, Segments: 3}))
	// An uneven split: 1001 = 333+333+335; the last segment takes the rest.
	want := 2*q.adjLen(333) + q.adjLen(335)
	require.Equal(t, want, q.adjLenOf(aqm.Meta{Size: 1001, Segments: 3}))
	// Segments 0 and 1 are one packet.
	require.Equal(t, one, q.adjLenOf(aqm.Meta{Size: 1000, Segments: 1}))
	// The super-packet is charged more than one packet of the same size.
	require.Greater(t, q.adjLenOf(aqm.Meta{Size: 3000, Segments: 3}), q.adjLenOf(aqm.Meta{Size: 3000}))
}
