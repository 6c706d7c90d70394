package front_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// TestIPFlushToCaller protects the one Flush shape on an IP front: a
// non-nil drop receives every queued buffer and owns it (the pool is not
// credited), as Front.Flush hands its packets to drop.
func TestIPFlushToCaller(t *testing.T) {
	pool := newPool(t)
	q, err := fifo.New[*front.Buf](fifo.Config{}, pool.Drop)
	require.NoError(t, err)
	f, err := front.NewIP(front.HashIP(q, iphdr.NewHasher()), nil, front.IPConfig{Pool: pool})
	require.NoError(t, err)
	for range 3 {
		v, err := f.Enqueue(buf(pool, v4pkt(hostA, peer, 17, 0, udpSeg(1, 2, 100))))
		require.NoError(t, err)
		require.True(t, v.Accepted())
	}
	var got []*front.Buf
	require.Equal(t, 3, f.Flush(func(p aqm.Packet[*front.Buf], _ aqm.Verdict) { got = append(got, p.Payload) }))
	require.Len(t, got, 3)
	require.Zero(t, f.Len())
	require.Zero(t, pool.Stats().Dropped.Packets, "the caller owns flushed buffers")
}
