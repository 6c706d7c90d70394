package cake

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"
)

// hostShares keeps flowsPerHost[h] flows of host h backlogged (as source
// or destination host) on a queue of the given mode and returns each
// host's share of the bytes sent in n dequeues.
func hostShares(mode FlowMode, rate aqm.Rate, flowsPerHost []int, n int, src bool) []float64 {
	q, _ := New[int](Config{Seed: 21, FlowMode: mode, Rate: rate, TinMode: BestEffort,
		Target: time.Hour - 1, Interval: time.Hour, LimitPackets: 4000, MemoryLimitBytes: 1 << 24}, nil)
	type fl struct{ host, hash int }
	var flows []fl
	for h, k := range flowsPerHost {
		for i := range k {
			flows = append(flows, fl{h, h*100 + i + 1})
		}
	}
	inQ := make([]int, len(flows))
	got := make([]float64, len(flowsPerHost))
	now := aqm.Time(time.Second)
	for range n {
		for i, f := range flows {
			// the other side: one host per flow (many servers)
			info := Info{DstHost: uint32(f.host + 1000), SrcHost: uint32(5000 + f.hash)}
			if src {
				info.SrcHost, info.DstHost = info.DstHost, 77
			}
			for ; inQ[i] < 8; inQ[i]++ {
				q.EnqueueInfo(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000, Hash: uint32(f.hash)}}, info, now)
			}
		}
		if nd := q.NextDeparture(now); nd > now {
			now = nd
		}
		p, ok := q.Dequeue(now)
		if !ok {
			panic("nothing to send")
		}
		inQ[p.Payload]--
		got[flows[p.Payload].host] += float64(p.Size)
	}
	tot := 0.0
	for _, g := range got {
		tot += g
	}
	for i := range got {
		got[i] /= tot
	}
	return got
}

// TestHostFairnessProperty is the gopter property of host isolation:
// hosts with 1 to 8 backlogged flows each get an equal share in the dual
// and triple modes, on the side the mode isolates, shaped or not.
func TestHostFairnessProperty(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(16)
	params.MinSuccessfulTests = 15
	if testing.Short() {
		params.MinSuccessfulTests = 6
	}
	props := gopter.NewProperties(params)
	props.Property("equal host shares", prop.ForAll(func(counts []int, m int, shaped bool) bool {
		modes := []FlowMode{DualDstHost, DualSrcHost, TripleIsolate}
		mode := modes[m]
		src := mode == DualSrcHost
		var rate aqm.Rate
		if shaped {
			rate = 20 * aqm.Mbit
		}
		sh := hostShares(mode, rate, counts, 20000, src)
		for _, s := range sh {
			if abs(s-1/float64(len(counts))) > 0.03 {
				t.Logf("counts %v mode %v shares %v", counts, mode, sh)
				return false
			}
		}
		return true
	}, gen.SliceOfN(3, gen.IntRange(1, 8)).SuchThat(func(v []int) bool { return len(v) >= 2 }),
		gen.IntRange(0, 2), gen.Bool()))
	props.TestingRun(t)
}

// TestFlowsModeIsPerFlow protects the contrast: without host fairness
// (flows mode) a host with 8 flows takes 8/9 of the link.
func TestFlowsModeIsPerFlow(t *testing.T) {
	sh := hostShares(Flows, 0, []int{1, 8}, 20000, false)
	require.InDelta(t, 1.0/9, sh[0], 0.02)
	sh = hostShares(DualSrcHost, 0, []int{1, 8}, 20000, false) // isolates the other side
	require.InDelta(t, 1.0/9, sh[0], 0.02)
}

// TestHostOnlyModes protects srchost/dsthost/hosts: all flows of one host
// (pair) share one queue, so they leave in arrival order.
func TestHostOnlyModes(t *testing.T) {
	for _, m := range []FlowMode{SrcHost, DstHost, Hosts, FlowBlind} {
		q, _ := New[int](Config{Seed: 1, FlowMode: m}, nil)
		for i := range 20 {
			q.EnqueueInfo(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000, Hash: uint32(i)}},
				Info{SrcHost: 5, DstHost: 6}, ms)
		}
		for i := range 20 {
			p, ok := q.Dequeue(ms)
			require.True(t, ok)
			require.Equal(t, i, p.Payload, "mode %v", m)
		}
		used := 0
		for i := range q.flows {
			if q.tags[i] != 0 || q.flows[i].state != stNone {
				used++
			}
		}
		require.LessOrEqual(t, used, 1, "mode %v", m)
	}
}

// TestDitheredQuantumReference protects the dithered quantum: with the
// same random stream it equals (quantum·⌊65535/load⌋ + r16) >> 16 for
// every load, and its mean is quantum/load.
func TestDitheredQuantumReference(t *testing.T) {
	q, _ := New[int](Config{Seed: 99, Rate: 10 * aqm.Mbit}, nil)
	ref := rng.New(99)
	b := &q.tins[0]
	f := &q.flows[0]
	f.src, f.dst = 3, 4
	for load := 1; load <= 1024; load = load*3 + 1 {
		b.hosts[3].srcBulk = uint16(load)
		b.hosts[4].dstBulk = uint16(load / 2)
		sum := 0.0
		for range 4000 {
			got := q.flowQuantum(b, f)
			r := uint32(ref.Uint64() >> 48)
			want := int32((b.quantum*(65535/uint32(load)) + r) >> 16)
			require.Equal(t, want, got, "load %d", load)
			sum += float64(got)
		}
		require.InDelta(t, float64(b.quantum)/float64(load), sum/4000, 0.05*float64(b.quantum)/float64(load)+0.05)
	}
}

// TestBulkCountsBalanced protects the host bulk counts: under random
// traffic and after it drains, every host's bulk count equals the bulk
// flows attached to it and the tin's flow counts match the flow states.
func TestBulkCountsBalanced(t *testing.T) {
	q, _ := New[int](Config{Seed: 8, LimitPackets: 200}, nil)
	now := ms
	for i := range 30000 {
		now += aqm.Time(i%7) * aqm.Time(time.Microsecond) * 50
		if i%3 != 0 {
			q.EnqueueInfo(pkt(uint32(i%1500), uint32(i%41)), Info{SrcHost: uint32(i % 5), DstHost: uint32(i % 3), DSCP: uint8(i % 64)}, now)
		} else {
			q.Dequeue(now)
		}
		if i%1000 == 0 {
			checkCounts(t, q)
		}
	}
	for range 10000 {
		now += ms
		q.Dequeue(now)
	}
	checkCounts(t, q)
	require.Zero(t, q.Len())
}

func checkCounts(t *testing.T, q *Queue[int]) {
	t.Helper()
	for ti := range q.tins {
		b := &q.tins[ti]
		var sp, bk, dc, pk int
		src := map[uint16]int{}
		dst := map[uint16]int{}
		for j := ti * queuesPerTin; j < (ti+1)*queuesPerTin; j++ {
			f := &q.flows[j]
			for n := f.head; n != nilIdx; n = q.nodes[n].next {
				pk++
			}
			switch f.state {
			case stSparse, stSparseWait:
				sp++
			case stBulk:
				bk++
				src[f.src]++
				dst[f.dst]++
			case stDecaying:
				dc++
			}
		}
		require.Equal(t, sp, b.sparse)
		require.Equal(t, bk, b.bulk)
		require.Equal(t, dc, b.decaying)
		require.Equal(t, pk, b.pkts)
		for i, h := range b.hosts {
			require.Equal(t, src[uint16(i)], int(h.srcBulk), "src host %d", i)
			require.Equal(t, dst[uint16(i)], int(h.dstBulk), "dst host %d", i)
		}
	}
}

// TestPlainEnqueueNoHostFairness protects the plain Enqueue path: its
// flows are attached to no host, so many bulk flows keep the full quantum
// and host counts stay zero.
func TestPlainEnqueueNoHostFairness(t *testing.T) {
	q, _ := New[int](Config{Seed: 1}, nil)
	for i := range 640 {
		q.Enqueue(pkt(1000, uint32(i%64)), ms)
	}
	for range 200 {
		q.Dequeue(ms)
	}
	b := &q.tins[0]
	require.Greater(t, b.bulk, 32)
	for i := range queuesPerTin {
		f := &q.flows[i]
		if f.state == stBulk {
			require.InDelta(t, float64(b.quantum), float64(q.flowQuantum(b, f)), 1)
		}
	}
	for _, h := range b.hosts {
		require.Zero(t, h.srcBulk+h.dstBulk)
	}
	checkCounts(t, q)
}
