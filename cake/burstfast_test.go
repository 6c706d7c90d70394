package cake

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestBurstInlineMatchesLoop protects the inline common case of the burst
// methods (unshaped, no ACK filter) where it meets the rare turns it hands
// on: many flows (a long decaying list), flows scheduled by EnqueueInfo
// with hosts and other tins between bursts, a sojourn that makes COBALT
// drop and mark, overflow pruning, reconfiguration to smaller limits, and
// time that jumps back; two identically seeded queues, one through the
// burst methods and one through the loop definitions, agree on everything.
func TestBurstInlineMatchesLoop(t *testing.T) {
	cfgs := []Config{
		{Seed: 21, TinMode: BestEffort, FlowMode: Flows, LimitPackets: 3000},
		{Seed: 22, FlowMode: DualSrcHost, LimitPackets: 500, MemoryLimitBytes: 400_000},
		{Seed: 23, TinMode: DiffServ8, FlowMode: FlowBlind, LimitPackets: 200},
		{Seed: 24, TinMode: DiffServ4, FlowMode: TripleIsolate, Overhead: 18, MPU: 64, Framing: ATM, LimitPackets: 800},
	}
	for ci, cfg := range cfgs {
		var da, db []dropRec
		a, err := New(cfg, func(p aqm.Packet[int], v aqm.Verdict) { da = append(da, dropRec{p.Payload, v}) })
		require.NoError(t, err)
		b, _ := New(cfg, func(p aqm.Packet[int], v aqm.Verdict) { db = append(db, dropRec{p.Payload, v}) })
		rnd := rand.New(rand.NewPCG(uint64(ci), 21))
		now := aqm.Time(time.Second)
		seq := 0
		ps := make([]aqm.Packet[int], 128)
		va, vb := make([]aqm.Verdict, 128), make([]aqm.Verdict, 128)
		ba, bb := make([]aqm.Packet[int], 128), make([]aqm.Packet[int], 128)
		rounds := 600
		if testing.Short() {
			rounds = 200
		}
		flows := []int{3, 40, 1500}[ci%3]
		for r := range rounds {
			switch k := rnd.IntN(100); {
			case k < 2:
				now -= aqm.Time(rnd.IntN(50)) * ms // backwards: counts as no time
			case k < 20:
				now += aqm.Time(rnd.IntN(200)) * ms // long sojourns: COBALT signals, flows decay
			default:
				now += aqm.Time(rnd.IntN(500)) * aqm.Time(time.Microsecond)
			}
			if r%97 == 50 {
				c := a.Config()
				c.LimitPackets = cfg.LimitPackets // structural: unchanged
				c.MemoryLimitBytes = 20_000 + rnd.IntN(400_000)
				require.NoError(t, a.Reconfigure(c))
				require.NoError(t, b.Reconfigure(c))
			}
			for range rnd.IntN(4) {
				seq++
				p := aqm.Packet[int]{Payload: seq, Meta: aqm.Meta{Size: uint32(rnd.IntN(1500)), Hash: uint32(rnd.IntN(flows))}}
				info := Info{SrcHost: uint32(rnd.IntN(6)), DstHost: uint32(rnd.IntN(6)), DSCP: uint8(rnd.IntN(64))}
				require.Equal(t, b.EnqueueInfo(p, info, now), a.EnqueueInfo(p, info, now))
			}
			n := rnd.IntN(len(ps) + 1)
			for i := range n {
				seq++
				ps[i] = aqm.Packet[int]{Payload: seq, Meta: aqm.Meta{
					Size: uint32(rnd.IntN(1600)), Hash: uint32(rnd.IntN(flows)), ECN: aqm.ECN(rnd.IntN(4))}}
			}
			na := a.EnqueueBatch(ps[:n], va, now)
			nb := aqm.EnqueueLoop[int](b, ps[:n], vb, now)
			require.Equal(t, nb, na, "config %d round %d", ci, r)
			require.Equal(t, vb[:n], va[:n], "config %d round %d", ci, r)
			m := rnd.IntN(len(ba) + 1)
			ka := a.DequeueBatch(ba[:m], now)
			kb := aqm.DequeueLoop[int](b, bb[:m], now)
			require.Equal(t, kb, ka, "config %d round %d", ci, r)
			require.Equal(t, bb[:kb], ba[:ka], "config %d round %d", ci, r)
			require.Equal(t, db, da, "config %d round %d", ci, r)
			require.Equal(t, b.Stats(), a.Stats(), "config %d round %d", ci, r)
			require.Equal(t, b.Detail(), a.Detail(), "config %d round %d", ci, r)
			if r%16 == 0 {
				require.NoError(t, a.invariants(), "config %d round %d", ci, r)
			}
		}
		s := a.Stats()
		require.NotZero(t, s.Dropped().Packets, "config %d never dropped", ci)
		require.NotZero(t, s.Dequeued.Packets, "config %d never delivered", ci)
	}
}
