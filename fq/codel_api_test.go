package fq

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/require"
)

// TestCoDelSeed protects hash keying: two queues with the zero Seed draw
// different secret keys and so map the same flows to different queues, two
// with the same non-zero Seed map them identically, and a Reconfigure with
// Seed 0 keeps the key in use.
func TestCoDelSeed(t *testing.T) {
	buckets := func(q *CoDel[uint64]) []uint32 {
		out := make([]uint32, 64)
		for i := range out {
			out[i] = q.bucket(uint32(i) * 0x9e3779b1)
		}
		return out
	}
	a, err := NewCoDel[uint64](CoDelConfig{}, nil)
	require.NoError(t, err)
	b, err := NewCoDel[uint64](CoDelConfig{}, nil)
	require.NoError(t, err)
	require.NotEqual(t, a.Config().Seed, b.Config().Seed)
	require.NotEqual(t, buckets(a), buckets(b), "zero-seed queues must not share a hash mapping")
	c, _ := NewCoDel[uint64](CoDelConfig{Seed: 42}, nil)
	d, _ := NewCoDel[uint64](CoDelConfig{Seed: 42}, nil)
	require.Equal(t, buckets(c), buckets(d))
	require.Equal(t, uint64(42), c.Config().Seed)
	before := buckets(a)
	a.Enqueue(cpkt(1, 100, 7), ct0)
	require.NoError(t, a.Reconfigure(CoDelConfig{QuantumBytes: 300}))
	require.Equal(t, before, buckets(a))
	require.Equal(t, 1, flowState(a.Flow(7)).Packets, "the flow kept its place")
	require.Equal(t, 300, a.Config().QuantumBytes)
}

// TestCoDelConfigForLink protects the preset: its limits are four round
// trips at the rate (in bytes and in full-size packets), everything else is
// the default, and it validates.
func TestCoDelConfigForLink(t *testing.T) {
	cfg := CoDelConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	require.Equal(t, CoDelConfig{LimitPackets: 265, MemoryLimitBytes: 400000}, cfg)
	require.NoError(t, cfg.Validate())
	require.Equal(t, cfg, CoDelConfigForLink(8*aqm.Mbit, 0), "zero RTT is 100 ms")
	fast := CoDelConfigForLink(10*aqm.Gbit, 100*time.Millisecond)
	require.Equal(t, 32<<20, fast.MemoryLimitBytes)
	slow := CoDelConfigForLink(100*aqm.Kbit, 20*time.Millisecond)
	require.Equal(t, (64 << 10), slow.MemoryLimitBytes)
	require.Equal(t, ((64<<10)+1513)/1514, slow.LimitPackets)
}

// TestCoDelPresetUnresponsiveFlow protects the preset's purpose at 8 Mb/s
// with a discrete-time model (100 µs steps, 30 s): the link dequeues one
// packet whenever the previous one has been sent at 8 Mb/s; an unresponsive
// sender offers 1500-byte packets at 16 Mb/s (twice the link); a responsive
// sender keeps at most cwnd 1500-byte ECT(0) packets in flight, learns of
// each delivery one 40 ms base RTT after it leaves the queue, grows cwnd by
// 1/cwnd per acknowledged packet and halves it (at most once per RTT) on a
// CE mark or a drop. After a 5 s warm-up, the responsive flow's queueing
// delay must stay under 20 ms, the unresponsive flow's under the time its
// fair half of the link takes to drain the preset's buffer, and the
// responsive flow must get at least 40% of the link.
func TestCoDelPresetUnresponsiveFlow(t *testing.T) {
	const (
		rate    = 8 * aqm.Mbit
		size    = 1500
		baseRTT = 40 * time.Millisecond
		dt      = aqm.Time(100 * time.Microsecond)
		warm    = aqm.Time(5 * time.Second)
		end     = aqm.Time(30 * time.Second)
	)
	cfg := CoDelConfigForLink(rate, 0)
	cfg.Seed = 3
	var q *CoDel[uint64]
	var now aqm.Time
	cwnd, inflight, lastCut := 2.0, 0, aqm.Time(math.MinInt64/2)
	cut := func() {
		if now-lastCut > aqm.Time(baseRTT) {
			cwnd, lastCut = max(cwnd/2, 1), now
		}
	}
	q, err := NewCoDel(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) {
		if p.Hash == 1 {
			inflight--
			cut()
		}
	})
	require.NoError(t, err)
	type ack struct {
		at aqm.Time
		ce bool
	}
	var acks []ack
	var respWorst, cbrWorst time.Duration
	var respBytes, cbrSent, seq uint64
	maxBacklog := 0
	nextCBR, linkFree := aqm.Time(0), aqm.Time(0)
	for now = 0; now < end; now += dt {
		for len(acks) > 0 && acks[0].at <= now {
			inflight--
			if acks[0].ce {
				cut()
			} else {
				cwnd += 1 / cwnd
			}
			acks = acks[1:]
		}
		for float64(inflight) < math.Floor(cwnd) {
			seq++
			if q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: size, Hash: 1, ECN: aqm.ECT0}}, now).Accepted() {
				inflight++
			} else {
				cut()
			}
		}
		for nextCBR <= now {
			seq++
			cbrSent++
			q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: size, Hash: 2}}, now)
			nextCBR += aqm.Time(rate.TxTime(size) / 2)
		}
		maxBacklog = max(maxBacklog, q.Backlog())
		if linkFree > now {
			continue
		}
		p, ok := q.Dequeue(now)
		if !ok {
			continue
		}
		linkFree = now + aqm.Time(rate.TxTime(int64(p.Size)))
		sj := p.Enqueued.Since(now)
		if p.Hash == 1 {
			acks = append(acks, ack{now + aqm.Time(baseRTT), p.ECN == aqm.CE})
		}
		if now < warm {
			continue
		}
		if p.Hash == 1 {
			respWorst = max(respWorst, sj)
			respBytes += uint64(p.Size)
		} else {
			cbrWorst = max(cbrWorst, sj)
		}
	}
	share := float64(respBytes*8) / time.Duration(end-warm).Seconds() / float64(rate)
	drain := rate.TxTime(int64(cfg.MemoryLimitBytes)) * 2
	t.Logf("responsive: worst delay %v, share %.2f; unresponsive: worst delay %v (bound %v); %d sent, %d overload drops",
		respWorst, share, cbrWorst, drain, cbrSent, q.Detail().EvictedOverlimit)
	require.Less(t, respWorst, 20*time.Millisecond)
	require.LessOrEqual(t, maxBacklog, cfg.MemoryLimitBytes)
	require.Less(t, cbrWorst, drain)
	require.Greater(t, share, 0.4)
}

// TestCoDelBatchMatchesLoop protects the burst path: on random traces
// (bursts of 0 to 300 packets, random sizes, hashes, ECN codepoints and time
// steps, limits small enough to overload) EnqueueBatch and DequeueBatch give
// exactly what the loops of Enqueue and Dequeue give on an identically
// seeded queue: verdicts, packets, DropFunc calls, Stats and Detail.
func TestCoDelBatchMatchesLoop(t *testing.T) {
	type drop struct {
		p   aqm.Packet[uint64]
		why aqm.Verdict
	}
	var overloads, early uint64
	for _, cfg := range []CoDelConfig{
		{Flows: 16, LimitPackets: 200, MemoryLimitBytes: 150000, Control: codel.Control{Target: time.Millisecond, Interval: 10 * time.Millisecond}},
		{Flows: 1024, LimitPackets: 1000, Control: codel.Control{DisableECN: true}, GlobalBacklogGuard: true, DropBatchPackets: 3},
		{Flows: 4, LimitPackets: 30, MemoryLimitBytes: 20000, QuantumBytes: 256, Control: codel.Control{CEThreshold: time.Millisecond}},
	} {
		for seed := range uint64(3) {
			cfg.Seed = seed + 1
			var gotA, gotB []drop
			a, err := NewCoDel(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) { gotA = append(gotA, drop{p, why}) })
			require.NoError(t, err)
			b, err := NewCoDel(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) { gotB = append(gotB, drop{p, why}) })
			require.NoError(t, err)
			src := rng.New(seed)
			now := ct0
			ps := make([]aqm.Packet[uint64], 300)
			va, vb := make([]aqm.Verdict, 300), make([]aqm.Verdict, 300)
			bufA, bufB := make([]aqm.Packet[uint64], 300), make([]aqm.Packet[uint64], 300)
			id := uint64(0)
			ops := 300
			if testing.Short() {
				ops = 200
			}
			for op := range ops {
				now += aqm.Time(src.Uint64() % uint64(3*time.Millisecond))
				n := int(src.Uint64() % 301)
				if src.Uint64()%2 == 0 {
					for i := range ps[:n] {
						id++
						size := uint32(40 + src.Uint64()%1500)
						if src.Uint64()%50 == 0 {
							size = uint32(src.Uint64() % 300000) // sometimes above the memory limit
						}
						ps[i] = aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: size, Hash: uint32(src.Uint64() % 40), ECN: aqm.ECN(src.Uint64())}}
					}
					vl := min(n, int(src.Uint64()%301)) // the verdict slice may be shorter
					ka := a.EnqueueBatch(ps[:n], va[:vl], now)
					kb := aqm.EnqueueLoop(b, ps[:n], vb[:vl], now)
					require.Equal(t, kb, ka, "op %d", op)
					require.Equal(t, vb[:vl], va[:vl], "op %d", op)
				} else {
					ka := a.DequeueBatch(bufA[:n], now)
					kb := aqm.DequeueLoop(b, bufB[:n], now)
					require.Equal(t, kb, ka, "op %d", op)
					require.Equal(t, bufB[:kb], bufA[:ka], "op %d", op)
				}
				require.Equal(t, gotB, gotA, "op %d", op)
				gotA, gotB = gotA[:0], gotB[:0]
				require.Equal(t, b.Stats(), a.Stats(), "op %d", op)
				require.Equal(t, b.Detail(), a.Detail(), "op %d", op)
			}
			overloads += a.Detail().EvictedOverlimit
			early += a.Stats().DroppedEarly.Packets
		}
	}
	require.NotZero(t, overloads, "the traces must reach the overload drop")
	require.NotZero(t, early, "the traces must reach CoDel drops")
	// Zero allocations on both burst methods.
	q, _ := NewCoDel[uint64](CoDelConfig{Seed: 1, LimitPackets: 64}, nil)
	ps := make([]aqm.Packet[uint64], 32)
	vs := make([]aqm.Verdict, 32)
	for i := range ps {
		ps[i] = cpkt(uint64(i), 1000, uint32(i%5))
	}
	now := ct0
	require.Zero(t, testing.AllocsPerRun(500, func() {
		now += aqm.Time(time.Millisecond)
		q.EnqueueBatch(ps, vs, now)
		q.DequeueBatch(ps[:16], now)
		for i := range ps {
			ps[i] = cpkt(uint64(i), 1000, uint32(i%5))
		}
	}))
}

// TestCoDelTimeGlitch protects recovery from bad clock readings (aqm's time
// policy): after a congested episode read at a far-future instant, and
// separately after alternating extreme readings, light traffic (one packet
// every 10 ms per flow for 10 s) at normal time is delivered as on a fresh
// queue once a recovery of one interval has passed.
func TestCoDelTimeGlitch(t *testing.T) {
	for _, glitch := range []string{"far-future", "alternating-extremes"} {
		t.Run(glitch, func(t *testing.T) {
			q, err := NewCoDel[uint64](CoDelConfig{Seed: 5, Flows: 64, Control: codel.Control{DisableECN: true}}, nil)
			require.NoError(t, err)
			now := ct0
			// A standing queue in a few flows, so CoDel is dropping.
			for i := range 3000 {
				now += aqm.Time(100 * time.Microsecond)
				q.Enqueue(cpkt(uint64(i), 1500, uint32(i%4)), now)
				if i%2 == 0 {
					q.Dequeue(now)
				}
			}
			require.NotZero(t, q.Stats().DroppedEarly.Packets)
			switch glitch {
			case "far-future":
				q.Dequeue(now + 1<<62)
				q.Enqueue(cpkt(1, 1500, 1), now+1<<62)
			default:
				for i := range 20 {
					at := aqm.Time(math.MinInt64)
					if i%2 == 1 {
						at = math.MaxInt64
					}
					q.Enqueue(cpkt(2, 1500, uint32(i%4)), at)
					q.Dequeue(at)
				}
			}
			for q.Len() > 0 { // drain at normal time
				q.Dequeue(now)
			}
			recovery := now + aqm.Time(q.Config().Interval)
			delivered, sent := 0, 0
			for i := range 1000 {
				now += aqm.Time(10 * time.Millisecond)
				for f := range uint32(4) {
					q.Enqueue(cpkt(uint64(10000+i), 1500, f), now)
					if now > recovery {
						sent++
					}
				}
				for {
					p, ok := q.Dequeue(now + aqm.Time(time.Millisecond))
					if !ok {
						break
					}
					require.Less(t, p.Enqueued.Since(now+aqm.Time(time.Millisecond)), 5*time.Millisecond)
					if now > recovery {
						delivered++
					}
				}
			}
			require.Equal(t, sent, delivered)
		})
	}
}

// TestCoDelTimeGlitchStanding protects CoDel's control of a standing queue
// across a far-future reading: a flow holding 100 packets is read at
// now+2^62 (which sets its deadline, then its drop schedule, far ahead),
// then offered twice what it can send for 3 s at normal time; it must be
// signalled as often as on a queue that saw no glitch.
func TestCoDelTimeGlitchStanding(t *testing.T) {
	run := func(glitch int) uint64 {
		q, err := NewCoDel[uint64](CoDelConfig{Seed: 5, Flows: 64, Control: codel.Control{DisableECN: true}}, nil)
		require.NoError(t, err)
		now := ct0
		for i := range 100 {
			q.Enqueue(cpkt(uint64(i), 1500, 1), now)
		}
		for g := range glitch {
			q.Dequeue(now + 1<<62 + aqm.Time(g)*aqm.Time(time.Second))
		}
		for i := range 30000 {
			now += aqm.Time(100 * time.Microsecond)
			q.Enqueue(cpkt(uint64(i), 1500, 1), now)
			if i%2 == 0 {
				q.Dequeue(now)
			}
		}
		return q.Stats().DroppedEarly.Packets
	}
	control := run(0)
	require.Greater(t, control, uint64(100))
	for glitch := 1; glitch <= 2; glitch++ {
		got := run(glitch)
		require.GreaterOrEqual(t, got, control*9/10, "glitch readings %d", glitch)
	}
}

// TestCoDelDetailMetrics protects the exported metrics: unique tc-like
// names, one per Detail value, each equal to the value it names, and the
// preallocated memory reported and growing with the configuration.
func TestCoDelDetailMetrics(t *testing.T) {
	q, err := NewCoDel[uint64](CoDelConfig{Seed: 1, Flows: 16, LimitPackets: 8}, nil)
	require.NoError(t, err)
	for i := range 20 {
		q.Enqueue(cpkt(uint64(i), 100+uint32(i), uint32(i%3)), ct0)
	}
	q.Dequeue(ct0)
	d := q.Detail()
	want := map[string]float64{
		"evicted_overlimit_packets": float64(d.EvictedOverlimit), "evicted_overmemory_packets": float64(d.EvictedOvermemory),
		"diverted_flood_guard_packets": float64(d.GuardDiverted), "dropped_flood_guard_packets": float64(d.GuardDropped),
		"promoted_flood_guard_flows": float64(d.GuardPromoted), "flood_guard_queue_packets": float64(d.GuardQueueLen),
		"activated_flows": float64(d.NewFlowCount), "marked_codel_packets": float64(d.MarkedCoDel),
		"marked_ce_threshold_packets": float64(d.MarkedCEThreshold), "capped_dequeues": float64(d.CappedDequeues),
		"new_flows": float64(d.NewFlowsLen), "old_flows": float64(d.OldFlowsLen),
		"max_flow_backlog_bytes": float64(d.MaxFlowBacklog), "memory_bytes": float64(d.MemoryBytes),
	}
	got := map[string]float64{}
	for m := range d.metrics() {
		_, dup := got[m.Name]
		require.False(t, dup, m.Name)
		got[m.Name] = m.Value
		if m.Name == "new_flows" || m.Name == "old_flows" || m.Name == "flood_guard_queue_packets" || m.Name[len(m.Name)-6:] == "_bytes" {
			require.Equal(t, aqm.Gauge, m.Kind, m.Name)
		} else {
			require.Equal(t, aqm.Counter, m.Kind, m.Name)
		}
	}
	require.Equal(t, want, got)
	require.NotZero(t, d.EvictedOverlimit)
	// 64 + 32 bytes per flow and the shared queue, 28 per flow of flood
	// guard, 32 per packet node (limit + 1), the stack heads.
	require.Equal(t, 96*17+28*16+512+241*4+32*9, d.MemoryBytes)
	big, _ := NewCoDel[uint64](CoDelConfig{Seed: 1, Flows: 65536}, nil)
	require.Equal(t, 96*65537+28*65536+512+241*4+32*10241, big.Detail().MemoryBytes)
	for range d.metrics() {
		break // stopping early is allowed
	}
}

// TestCoDelOverloadWorkBounded protects against the CPU cost of a hash
// flood: 10^6 distinct flow hashes arrive at twice the dequeue rate (so the
// queue sits at its packet limit and almost every arrival triggers an
// overload drop while each flow queue holds one or two packets), and the
// overload bookkeeping visits a bounded number of class-stack entries and
// flow slots per arrival, the same at 1024, 16384 and 65536 flows (a scan
// of the flow table visited Flows slots per arrival). With the flood guard
// on, the same flood goes to the shared queue: the guard's steps per
// arrival (its decision, and at most guardTrim heads dropped) are bounded
// too, and the overload path, run with a queue held at its limit by a
// shared-queue sojourn limit it cannot reach, still is. The guard arms
// only once the flood has spent its admission budget, and the packets
// already in the buckets are let through as guests until they leave
// (about 200 000 arrivals here), so the guarded runs are never shortened.
func TestCoDelOverloadWorkBounded(t *testing.T) {
	for _, c := range []struct {
		flows  int
		guard  bool
		target time.Duration
	}{{1024, false, 0}, {16384, false, 0}, {65536, false, 0}, {1024, true, 0}, {65536, true, 0}, {65536, true, time.Second}} {
		flows := c.flows
		arrivals := 1_000_000
		if testing.Short() && !c.guard {
			arrivals = 200_000
		}
		q, err := NewCoDel[uint64](CoDelConfig{Seed: 9, Flows: flows, LimitPackets: 4096, DisableFloodGuard: !c.guard, Control: codel.Control{Target: c.target, Interval: max(c.target*2, 100*time.Millisecond)}}, nil)
		require.NoError(t, err)
		now := ct0
		for i := range arrivals {
			now += aqm.Time(750 * time.Nanosecond)
			q.Enqueue(cpkt(uint64(i), 1500, uint32(i%1_000_000)*2654435761), now)
			if i%2 == 0 {
				q.Dequeue(now)
			}
		}
		d := q.Detail()
		per := float64(q.work) / float64(arrivals)
		t.Logf("flows %d guard %v target %v: %d overload drops, %d guard drops, %.3f entries visited per arrival",
			flows, c.guard, c.target, d.EvictedOverlimit, d.GuardDropped, per)
		require.Greater(t, q.Stats().DroppedOverlimit.Packets, uint64(arrivals/3), "the flood must overload the queue")
		if c.guard {
			require.Greater(t, d.GuardDiverted, uint64(arrivals/2), "the guard must divert the flood")
			if c.target == time.Second {
				require.Greater(t, d.EvictedOverlimit, uint64(arrivals/3), "the shared queue must overload the queue")
			}
		}
		require.Less(t, per, 6.0, fmt.Sprintf("flows %d guard %v", flows, c.guard))
	}
}
