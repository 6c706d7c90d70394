package fq

import (
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/stretchr/testify/require"
)

const ct0 = aqm.Time(time.Second)

func cms(k float64) aqm.Time { return ct0 + aqm.Time(k*float64(time.Millisecond)) }

// hashesFor returns n hashes that q maps to n distinct buckets, in
// increasing bucket order.
func hashesFor[T any](q *CoDel[T], n int) []uint32 {
	seen := map[uint32]uint32{}
	for h := uint32(0); len(seen) < n; h++ {
		if _, ok := seen[q.bucket(h)]; !ok {
			seen[q.bucket(h)] = h
		}
	}
	var out []uint32
	for b := uint32(0); b < uint32(len(q.flows)); b++ {
		if h, ok := seen[b]; ok {
			out = append(out, h)
		}
	}
	return out
}

func cpkt(id uint64, size, hash uint32) aqm.Packet[uint64] {
	return aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: size, Hash: hash}}
}

// TestCoDelFlowSize protects the one-cache-line budget of a flow queue.
func TestCoDelFlowSize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(cqFlow{}), uintptr(64))
	require.LessOrEqual(t, unsafe.Sizeof(codel.Controller{}), uintptr(40))
}

// TestCoDelValidate protects configuration errors: every bad field is named
// with the fq prefix, including the CoDel ones and a Target that is bad on
// its own beside a bad Interval, Validate leaves its receiver alone, and
// Config reports the defaults in effect.
func TestCoDelValidate(t *testing.T) {
	cfg := CoDelConfig{Flows: -1, LimitPackets: -1, MemoryLimitBytes: 1 << 32, QuantumBytes: 100, DropBatchPackets: -1,
		Control: codel.Control{Target: 2 * time.Hour, Interval: 2 * time.Hour, MTUBytes: -1, CEThreshold: -1}}
	before := cfg
	err := cfg.Validate()
	require.Equal(t, before, cfg, "Validate must not change its receiver")
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	fields := []string{"Flows", "LimitPackets", "MemoryLimitBytes", "QuantumBytes", "DropBatchPackets", "Target", "Interval", "MTUBytes", "CEThreshold"}
	for _, f := range fields {
		require.Contains(t, err.Error(), "fq: "+f+" (")
	}
	require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), len(fields))
	// Target = MaxInt64 is bad on its own.
	err = CoDelConfig{Control: codel.Control{Target: math.MaxInt64}}.Validate()
	require.ErrorContains(t, err, "fq: Target (")
	var c CoDelConfig
	require.NoError(t, c.Validate())
	require.Equal(t, CoDelConfig{}, c)
	q, err := NewCoDel[uint64](c, nil)
	require.NoError(t, err)
	got := q.Config()
	require.NotZero(t, got.Seed, "the drawn key is reported")
	got.Seed = 0
	require.Equal(t, CoDelConfig{Flows: 1024, LimitPackets: 10240, MemoryLimitBytes: 32 << 20, QuantumBytes: 1514,
		DropBatchPackets: 64, Control: codel.Control{Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, MTUBytes: 1514}}, got)
}

// TestCoDelDRRSteps protects the DRR++ schedule at fixed instants: two
// backlogged flows with 1000-byte packets and a 1514-byte quantum alternate
// two-then-one packets as their credit runs out (RFC rule: a flow is served
// while its deficit is not negative), and a new sparse flow jumps ahead of
// both on arrival.
func TestCoDelDRRSteps(t *testing.T) {
	q, err := NewCoDel[uint64](CoDelConfig{Seed: 1, Flows: 64}, nil)
	require.NoError(t, err)
	h := hashesFor(q, 3)
	a, b, s := h[0], h[1], h[2]
	for i := range uint64(6) {
		q.Enqueue(cpkt(100+i, 1000, a), ct0)
		q.Enqueue(cpkt(200+i, 1000, b), ct0)
	}
	// Deficits: A 1514 → 514 → -486 (rotate, +1514 = 1028) ...
	// A: 100, 101 (credit 1514, 514, then -486); B: 200, 201; A gets 1028:
	// 102, 103 (28, then -972); B likewise 202, 203; A at -972+1514 = 542:
	// 104 (-458); B: 204.
	want := []uint64{100, 101, 200, 201, 102, 103}
	for i, w := range want {
		p, ok := q.Dequeue(cms(float64(i)))
		require.True(t, ok)
		require.Equalf(t, w, p.Payload, "step %d", i)
	}
	// A sparse flow arrives: it is new, so it is served next.
	q.Enqueue(cpkt(300, 100, s), cms(6))
	p, _ := q.Dequeue(cms(6))
	require.Equal(t, uint64(300), p.Payload)
	require.Equal(t, 1, q.Detail().NewFlowsLen, "the emptied sparse flow stays on the new list until its next visit")
	for i, w := range []uint64{202, 203, 104, 204} {
		p, ok := q.Dequeue(cms(7 + float64(i)))
		require.True(t, ok)
		require.Equalf(t, w, p.Payload, "step %d", i)
	}
	d := q.Detail()
	require.Equal(t, uint64(3), d.NewFlowCount)
	require.Equal(t, 0, d.NewFlowsLen)
}

// TestCoDelBatchDrop protects the overload dropper's batch boundaries (from
// the fattest flow's head: half its bytes, at most DropBatchPackets, at least
// one), the choice among near-equals (the flow that entered the largest
// backlog class last), the counters and the count bump.
func TestCoDelBatchDrop(t *testing.T) {
	cases := []struct {
		name      string
		batch     int
		n         int
		size      uint32
		wantDrops int
	}{
		{"half of 10x1000B", 64, 10, 1000, 5},
		{"batch cap 64 of 200x100B", 64, 200, 100, 64},
		{"batch 1 (RFC)", 1, 10, 1000, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var dropped []uint64
			q, err := NewCoDel(CoDelConfig{Seed: 1, Flows: 16, LimitPackets: c.n + 2, DropBatchPackets: c.batch},
				func(p aqm.Packet[uint64], why aqm.Verdict) {
					require.Equal(t, aqm.DroppedOverlimit, why)
					dropped = append(dropped, p.Payload)
				})
			require.NoError(t, err)
			h := hashesFor(q, 3)
			for i := range c.n {
				q.Enqueue(cpkt(uint64(i), c.size, h[1]), ct0)
			}
			q.Enqueue(cpkt(1000, 1, h[0]), ct0)
			q.Enqueue(cpkt(1001, 1, h[2]), ct0)
			require.Empty(t, dropped)
			require.Equal(t, aqm.Enqueued, q.Enqueue(cpkt(1002, 1, h[2]), ct0)) // one over the limit
			require.Len(t, dropped, c.wantDrops)
			for i, id := range dropped {
				require.Equal(t, uint64(i), id, "from the head, in order")
			}
			d := q.Detail()
			require.Equal(t, uint64(c.wantDrops), d.EvictedOverlimit)
			require.Zero(t, d.EvictedOvermemory)
			require.Equal(t, uint32(c.wantDrops), flowState(q.Flow(h[1])).CoDel.Count, "count bumped by the drops")
			s := q.Stats()
			require.Equal(t, uint64(c.wantDrops), s.DroppedOverlimit.Packets)
			require.Equal(t, uint64(c.wantDrops), s.DroppedQueued.Packets)
		})
	}
	t.Run("tie goes to the flow that reached the class last", func(t *testing.T) {
		for _, order := range [][2]int{{1, 2}, {2, 1}} {
			var dropped []uint64
			q, _ := NewCoDel(CoDelConfig{Flows: 16, LimitPackets: 4, Seed: 1}, func(p aqm.Packet[uint64], why aqm.Verdict) { dropped = append(dropped, p.Payload) })
			h := hashesFor(q, 3)
			a, b := h[order[0]], h[order[1]]
			q.Enqueue(cpkt(1, 500, a), ct0)
			q.Enqueue(cpkt(2, 500, b), ct0)
			q.Enqueue(cpkt(3, 500, a), ct0)
			q.Enqueue(cpkt(4, 500, b), ct0)
			q.Enqueue(cpkt(5, 1, h[0]), ct0)
			require.Equal(t, []uint64{2}, dropped, "both hold 1000 B; the second reached it last; half is 500 B")
		}
	})
	t.Run("within a ninth of the largest", func(t *testing.T) {
		var dropped []uint64
		q, _ := NewCoDel(CoDelConfig{Flows: 16, LimitPackets: 3, Seed: 1}, func(p aqm.Packet[uint64], why aqm.Verdict) { dropped = append(dropped, p.Payload) })
		h := hashesFor(q, 3)
		// 1150 and 1100 bytes share the class [1024, 1152): the flow that
		// entered it last is chosen although it holds less. (A 1-byte
		// packet in a third flow fills the third slot.)
		q.Enqueue(cpkt(9, 1, h[2]), ct0)
		q.Enqueue(cpkt(1, 1150, h[0]), ct0)
		q.Enqueue(cpkt(2, 1100, h[1]), ct0)
		require.Equal(t, aqm.Enqueued, q.Enqueue(cpkt(3, 10, h[1]), ct0), "1110 B stays in the class; the drop takes the head")
		require.Equal(t, []uint64{2}, dropped)
		// A backlog in a higher class always wins.
		dropped = nil
		q2, _ := NewCoDel(CoDelConfig{Flows: 16, LimitPackets: 3, Seed: 1}, func(p aqm.Packet[uint64], why aqm.Verdict) { dropped = append(dropped, p.Payload) })
		q2.Enqueue(cpkt(9, 1, h[2]), ct0)
		q2.Enqueue(cpkt(1, 1160, h[0]), ct0)
		q2.Enqueue(cpkt(2, 1100, h[1]), ct0)
		q2.Enqueue(cpkt(3, 10, h[1]), ct0)
		require.Equal(t, []uint64{1}, dropped)
	})
	t.Run("memory trigger and refused arrival", func(t *testing.T) {
		var dropped []uint64
		q, _ := NewCoDel(CoDelConfig{Seed: 1, Flows: 16, MemoryLimitBytes: 3000, Control: codel.Control{MTUBytes: 1000}}, func(p aqm.Packet[uint64], why aqm.Verdict) { dropped = append(dropped, p.Payload) })
		h := hashesFor(q, 2)
		require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(cpkt(0, 3001, h[0]), ct0))
		q.Enqueue(cpkt(1, 1000, h[0]), ct0)
		q.Enqueue(cpkt(2, 1000, h[0]), ct0)
		require.Equal(t, aqm.Enqueued, q.Enqueue(cpkt(3, 1500, h[1]), ct0)) // 3500 > 3000: drop 1 (half of 2000)
		require.Equal(t, []uint64{1}, dropped)
		require.Equal(t, uint64(1), q.Detail().EvictedOvermemory)
		// An arrival that is itself the fattest flow's only packet is refused.
		q2, _ := NewCoDel(CoDelConfig{Seed: 1, Flows: 16, MemoryLimitBytes: 3000, Control: codel.Control{MTUBytes: 1000}}, func(p aqm.Packet[uint64], why aqm.Verdict) { t.Fatal("no queued drop expected") })
		q2.Enqueue(cpkt(1, 1000, h[0]), ct0)
		require.Equal(t, aqm.DroppedOverlimit, q2.Enqueue(cpkt(2, 2500, h[1]), ct0))
		require.Equal(t, 1, q2.Len())
		require.Equal(t, uint64(0), q2.Stats().DroppedQueued.Packets)
	})
}

// TestCoDelCountBumpKeepsInvSqrt is the regression test for the fault a
// model of Linux fq_codel shows: after an overload batch drop raises a
// flow's CoDel count, the cached 1/sqrt(count) must match the new count, so
// the next drops are spaced interval/sqrt(count) apart rather than the few
// microseconds a stale value gives (the flow would then lose almost every
// packet).
func TestCoDelCountBumpKeepsInvSqrt(t *testing.T) {
	var earlyAt []aqm.Time
	now := ct0
	q, err := NewCoDel(CoDelConfig{Seed: 1, Flows: 16, LimitPackets: 600, Control: codel.Control{DisableECN: true}}, func(p aqm.Packet[uint64], why aqm.Verdict) {
		if why == aqm.DroppedEarly {
			earlyAt = append(earlyAt, now)
		}
	})
	require.NoError(t, err)
	h := hashesFor(q, 2)
	id := uint64(0)
	for range 300 {
		id++
		q.Enqueue(cpkt(id, 1000, h[0]), ct0)
	}
	// Serve one packet per ms: the sojourn reaches target at 5 ms, so the
	// flow enters the dropping state at 105 ms with count 1.
	for now < cms(106) {
		now += aqm.Time(time.Millisecond)
		q.Dequeue(now)
	}
	st := flowState(q.Flow(h[0])).CoDel
	require.True(t, st.Dropping)
	require.Equal(t, uint32(1), st.Count)
	// Overload: fill up to the limit; the fat flow h[0] loses a batch and its
	// count rises by the number dropped.
	for q.Detail().EvictedOverlimit == 0 {
		id++
		q.Enqueue(cpkt(id, 1000, h[0]), now)
	}
	st = flowState(q.Flow(h[0])).CoDel
	bumped := st.Count
	require.Greater(t, bumped, uint32(1))
	require.InDelta(t, 4294967296/sqrtf(bumped), float64(st.InvSqrt), 2, "cached 1/sqrt(count) follows the bump")
	// The next drops are spaced at least interval/sqrt(count) for the counts
	// they are made at (count never exceeds bumped+len(earlyAt)).
	earlyAt = earlyAt[:0]
	for range 400 {
		now += aqm.Time(time.Millisecond)
		q.Dequeue(now)
	}
	require.Greater(t, len(earlyAt), 2)
	maxCount := float64(bumped) + float64(len(earlyAt))
	for i := 1; i < len(earlyAt); i++ {
		gap := earlyAt[i].Sub(earlyAt[i-1])
		require.GreaterOrEqualf(t, gap.Seconds(), 0.1/sqrtf(uint32(maxCount))-0.001, "drop %d gap %v", i, gap)
	}
	t.Logf("count bumped to %d; %d drops in 400 ms afterwards", bumped, len(earlyAt))
}

func sqrtf(n uint32) float64 {
	x := float64(n)
	r := x
	for range 60 {
		r = (r + x/r) / 2
	}
	return r
}

// TestCoDelGuardScope protects the MTU guard option: by default a flow with
// one MTU or less of its own queued is never dropped, even when other flows
// hold a lot (RFC 8290 per-queue CoDel); with GlobalBacklogGuard the whole
// queue's backlog counts (Linux), so a thin flow is dropped too.
func TestCoDelGuardScope(t *testing.T) {
	for _, global := range []bool{false, true} {
		t.Run(fmt.Sprint("global=", global), func(t *testing.T) {
			early := map[uint32]int{}
			var qq *CoDel[uint64]
			qq, _ = NewCoDel(CoDelConfig{Seed: 1, Flows: 16, Control: codel.Control{DisableECN: true}, GlobalBacklogGuard: global}, func(p aqm.Packet[uint64], why aqm.Verdict) {
				if why == aqm.DroppedEarly {
					early[p.Hash]++
				}
			})
			h := hashesFor(qq, 2)
			thin, fat := h[0], h[1]
			now := ct0
			for k := range 2000 {
				now += aqm.Time(time.Millisecond)
				// fat: 2 packets per ms, one of which is served; thin: kept
				// at two 1000-byte packets (so at most 1000 B of its own
				// behind its head), stamped 20 ms old so it is always above
				// target.
				qq.Enqueue(cpkt(uint64(k), 1000, fat), now)
				qq.Enqueue(cpkt(uint64(k), 1000, fat), now)
				for flowState(qq.Flow(thin)).Packets < 2 {
					qq.Enqueue(cpkt(uint64(k), 1000, thin), now-aqm.Time(20*time.Millisecond))
				}
				qq.Dequeue(now)
				qq.Dequeue(now)
			}
			require.Greater(t, early[fat], 0)
			if global {
				require.Greater(t, early[thin], 0)
			} else {
				require.Zero(t, early[thin])
			}
		})
	}
}

// TestCoDelReconfigure protects live reconfiguration: same table (state
// kept), a larger and a smaller packet capacity, and a re-hash into a new
// table, all without loss, duplication or reordering within a flow.
func TestCoDelReconfigure(t *testing.T) {
	q, err := NewCoDel[uint64](CoDelConfig{Seed: 1, Flows: 8, LimitPackets: 100}, nil)
	require.NoError(t, err)
	for i := range uint64(80) {
		q.Enqueue(cpkt(i, 100, uint32(i%5)), ct0)
	}
	before := flowState(q.Flow(1))
	require.NoError(t, q.Reconfigure(CoDelConfig{Flows: 8, LimitPackets: 100, QuantumBytes: 300}))
	require.Equal(t, before, flowState(q.Flow(1)))
	require.NoError(t, q.Reconfigure(CoDelConfig{Flows: 8, LimitPackets: 50}))
	require.Equal(t, 80, q.Len())
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(cpkt(999, 1, 0), ct0))
	require.Error(t, q.Reconfigure(CoDelConfig{Flows: -8}))
	require.NoError(t, q.Reconfigure(CoDelConfig{Flows: 3, Seed: 9, LimitPackets: 1000}))
	require.Equal(t, 80, q.Len())
	require.Equal(t, 8000, q.Backlog())
	last := map[uint32]uint64{}
	seen := 0
	for {
		p, ok := q.Dequeue(ct0)
		if !ok {
			break
		}
		if l, ok := last[p.Hash]; ok {
			require.Greater(t, p.Payload, l)
		}
		last[p.Hash] = p.Payload
		seen++
	}
	require.Equal(t, 80, seen)
}
