package cake

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestBlueDropsMarkedPackets protects COBALT's BLUE in CAKE: with a flow's
// BLUE probability driven to 1 by overload, its ECN-capable packets are
// dropped even when the CoDel half marks them, all but the last packet of
// the flow queue, which is delivered, and CE-marked when the CoDel half
// marked it.
func TestBlueDropsMarkedPackets(t *testing.T) {
	for _, batch := range []bool{false, true} {
		const limit = 16
		q, err := New[int](Config{Seed: 1, FlowMode: Flows, TinMode: BestEffort, LimitPackets: limit}, nil)
		require.NoError(t, err)
		ect := func(i int) aqm.Packet[int] {
			return aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000, Hash: 1, ECN: aqm.ECT0}}
		}
		now := ms
		seq := 0
		for ; seq < limit; seq++ {
			q.Enqueue(ect(seq), now)
		}
		// 300 overflows 6 ms apart: each prunes the flow's head and raises
		// its BLUE probability by 1/256, to 1.
		for range 300 {
			now += 6 * ms
			q.Enqueue(ect(seq), now)
			seq++
		}
		fs, found := q.Flow(1, Info{})
		require.True(t, found)
		require.InDelta(t, 1, fs.Cobalt.BlueProbability, 1e-6)
		dequeue := func(now aqm.Time) (aqm.Packet[int], bool) {
			if !batch {
				return q.Dequeue(now)
			}
			var buf [1]aqm.Packet[int]
			n := q.DequeueBatch(buf[:], now)
			return buf[0], n == 1
		}
		now += 10 * ms
		var got []aqm.Packet[int]
		for {
			p, ok := dequeue(now)
			if !ok {
				break
			}
			got = append(got, p)
		}
		// The head was due a signal (the last overflow forced one) and was
		// marked, then dropped by BLUE; so was every later packet but the
		// last.
		require.Len(t, got, 1, "batch %v: %+v", batch, got)
		require.Equal(t, seq-1, got[0].Payload)
		s := q.Stats()
		require.Equal(t, uint64(limit-1), s.DroppedEarly.Packets)
		require.Zero(t, s.Marked.Packets)

		// A lone packet due a signal: marked, BLUE would drop it, but it
		// is the flow's last, so it leaves with CE.
		q.Enqueue(ect(seq), now)
		p, ok := dequeue(now + 200*ms)
		require.True(t, ok)
		require.Equal(t, aqm.CE, p.ECN)
		require.Equal(t, uint64(1), q.Stats().Marked.Packets)
		require.Equal(t, uint64(1), q.Detail().Tins[0].Marked)
	}
}
