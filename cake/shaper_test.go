package cake

import (
	"maps"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"
)

// refAdjLen is the overhead-adjusted length written cell by cell: add the
// overhead, raise to the MPU, then count ATM cells (48 payload bytes, 53
// on the wire) or PTM 64-byte blocks (65 on the wire) one at a time.
func refAdjLen(size, overhead, mpu int, f Framing) int {
	n := size + overhead
	if n < mpu {
		n = mpu
	}
	if n < 0 {
		n = 0
	}
	switch f {
	case ATM:
		cells := 0
		for left := n; left > 0; left -= 48 {
			cells++
		}
		return cells * 53
	case PTM:
		blocks := 0
		for left := n; left > 0; left -= 64 {
			blocks++
		}
		return n + blocks
	}
	return n
}

// TestAdjustedLenReference protects overhead compensation: every size up
// to 3000 under every preset and random overheads gives the reference's
// length exactly.
func TestAdjustedLenReference(t *testing.T) {
	presets := []Overhead{{Bytes: -64, MPU: 0, Framing: ATM}, {Bytes: 256, MPU: 256, Framing: PTM}, {Bytes: -10, MPU: 0}}
	for _, name := range slices.Sorted(maps.Keys(overheadPresets)) {
		o, ok := OverheadPreset(name)
		require.True(t, ok, name)
		presets = append(presets, o)
	}
	_, ok := OverheadPreset("adsl")
	require.False(t, ok)
	for _, o := range presets {
		q, err := New[int](o.Apply(Config{Seed: 1}), nil)
		require.NoError(t, err)
		for s := range 3000 {
			require.Equal(t, refAdjLen(s, o.Bytes, o.MPU, o.Framing), int(q.adjLen(uint32(s))), "%+v size %d", o, s)
		}
	}
	// Known values: a 1500-byte IP packet over PPPoE LLC/SNAP ATM is 32
	// cells (1540 bytes -> 33 cells would be 1584), and 64 bytes is 2 cells.
	q, _ := New[int](overheadPresets["pppoe-llcsnap"].Apply(Config{Seed: 1}), nil)
	require.Equal(t, uint32(33*53), q.adjLen(1500)) // 1540/48 = 32.08 -> 33 cells
	require.Equal(t, uint32(3*53), q.adjLen(64))    // 104/48 -> 3 cells
	q, _ = New[int](overheadPresets["ethernet"].Apply(Config{Seed: 1}), nil)
	require.Equal(t, uint32(84), q.adjLen(40))
	require.Equal(t, uint32(1538), q.adjLen(1500))
}

// runShaped keeps one flow backlogged on q and dequeues each packet at
// exactly NextDeparture; it returns the departure instants.
func runShaped(q *Queue[int], sizes []uint32, start aqm.Time) []aqm.Time {
	now := start
	for _, s := range sizes {
		q.Enqueue(pkt(s, 1), now)
	}
	var out []aqm.Time
	for q.Len() > 0 {
		if nd := q.NextDeparture(now); nd > now {
			now = nd
		}
		if _, ok := q.Dequeue(now); ok {
			out = append(out, now)
		}
	}
	return out
}

// TestShaperDeparturesReference protects the deficit-mode shaper: with a
// backlog, packet k leaves when the link has finished packet k-1, i.e. at
// start + the exact (rational) transmission time of the earlier packets'
// adjusted lengths, within the fixed-point rounding (1 ns per packet).
func TestShaperDeparturesReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 5))
	for _, rate := range []aqm.Rate{64 * aqm.Kbit, aqm.Mbit, 37 * aqm.Mbit, 10 * aqm.Gbit} {
		for _, o := range []Overhead{overheadPresets["raw"], overheadPresets["pppoe-vcmux"], overheadPresets["bridged-ptm"], overheadPresets["ethernet"]} {
			q, _ := New[int](o.Apply(Config{Seed: 1, Rate: rate, TinMode: BestEffort,
				Target: time.Hour - 1, Interval: time.Hour, LimitPackets: 500, MemoryLimitBytes: 1 << 20}), nil)
			sizes := make([]uint32, 300)
			for i := range sizes {
				sizes[i] = uint32(rnd.IntN(1500))
			}
			start := aqm.Time(time.Second)
			got := runShaped(q, sizes, start)
			require.Len(t, got, len(sizes))
			sum := new(big.Rat)
			for k, s := range sizes {
				want := new(big.Rat).Add(new(big.Rat).SetInt64(int64(start)), sum)
				w, _ := want.Float64()
				require.InDelta(t, w, float64(got[k]), float64(k+2), "rate %v %+v packet %d", rate, o, k)
				adj := int64(refAdjLen(int(s), o.Bytes, o.MPU, o.Framing))
				sum.Add(sum, big.NewRat(adj*8*int64(time.Second), int64(rate)))
			}
		}
	}
}

// TestOverheadRateExactATM is the gopter property that the shaped rate is
// exact on ATM framing: a backlog of packets of one random size s with a
// random overhead is delivered at rate·s/(53·⌈(s+o)/48⌉) IP bytes per
// second.
func TestOverheadRateExactATM(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(42)
	params.MinSuccessfulTests = 40
	props := gopter.NewProperties(params)
	props.Property("ATM goodput", prop.ForAll(func(s, o int, mbit int) bool {
		rate := aqm.Rate(mbit) * aqm.Mbit
		q, _ := New[int](Config{Seed: 1, Rate: rate, TinMode: BestEffort, Overhead: o, Framing: ATM,
			Target: time.Hour - 1, Interval: time.Hour, LimitPackets: 2000, MemoryLimitBytes: 1 << 24}, nil)
		n := 1000
		sizes := make([]uint32, n)
		for i := range sizes {
			sizes[i] = uint32(s)
		}
		dep := runShaped(q, sizes, aqm.Time(time.Second))
		elapsed := float64(dep[n-1] - dep[0]) // n-1 packets' time
		cells := (s + o + 47) / 48
		want := float64(n-1) * float64(cells*53*8) / float64(rate) * 1e9
		return len(dep) == n && abs(elapsed-want) <= float64(n)
	}, gen.IntRange(40, 1500), gen.IntRange(0, 64), gen.IntRange(1, 100)))
	props.TestingRun(t)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestShaperHoldsAndReportsNext protects the shaper's gate: Dequeue gives
// nothing before NextDeparture, a packet at it, and an empty queue reports
// the zero Time.
func TestShaperHoldsAndReportsNext(t *testing.T) {
	q, _ := New[int](Config{Seed: 1, Rate: 8 * aqm.Mbit, TinMode: BestEffort}, nil) // 1 byte/µs
	now := aqm.Time(time.Second)
	require.Zero(t, q.NextDeparture(now))
	for range 3 {
		q.Enqueue(pkt(1000, 1), now)
	}
	require.Equal(t, now, q.NextDeparture(now))
	_, ok := q.Dequeue(now)
	require.True(t, ok)
	nd := q.NextDeparture(now)
	require.InDelta(t, float64(now+1000*aqm.Time(time.Microsecond)), float64(nd), 2)
	_, ok = q.Dequeue(nd - 2)
	require.False(t, ok)
	require.Equal(t, 2, q.Len())
	_, ok = q.Dequeue(nd)
	require.True(t, ok)
	// SetRate applies from the next packet: at 16 Mbit/s 1000 bytes take 500 µs.
	q.SetRate(16 * aqm.Mbit)
	n2 := q.NextDeparture(nd)
	_, ok = q.Dequeue(n2)
	require.True(t, ok)
	q.Enqueue(pkt(1000, 1), n2)
	n3 := q.NextDeparture(n2)
	require.InDelta(t, float64(n2+500*aqm.Time(time.Microsecond)), float64(n3), 2)
	require.Equal(t, 16*aqm.Mbit, q.Config().Rate)
}

// TestTinBandwidthShares protects the shaped tin scheduler: with every
// tin of diffserv3 saturated, Voice gets its quarter, Bulk its sixteenth
// and Best Effort the rest; a lone Bulk tin gets the whole link.
func TestTinBandwidthShares(t *testing.T) {
	rate := 10 * aqm.Mbit
	q, _ := New[int](Config{Seed: 1, Rate: rate, LimitPackets: 3000, MemoryLimitBytes: 1 << 24,
		Target: time.Hour - 1, Interval: time.Hour}, nil)
	dscp := []uint8{0, 8, 46} // BE, Bulk (CS1), Voice (EF)
	got := make([]float64, 3)
	now := aqm.Time(time.Second)
	inQ := make([]int, 3)
	for range 20000 {
		for i, d := range dscp {
			for ; inQ[i] < 20; inQ[i]++ {
				q.EnqueueInfo(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000, Hash: uint32(i)}}, Info{DSCP: d}, now)
			}
		}
		if nd := q.NextDeparture(now); nd > now {
			now = nd
		}
		p, ok := q.Dequeue(now)
		require.True(t, ok)
		inQ[p.Payload]--
		got[p.Payload] += float64(p.Size)
	}
	tot := got[0] + got[1] + got[2]
	require.InDelta(t, 11.0/16, got[0]/tot, 0.01)
	require.InDelta(t, 1.0/16, got[1]/tot, 0.01)
	require.InDelta(t, 4.0/16, got[2]/tot, 0.01)
	// A lone Bulk tin is work-conserving: the whole rate.
	q2, _ := New[int](Config{Seed: 1, Rate: rate}, nil)
	sizes := make([]uint32, 200)
	for i := range sizes {
		sizes[i] = 1000
	}
	for _, s := range sizes {
		q2.EnqueueInfo(pkt(s, 1), Info{DSCP: 8}, aqm.Time(time.Second))
	}
	now = aqm.Time(time.Second)
	var last aqm.Time
	for q2.Len() > 0 {
		if nd := q2.NextDeparture(now); nd > now {
			now = nd
		}
		if _, ok := q2.Dequeue(now); ok {
			last = now
		}
	}
	require.InDelta(t, float64(199*1000*8)/float64(rate)*1e9, float64(last-aqm.Time(time.Second)), 300)
}

// TestTinPriorityProperty is the gopter property that a tin under its
// threshold is served with priority: a Voice packet arriving at a
// saturated shaped link waits at most one packet time, whatever the
// Best Effort backlog.
func TestTinPriorityProperty(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(7)
	params.MinSuccessfulTests = 40
	props := gopter.NewProperties(params)
	props.Property("voice first", prop.ForAll(func(backlog, warm int) bool {
		q, _ := New[int](Config{Seed: 2, Rate: 10 * aqm.Mbit, LimitPackets: 2000, MemoryLimitBytes: 1 << 24}, nil)
		now := aqm.Time(time.Second)
		for i := range backlog {
			q.EnqueueInfo(pkt(1500, uint32(i%5)), Info{}, now)
		}
		for range warm {
			if nd := q.NextDeparture(now); nd > now {
				now = nd
			}
			q.Dequeue(now)
		}
		q.EnqueueInfo(aqm.Packet[int]{Payload: -1, Meta: aqm.Meta{Size: 200, Hash: 99}}, Info{DSCP: 46}, now)
		for range 2 {
			if nd := q.NextDeparture(now); nd > now {
				now = nd
			}
			if p, _ := q.Dequeue(now); p.Payload == -1 {
				return true
			}
		}
		return false
	}, gen.IntRange(10, 1500), gen.IntRange(0, 5)))
	props.TestingRun(t)
}

// TestIngressChargesDrops protects ingress mode: packets COBALT drops are
// charged to the shaper, so the link carries fewer delivered bytes than
// the same load without ingress.
func TestIngressChargesDrops(t *testing.T) {
	run := func(ingress bool) (sent int, drops uint64) {
		q, _ := New[int](Config{Seed: 3, Rate: 2 * aqm.Mbit, Ingress: ingress, TinMode: BestEffort, FlowMode: Flows}, nil)
		now := aqm.Time(time.Second)
		end := now + aqm.Time(20*time.Second)
		next := now
		for now < end {
			for next <= now { // 4 Mbit/s of unresponsive arrivals, twice the rate
				q.Enqueue(pkt(1000, 1), next)
				next += 2 * ms
			}
			if _, ok := q.Dequeue(now); ok {
				sent++
			}
			nd := q.NextDeparture(now)
			if nd <= now {
				nd = now + aqm.Time(100*time.Microsecond)
			}
			now = min(nd, next)
		}
		return sent, q.Stats().DroppedEarly.Packets
	}
	sentEg, _ := run(false)
	sentIn, dropsIn := run(true)
	require.NotZero(t, dropsIn)
	require.Less(t, sentIn, sentEg)
	// The failsafe clock keeps at least 2/3 of the rate flowing.
	require.Greater(t, float64(sentIn), 0.6*float64(sentEg))
}

// TestTinSharesProperty is the gopter property of the shaped tin
// scheduler: with Best Effort and any subset of diffserv4's other tins
// saturated, each of those gets exactly its threshold share and Best
// Effort the rest.
func TestTinSharesProperty(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(4)
	params.MinSuccessfulTests = 12
	props := gopter.NewProperties(params)
	thr := []float64{1, 1.0 / 16, 1.0 / 2, 1.0 / 4}
	dscp := []uint8{0, 8, 34, 46} // BE, Bulk (CS1), Video (AF41), Voice (EF)
	props.Property("threshold shares", prop.ForAll(func(mask uint8, size int) bool {
		var tins []int
		for i := range 4 {
			if i == 0 || mask&(1<<i) != 0 {
				tins = append(tins, i)
			}
		}
		q, _ := New[int](Config{Seed: 1, Rate: 20 * aqm.Mbit, TinMode: DiffServ4, LimitPackets: 3000,
			MemoryLimitBytes: 1 << 24, Target: time.Hour - 1, Interval: time.Hour}, nil)
		got := make([]float64, 4)
		inQ := make([]int, 4)
		now := aqm.Time(time.Second)
		for range 12000 {
			for _, i := range tins {
				for ; inQ[i] < 20; inQ[i]++ {
					q.EnqueueInfo(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: uint32(size), Hash: uint32(i)}}, Info{DSCP: dscp[i]}, now)
				}
			}
			if nd := q.NextDeparture(now); nd > now {
				now = nd
			}
			p, _ := q.Dequeue(now)
			inQ[p.Payload]--
			got[p.Payload] += float64(p.Size)
		}
		tot := got[0] + got[1] + got[2] + got[3]
		rest := 1.0
		for _, i := range tins[1:] {
			rest -= thr[i]
			if abs(got[i]/tot-thr[i]) > 0.01 {
				t.Logf("tins %v size %d shares %v", tins, size, got)
				return false
			}
		}
		return abs(got[0]/tot-rest) <= 0.01
	}, gen.UInt8Range(0, 15), gen.IntRange(200, 1500)))
	props.TestingRun(t)
}

// TestIngressBulkGuard protects COBALT's ingress guard: in ingress mode a
// tin with many bulk flows tolerates a sojourn of 2 MTU times per bulk
// flow before signalling, so a standing delay that egress mode signals
// goes unsignalled.
func TestIngressBulkGuard(t *testing.T) {
	run := func(ingress bool) uint64 {
		// 1 Mbit/s: MTU time 12.1 ms, target 18.2 ms; 16 bulk flows make
		// the ingress guard 2·12.1·16 ≈ 388 ms.
		q, _ := New[int](Config{Seed: 1, Rate: aqm.Mbit, Ingress: ingress, TinMode: BestEffort, FlowMode: Flows,
			LimitPackets: 1000, MemoryLimitBytes: 1 << 22}, nil)
		now := aqm.Time(time.Second)
		inQ := map[uint32]int{}
		for range 1500 {
			for h := range uint32(16) {
				for ; inQ[h] < 2; inQ[h]++ { // ~32 packets: about 250 ms of queue
					q.Enqueue(pkt(1000, h), now)
				}
			}
			if nd := q.NextDeparture(now); nd > now {
				now = nd
			}
			q.Dequeue(now)
			for h := range inQ { // recount what is queued: drops leave silently
				inQ[h] = 0
			}
			for fi := range q.flows {
				f := &q.flows[fi]
				for n := f.head; n != nilIdx; n = q.nodes[n].next {
					inQ[q.nodes[n].pkt.Hash]++
				}
			}
		}
		return q.Stats().DroppedEarly.Packets + q.Stats().Marked.Packets
	}
	require.NotZero(t, run(false), "egress should signal a 250 ms standing queue")
	require.Zero(t, run(true), "ingress guard should hold off")
}
