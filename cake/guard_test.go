package cake

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestGuardFloodOfFreshHashes protects CAKE's flood guard: a link sending
// one 1500-byte packet every 240 µs, fresh hashes at twice that rate, a
// backlogged flow and a probe every 10 ms. With the guard the backlogged
// flow keeps at least a quarter of the departures and the recurring probe
// is never lost and waits under 5 ms, and every hash's packets leave in
// order; without it the backlogged flow gets almost nothing.
func TestGuardFloodOfFreshHashes(t *testing.T) {
	for _, off := range []bool{false, true} {
		const bulk, probe = 0xb01c, 0x9e0be
		var queuedBulk, probeLost int
		last := map[uint32]uint64{}
		drop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
			switch p.Hash {
			case bulk:
				queuedBulk--
			case probe:
				probeLost++
			}
		}
		q, err := New(Config{TinMode: BestEffort, FlowMode: Flows, LimitPackets: 1000, Seed: 4, DisableFloodGuard: off}, drop)
		require.NoError(t, err)
		rnd := rand.New(rand.NewPCG(5, 5))
		now := aqm.Time(time.Second)
		var sent, bulkSent, probeSent, probeGot int
		var probeWait time.Duration
		id := uint64(0)
		for step := range 200_000 {
			now += aqm.Time(120 * time.Microsecond)
			id++
			q.Enqueue(aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: 1500, Hash: rnd.Uint32()}}, now)
			for k := 0; queuedBulk < 64 && k < 4; k++ {
				id++
				if q.Enqueue(aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: 1500, Hash: bulk}}, now).Accepted() {
					queuedBulk++
				}
			}
			if step%84 == 0 {
				id++
				probeSent++
				q.Enqueue(aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: 64, Hash: probe}}, now)
			}
			if step%2 == 1 {
				p, ok := q.Dequeue(now)
				if !ok {
					continue
				}
				if l, seen := last[p.Hash]; seen {
					require.Greater(t, p.Payload, l, "hash %#x reordered", p.Hash)
				}
				last[p.Hash] = p.Payload
				sent++
				switch p.Hash {
				case bulk:
					bulkSent++
					queuedBulk--
				case probe:
					probeGot++
					if step > 1000 { // the probe's first packets are a new flow's
						probeWait = max(probeWait, p.Enqueued.Since(now))
					}
				}
			}
		}
		d := q.Detail()
		share := float64(bulkSent) / float64(sent)
		t.Logf("guard off %v: bulk share %.3f, probe %d/%d, max wait %v, diverted %d", off, share, probeGot, probeSent, probeWait, d.GuardDiverted)
		if off {
			require.Less(t, share, 0.05)
			require.Zero(t, d.GuardDiverted)
			continue
		}
		require.Greater(t, share, 0.25)
		require.Zero(t, probeLost)
		require.Equal(t, probeSent, probeGot)
		require.Less(t, probeWait, 5*time.Millisecond)
		require.Greater(t, d.GuardDiverted, uint64(100_000))
		require.NotZero(t, d.GuardDropped)
	}
}

// TestGuardZeroAllocs protects CAKE's no-allocation promise on the flood
// guard's paths (diversion, trimming, bursts).
func TestGuardZeroAllocs(t *testing.T) {
	q, err := New[uint64](Config{TinMode: DiffServ4, LimitPackets: 200, Seed: 4}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	ps := make([]aqm.Packet[uint64], 16)
	vs := make([]aqm.Verdict, 16)
	i := uint32(0)
	allocs := testing.AllocsPerRun(500, func() {
		for range 4 {
			i++
			q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: i * 2654435761}}, now)
			q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: i % 5}}, now)
		}
		for j := range ps {
			i++
			ps[j] = aqm.Packet[uint64]{Meta: aqm.Meta{Size: 300, Hash: i*40503 + uint32(j%2)}}
		}
		q.EnqueueBatch(ps, vs, now)
		now += aqm.Time(3 * time.Millisecond)
		q.DequeueBatch(ps[:8], now)
	})
	require.Zero(t, allocs)
	d := q.Detail()
	require.NotZero(t, d.GuardDiverted)
	require.NotZero(t, d.GuardDropped)
}
