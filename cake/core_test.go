package cake

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

const ms = aqm.Time(time.Millisecond)

func pkt(size, hash uint32) aqm.Packet[int] {
	return aqm.Packet[int]{Meta: aqm.Meta{Size: size, Hash: hash}}
}

// refDSCP names the code points of the tin tables, written from tc-cake(8)
// and RFC 4594 independently of the queue's own tables.
var refDSCP = map[string]int{
	"LE": 1, "TOS2": 2, "TOS4": 4, "CS1": 8, "AF11": 10, "AF12": 12, "AF13": 14, "CS2": 16,
	"AF21": 18, "AF22": 20, "AF23": 22, "CS3": 24, "AF31": 26, "AF32": 28, "AF33": 30,
	"CS4": 32, "AF41": 34, "AF42": 36, "AF43": 38, "CS5": 40, "VA": 44, "EF": 46, "CS6": 48, "CS7": 56,
}

// refTins is, per mode, the default tin and the named code points of
// every other tin.
var refTins = map[TinMode]struct {
	def   int
	named map[int][]string
}{
	BestEffort: {0, nil},
	DiffServ3:  {0, map[int][]string{1: {"CS1", "LE"}, 2: {"CS7", "CS6", "EF", "VA", "TOS4"}}},
	DiffServ4: {0, map[int][]string{
		1: {"CS1", "LE"},
		2: {"CS2", "AF21", "AF22", "AF23", "CS3", "AF31", "AF32", "AF33", "AF41", "AF42", "AF43", "TOS4"},
		3: {"CS4", "CS5", "VA", "EF", "CS6", "CS7"}}},
	DiffServ8: {2, map[int][]string{
		0: {"LE"}, 1: {"CS1", "AF11", "AF12", "AF13", "TOS2"},
		3: {"CS3", "AF31", "AF32", "AF33", "AF41", "AF42", "AF43"},
		4: {"AF21", "AF22", "AF23", "TOS4"}, 5: {"CS2"}, 6: {"CS4", "CS5", "VA", "EF"}, 7: {"CS6", "CS7"}}},
}

func refTin(m TinMode, dscp int) int {
	if m == Precedence {
		return dscp >> 3
	}
	r := refTins[m]
	for tin, names := range r.named {
		for _, n := range names {
			if refDSCP[n] == dscp {
				return tin
			}
		}
	}
	return r.def
}

// TestTinSelectionReference protects the DSCP maps of every tin mode:
// each of the 64 code points lands in the tin the reference table names.
func TestTinSelectionReference(t *testing.T) {
	for _, m := range []TinMode{BestEffort, DiffServ3, DiffServ4, DiffServ8, Precedence} {
		for d := range 64 {
			q, err := New[int](Config{TinMode: m, Seed: 1, LimitPackets: 8}, nil)
			require.NoError(t, err)
			q.EnqueueInfo(pkt(100, 1), Info{DSCP: uint8(d) | 0xc0}, ms) // high bits ignored
			got := -1
			for i := range q.tins {
				if q.tins[i].pkts == 1 {
					got = i
				}
			}
			require.Equal(t, refTin(m, d), got, "%v dscp %d", m, d)
		}
	}
}

// TestTinThresholds protects each tin's threshold rate, COBALT target
// and interval and flow quantum, from the rate as Linux derives them.
func TestTinThresholds(t *testing.T) {
	q, _ := New[int](Config{Rate: 10 * aqm.Mbit, Seed: 1}, nil)
	rb := uint64(10 * aqm.Mbit / 8)
	want := []uint64{rb, rb / 16, rb / 4}
	for i, b := range q.tins {
		require.Equal(t, want[i], b.rateBytes, "tin %d", i)
		mtuTime := float64(mtuBytes) / float64(want[i]) * 1e9
		tg := max(1.5*mtuTime, 5e6)
		require.InDelta(t, tg, float64(b.target), 2, "tin %d target", i)
		require.InDelta(t, max(100e6+tg-5e6, 2*tg), float64(b.interval), 2, "tin %d interval", i)
		require.Equal(t, uint32(min(max(want[i]/4096, 300), 1514)), b.quantum)
	}
	// The Bulk tin at 10 Mbit/s runs at 625 kbit/s: target ≈ 29 ms, interval ≈ 124 ms.
	require.InDelta(t, 29e6, float64(q.tins[1].target), 0.2e6)
	require.InDelta(t, 124e6, float64(q.tins[1].interval), 0.2e6)
	q8, _ := New[int](Config{Rate: 8 * aqm.Mbit, TinMode: DiffServ8, Seed: 1}, nil)
	r := uint64(1_000_000)
	for _, b := range q8.tins {
		require.Equal(t, r, b.rateBytes)
		r = r * 7 / 8
	}
}

// refSetAssoc is the slow model of the 8-way set-associative lookup.
type refSetAssoc struct {
	tags                     [queuesPerTin]uint32
	used                     [queuesPerTin]bool
	direct, ind, miss, colls uint64
}

func (r *refSetAssoc) lookup(h uint32) int {
	home := int(uint64(h) * queuesPerTin >> 32)
	set := home / ways * ways
	if r.tags[home] == h && r.used[home] {
		r.direct++
		return home
	}
	order := make([]int, ways)
	for i := range order {
		order[i] = set + (home-set+i)%ways
	}
	for i, w := range order {
		if r.tags[w] == h {
			if i > 0 {
				r.ind++
			}
			return w
		}
	}
	for _, w := range order {
		if !r.used[w] {
			r.miss++
			r.tags[w] = h
			return w
		}
	}
	r.colls++
	r.tags[home] = h
	return home
}

// TestSetAssociativeReference protects the flow lookup: on random hash
// sequences (few sets, so collisions happen) with random slots freed, the
// queue picks the same way and counts the same hits, misses and
// collisions as the slow model. The model is Linux's lookup, so the flood
// guard is off.
func TestSetAssociativeReference(t *testing.T) {
	q, _ := New[int](Config{TinMode: BestEffort, FlowMode: Flows, Seed: 3, DisableFloodGuard: true}, nil)
	var ref refSetAssoc
	rnd := rand.New(rand.NewPCG(1, 2))
	// Hashes that land in two sets only.
	var pool []uint32
	for h := uint32(0); len(pool) < 40; h++ {
		{
			home := uint32(uint64(q.mix(h)) * queuesPerTin >> 32)
			if home/ways == 5 || home/ways == 77 {
				pool = append(pool, h)
			}
		}
	}
	info := Info{}
	for range 5000 {
		h := pool[rnd.IntN(len(pool))]
		got := q.lookup(0, 0, h, &info, true)
		want := ref.lookup(q.mix(h))
		require.Equal(t, want, int(got))
		// Use or free the slot at random.
		used := rnd.IntN(3) > 0
		ref.used[want] = used
		if used {
			q.flows[got].state = stSparse
		} else {
			q.flows[got].state = stNone
		}
	}
	s := q.tins[0].s
	require.Equal(t, ref.direct, s.wayDirect)
	require.Equal(t, ref.ind, s.wayIndirect)
	require.Equal(t, ref.miss, s.wayMiss)
	require.Equal(t, ref.colls, s.wayCollision)
	require.NotZero(t, ref.colls)
	require.NotZero(t, ref.ind)
}

// checkHeap asserts the pruner's heap is a max-heap by (bytes, non-empty)
// with consistent positions, and that its top is the longest queue found
// by a full scan.
func checkHeap(t *testing.T, q *Queue[int]) {
	t.Helper()
	if q.overTTL == 0 {
		return
	}
	for i := range q.heap {
		require.Equal(t, uint16(i), q.heapPos[q.heap[i]])
		if i > 0 {
			require.GreaterOrEqual(t, q.heapKey(q.heap[(i-1)/2]), q.heapKey(q.heap[i]))
		}
	}
	var best uint64
	for i := range q.flows {
		best = max(best, q.heapKey(uint16(i)))
	}
	require.Equal(t, best, q.heapKey(q.heap[0]))
}

// TestOverloadPrunesLongest protects the overload path: under random
// overload over all tins, each pruned packet comes from the longest queue
// (checked by scan), limits hold, and BLUE's probability of the pruned
// flow rises.
func TestOverloadPrunesLongest(t *testing.T) {
	var q *Queue[int]
	pruned := 0
	q, _ = New(Config{LimitPackets: 60, MemoryLimitBytes: 30000, Seed: 9}, func(p aqm.Packet[int], why aqm.Verdict) {
		if why == aqm.DroppedOverlimit {
			pruned++
		}
	})
	rnd := rand.New(rand.NewPCG(3, 4))
	now := ms
	n := 20000
	if testing.Short() {
		n = 5000
	}
	for i := range n {
		now += aqm.Time(rnd.IntN(200)) * aqm.Time(time.Microsecond)
		if rnd.IntN(3) == 0 {
			q.Dequeue(now)
		} else {
			p := pkt(uint32(rnd.IntN(1500)), uint32(rnd.IntN(12)))
			before := pruned
			q.EnqueueInfo(p, Info{DSCP: uint8(rnd.IntN(64))}, now)
			if pruned > before {
				require.LessOrEqual(t, q.len, q.limit)
			}
		}
		if i%97 == 0 {
			checkHeap(t, q)
		}
		require.LessOrEqual(t, q.len, q.limit)
		require.LessOrEqual(t, q.backlog, q.memLimit)
	}
	require.NotZero(t, pruned)
	active := 0
	for i := range q.flows {
		if q.flows[i].cv.State().BlueProbability > 0 {
			active++
		}
	}
	require.NotZero(t, active, "BLUE never rose on a pruned flow")
}

// TestLastPacketAlwaysDelivered protects CAKE's rule that COBALT never
// drops the last packet of a flow queue, however late it is.
func TestLastPacketAlwaysDelivered(t *testing.T) {
	q, _ := New[int](Config{Seed: 1, FlowMode: Flows}, nil)
	now := ms
	// A standing queue to drive COBALT into dropping.
	for i := range 200 {
		q.Enqueue(pkt(1000, 1), now+aqm.Time(i)*ms)
	}
	now += 5000 * ms
	sent := 0
	for {
		p, ok := q.Dequeue(now)
		if !ok {
			break
		}
		_ = p
		sent++
		now += 10 * ms
	}
	require.Positive(t, sent)
	require.Less(t, sent, 200, "COBALT should have dropped some")
	require.Zero(t, q.Len())
	// A single late packet is still sent.
	q.Enqueue(pkt(1000, 1), now)
	_, ok := q.Dequeue(now + 10000*ms)
	require.True(t, ok)
}

// TestSparseFlowFirst protects DRR++: a new sparse flow's packet leaves
// before the backlog of a bulk flow.
func TestSparseFlowFirst(t *testing.T) {
	q, _ := New[int](Config{Seed: 1, FlowMode: Flows}, nil)
	for range 50 {
		q.Enqueue(pkt(1500, 1), ms)
	}
	for range 3 {
		q.Dequeue(ms)
	}
	q.Enqueue(aqm.Packet[int]{Payload: 42, Meta: aqm.Meta{Size: 100, Hash: 2}}, ms)
	p, ok := q.Dequeue(ms)
	require.True(t, ok)
	require.Equal(t, 42, p.Payload)
}

// refDRR simulates byte-deficit round robin of backlogged flows with the
// given quanta and sizes, returning the bytes each sends in n packets.
func refDRR(quanta []float64, sizes []int, n int) []float64 {
	def := make([]float64, len(quanta))
	out := make([]float64, len(quanta))
	i := 0
	for sent := 0; sent < n; {
		if def[i] <= 0 {
			def[i] += quanta[i]
			i = (i + 1) % len(quanta)
			continue
		}
		def[i] -= float64(sizes[i])
		out[i] += float64(sizes[i])
		sent++
	}
	return out
}

// TestDRRSharesReference protects per-flow fairness: backlogged flows of
// different packet sizes get the byte shares a DRR reference gives.
func TestDRRSharesReference(t *testing.T) {
	sizes := []int{1500, 300, 700}
	q, _ := New[int](Config{Seed: 5, FlowMode: Flows, TinMode: BestEffort, Target: time.Hour - 2, Interval: time.Hour}, nil)
	got := make([]float64, len(sizes))
	now := ms
	inQ := make([]int, len(sizes))
	for range 3000 {
		for h, s := range sizes {
			for ; inQ[h] < 50; inQ[h]++ {
				q.Enqueue(aqm.Packet[int]{Payload: h, Meta: aqm.Meta{Size: uint32(s), Hash: uint32(h)}}, now)
			}
		}
		p, _ := q.Dequeue(now)
		inQ[p.Payload]--
		got[p.Payload] += float64(p.Size)
	}
	want := refDRR([]float64{mtuBytes, mtuBytes, mtuBytes}, sizes, 3000)
	tot, wtot := got[0]+got[1]+got[2], want[0]+want[1]+want[2]
	for i := range sizes {
		require.InDelta(t, want[i]/wtot, got[i]/tot, 0.02, "flow %d", i)
	}
}

// TestFlowSize protects the flow record's one cache line.
func TestFlowSize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(flow{}), uintptr(64))
}
