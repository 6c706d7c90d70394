package cake

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

type dropRec struct {
	payload int
	why     aqm.Verdict
}

// TestBurstMatchesLoop protects the burst path: two identically seeded
// queues, one driven by EnqueueBatch/DequeueBatch and one by the loop
// definitions, agree on every verdict, packet, DropFunc call, Stats and
// Detail over random bursts of 0..300 with random sizes, ECN and steps.
func TestBurstMatchesLoop(t *testing.T) {
	cfgs := []Config{
		{Seed: 11, LimitPackets: 400, MemoryLimitBytes: 300_000},
		{Seed: 12, Rate: 50 * aqm.Mbit, TinMode: DiffServ4, Ingress: true, LimitPackets: 256},
		{Seed: 13, FlowMode: DualDstHost, ACKFilter: ACKFilterConservative, Overhead: 30, Framing: PTM, LimitPackets: 300},
	}
	for ci, cfg := range cfgs {
		var da, db []dropRec
		a, err := New(cfg, func(p aqm.Packet[int], v aqm.Verdict) { da = append(da, dropRec{p.Payload, v}) })
		require.NoError(t, err)
		b, _ := New(cfg, func(p aqm.Packet[int], v aqm.Verdict) { db = append(db, dropRec{p.Payload, v}) })
		rnd := rand.New(rand.NewPCG(uint64(ci), 7))
		now := ms
		seq := 0
		ps := make([]aqm.Packet[int], 300)
		va, vb := make([]aqm.Verdict, 300), make([]aqm.Verdict, 300)
		ba, bb := make([]aqm.Packet[int], 300), make([]aqm.Packet[int], 300)
		rounds := 300
		if testing.Short() {
			rounds = 100
		}
		for r := range rounds {
			now += aqm.Time(rnd.IntN(3000)) * aqm.Time(time.Microsecond)
			n := rnd.IntN(301)
			for i := range n {
				seq++
				ps[i] = aqm.Packet[int]{Payload: seq, Meta: aqm.Meta{
					Size: uint32(rnd.IntN(1600)), Hash: uint32(rnd.IntN(20)), ECN: aqm.ECN(rnd.IntN(4))}}
			}
			na := a.EnqueueBatch(ps[:n], va, now)
			nb := aqm.EnqueueLoop[int](b, ps[:n], vb, now)
			require.Equal(t, nb, na, "round %d", r)
			require.Equal(t, vb[:n], va[:n], "round %d", r)
			m := rnd.IntN(301)
			ka := a.DequeueBatch(ba[:m], now)
			kb := aqm.DequeueLoop[int](b, bb[:m], now)
			require.Equal(t, kb, ka)
			require.Equal(t, bb[:kb], ba[:ka])
			require.Equal(t, db, da)
			require.Equal(t, b.Stats(), a.Stats())
			require.Equal(t, b.Detail(), a.Detail())
		}
		require.NotEmpty(t, da, "config %d never dropped", ci)
	}
}

// TestZeroAllocs protects the hot paths: no allocation per packet after
// construction, shaped or not, with host isolation and the ACK filter.
func TestZeroAllocs(t *testing.T) {
	cfgs := map[string]Config{
		"default": {Seed: 1},
		"shaped":  {Seed: 2, Rate: 100 * aqm.Mbit, TinMode: DiffServ8, Framing: ATM, Overhead: 40},
		"ack":     {Seed: 3, ACKFilter: ACKFilterAggressive, LimitPackets: 64},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			q, _ := New[int](cfg, nil)
			now := ms
			i := uint32(0)
			info := Info{SrcHost: 1, DstHost: 2, DSCP: 46, ack: ackInfo{TCP: true, Flags: flagACK, Conn: 5}}
			step := func() {
				i++
				now += 10 * aqm.Time(time.Microsecond)
				info.ack.Ack = i * 100
				q.EnqueueInfo(pkt(100+i%1400, i%37), info, now)
				q.Enqueue(pkt(1500, i%5), now)
				q.Dequeue(now)
			}
			for range 5000 {
				step()
			}
			require.Zero(t, testing.AllocsPerRun(2000, step))
			buf := make([]aqm.Packet[int], 32)
			vs := make([]aqm.Verdict, 32)
			for k := range buf {
				buf[k] = pkt(200, uint32(k))
			}
			require.Zero(t, testing.AllocsPerRun(500, func() {
				now += aqm.Time(time.Millisecond)
				q.EnqueueBatch(buf, vs, now)
				q.DequeueBatch(buf, now)
			}))
		})
	}
}

// lightTraffic sends one packet every 10 ms for d from start and returns
// how many were delivered (each dequeued within the same millisecond
// window it is due).
func lightTraffic(q *Queue[int], start aqm.Time, d time.Duration) (sent, total int) {
	now := start
	for now < start+aqm.Time(d) {
		q.Enqueue(pkt(500, 3), now)
		total++
		for _, ok := q.Dequeue(now); ok; _, ok = q.Dequeue(now) {
			sent++
		}
		now += 10 * ms
	}
	return sent, total
}

// TestTimePolicyRecovers protects the time policy for the shaper clocks,
// the tin clocks and COBALT: after a Dequeue far in the future (or
// alternating extreme readings), light traffic is delivered as on a fresh
// queue after at most a second.
func TestTimePolicyRecovers(t *testing.T) {
	for _, rate := range []aqm.Rate{0, 10 * aqm.Mbit, aqm.Mbit} {
		for _, glitch := range []string{"future", "extremes", "idle-future"} {
			t.Run(fmt.Sprint(rate, glitch), func(t *testing.T) {
				q, _ := New[int](Config{Seed: 4, Rate: rate, TinMode: DiffServ4}, nil)
				now := aqm.Time(time.Second)
				for i := range 50 {
					q.EnqueueInfo(pkt(1000, uint32(i%4)), Info{DSCP: uint8(i % 64)}, now)
				}
				switch glitch {
				case "future":
					q.Dequeue(now + 1<<62)
					q.Enqueue(pkt(1000, 9), now+1<<62)
					q.Dequeue(now + 1<<62)
				case "idle-future":
					for range 3000 {
						now += ms
						q.Dequeue(now)
					}
					q.EnqueueInfo(pkt(1000, 9), Info{DSCP: 46}, now+1<<62)
					q.Dequeue(now + 1<<62)
					q.EnqueueInfo(pkt(1000, 9), Info{DSCP: 46}, now+1<<62)
				default:
					for range 4 {
						q.Dequeue(math.MinInt64)
						q.Enqueue(pkt(1000, 9), math.MaxInt64)
						q.Dequeue(math.MaxInt64)
						q.Enqueue(pkt(1000, 9), math.MinInt64)
					}
				}
				// drain what is left at normal time
				for range 2000 {
					now += ms
					q.Dequeue(now)
				}
				// recovery window of one second, then 10 s of light traffic
				lightTraffic(q, now, time.Second)
				sent, total := lightTraffic(q, now+aqm.Time(time.Second), 10*time.Second)
				require.GreaterOrEqual(t, sent, total-1, "delivered %d of %d", sent, total)
			})
		}
	}
}
