package fq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"
)

const coDelPropSeed = 4290

func coDelProps(t *testing.T) *gopter.Properties {
	return gopter.NewProperties(proptest.Parameters(t, coDelPropSeed, 100, 25))
}

// noAQM is a CoDel that never signals in these tests: the target is just
// below an hour and all packets leave at the instant they arrived.
var noAQM = CoDelConfig{Control: codel.Control{Target: time.Hour - 1, Interval: time.Hour}, Seed: 1}

// TestCoDelPropertyDRRFairness protects the DRR bound: with n flows always
// backlogged, quantum Q and packets of at most M bytes, a flow's bytes sent
// are Q times its grants minus its deficit, grants differ by at most one
// between flows and the deficit stays in [-M, Q]; so at any instant two
// flows' bytes differ by at most 2Q+M, and whenever all flows have had the
// same number of grants (full rounds) by at most Q+M.
func TestCoDelPropertyDRRFairness(t *testing.T) {
	props := coDelProps(t)
	props.Property("DRR bound", prop.ForAll(func(nFlows int, quantum int, sizes []uint32) bool {
		cfg := noAQM
		cfg.Flows, cfg.QuantumBytes, cfg.LimitPackets = 64, quantum, 100000
		q, err := NewCoDel[uint64](cfg, nil)
		if err != nil {
			return false
		}
		hs := hashesFor(q, nFlows)
		var maxSize int64
		for i, s := range sizes { // enough packets that no flow runs dry
			for _, h := range hs {
				q.Enqueue(cpkt(uint64(i), s, h), ct0)
			}
			maxSize = max(maxSize, int64(s))
		}
		sent := make([]int64, nFlows)
		grants := make([]int, nFlows)
		idx := map[uint32]int{}
		for i, h := range hs {
			idx[h] = i
			grants[i] = 1 // the quantum a new flow starts with
		}
		Q := int64(quantum)
		for range len(sizes) { // n flows hold n*len(sizes) packets: stay backlogged
			before := make([]int, nFlows)
			for i, h := range hs {
				before[i] = flowState(q.Flow(h)).Deficit
			}
			p, ok := q.Dequeue(ct0)
			if !ok {
				return false
			}
			sent[idx[p.Hash]] += int64(p.Size)
			for i, h := range hs {
				// after = before - charge + k*Q: k grants in this call.
				charge := 0
				if p.Hash == h {
					charge = int(p.Size)
				}
				grants[i] += (flowState(q.Flow(h)).Deficit - before[i] + charge) / quantum
			}
			lo, hi := sent[0], sent[0]
			gl, gh := grants[0], grants[0]
			for i := range sent {
				lo, hi = min(lo, sent[i]), max(hi, sent[i])
				gl, gh = min(gl, grants[i]), max(gh, grants[i])
			}
			if hi-lo > 2*Q+maxSize || gh-gl > 1 {
				return false
			}
			if gl == gh && hi-lo > Q+maxSize {
				return false
			}
		}
		return true
	}, gen.IntRange(2, 8), gen.IntRange(256, 3000), gen.SliceOfN(60, gen.UInt32Range(0, 3000))))
	props.TestingRun(t)
}

// TestCoDelPropertySparseFlow protects sparse-flow priority and its limit.
// A flow that sends one packet at a time (of at most M bytes) while n bulk
// flows are backlogged waits, from arrival to departure, behind at most
// 1+ceil(max(0,-d)/Q) rounds of at most Q+M bytes per bulk flow, where d is
// its credit at arrival: a bulk flow's credit is below Q when its turn
// starts and it sends while the credit is not negative, and a flow in debt
// gains Q per visit before it is served. A flow whose arrival puts it on
// the new list with credit (an idle flow joins with Q) waits only behind
// the flows already on the new list, at most Q+M bytes each; once the bulk
// flows have moved to the old list that is nothing at all: the sparse-flow
// priority, which plain DRR would not give. The debt term is real: with Q < M, a sparse flow that
// has just sent a large packet re-arrives in debt, still on the new or old
// list, and waits several rounds (random gopter seeds found this).
func TestCoDelPropertySparseFlow(t *testing.T) {
	props := coDelProps(t)
	props.Property("sparse bound", prop.ForAll(func(nBulk int, quantum int, gaps []uint8) bool {
		cfg := noAQM
		cfg.Flows, cfg.QuantumBytes, cfg.LimitPackets = 64, quantum, 100000
		q, _ := NewCoDel[uint64](cfg, nil)
		hs := hashesFor(q, nBulk+1)
		sparse, bulk := hs[0], hs[1:]
		const M = 1500
		for i := range 400 {
			for _, h := range bulk {
				q.Enqueue(cpkt(uint64(i), uint32(64+i*37%(M-63)), h), ct0)
			}
		}
		waiting, behind, bound := false, int64(0), int64(0)
		round := int64(nBulk) * int64(quantum+M)
		for _, g := range gaps {
			if !waiting && g%3 == 0 && flowState(q.Flow(sparse)).Packets == 0 {
				newBefore, before := q.Detail().NewFlowsLen, flowState(q.Flow(sparse))
				q.Enqueue(cpkt(1<<40, uint32(g)*5, sparse), ct0)
				f := flowState(q.Flow(sparse))
				if !before.New && !before.Old && !(f.New && f.Deficit == quantum) {
					return false // an idle flow's arrival must join the new list with a quantum
				}
				debt := int64(max(0, -f.Deficit))
				waiting, behind = true, 0
				bound = (1 + (debt+int64(quantum)-1)/int64(quantum)) * round
				if f.New && f.Deficit >= 0 && q.Detail().NewFlowsLen == newBefore+1 {
					// It joined the new list with credit: only the flows
					// already on the new list go first.
					bound = int64(newBefore) * int64(quantum+M)
				}
			}
			p, ok := q.Dequeue(ct0)
			if !ok {
				return false
			}
			if p.Hash == sparse {
				waiting = false
			} else if waiting {
				behind += int64(p.Size)
				if behind > bound {
					return false
				}
			}
		}
		return true
	}, gen.IntRange(1, 8), gen.IntRange(256, 3000), gen.SliceOfN(300, gen.UInt8())))
	props.TestingRun(t)
}

// TestCoDelPropertyOverload protects the overload dropper and the limits
// under random arrivals: every batch starts at a flow whose backlog was
// within a ninth of the largest (the largest, below 16 bytes), and Len and Backlog never exceed LimitPackets and
// MemoryLimitBytes. The flood guard is off: it would move packets away
// from the bucket their hash names (TestGuard* cover it).
func TestCoDelPropertyOverload(t *testing.T) {
	props := coDelProps(t)
	props.Property("fattest flow, bounded memory", prop.ForAll(func(limit int, mem int, batch int, ops []uint32) bool {
		cfg := CoDelConfig{Seed: 1, Flows: 16, LimitPackets: limit, MemoryLimitBytes: mem, DropBatchPackets: batch, DisableFloodGuard: true, Control: codel.Control{MTUBytes: 1000}}
		ok := true
		var q *CoDel[uint64]
		first := false
		q, err := NewCoDel(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) {
			if why != aqm.DroppedOverlimit || !first {
				return
			}
			first = false
			b := q.bucket(p.Hash)
			mine := uint64(q.flows[b].bytes + p.Size) // before this drop
			for i := range q.flows {
				f := &q.flows[i]
				if uint32(i) == b || f.head == cqNone {
					continue
				}
				// Within a ninth of the largest, and exact below 16 bytes.
				if 9*mine <= 8*uint64(f.bytes) || mine < 16 && mine < uint64(f.bytes) {
					ok = false
				}
			}
		})
		if err != nil {
			return false
		}
		now := ct0
		for i, w := range ops {
			now += aqm.Time(w % 500_000)
			if w&3 != 0 {
				first = true
				q.Enqueue(cpkt(uint64(i), w>>8%4000, w>>20%12), now)
			} else {
				q.Dequeue(now)
			}
			if q.Len() > limit || q.Backlog() > mem {
				return false
			}
		}
		return ok
	}, gen.IntRange(3, 64), gen.IntRange(4000, 60000), gen.IntRange(1, 70), gen.SliceOfN(500, gen.UInt32())))
	props.TestingRun(t)
}

// TestCoDelHashFlood protects against a hash flood: fresh hashes arrive
// for 2 s, tens of thousands of distinct flows, filling every one of the
// 1024 flow queues. Below capacity (9 flood packets per ms against 10
// dequeues) an innocent flow sending 200 B every 20 ms (about its flow
// queue's fair share of the link when all 1024 are busy) loses nothing and
// waits little; above it (20 per ms) memory stays within the limits, the
// lists never hold more than the table, and the innocent flow loses no
// larger a share of its packets than the flood does (it is not starved;
// it shares its flow queue with flood traffic, so it cannot do better).
func TestCoDelHashFlood(t *testing.T) {
	for _, rate := range []int{9, 20} {
		var innocentDrops, floodDrops int
		const innocent = 0xfeedface
		q, err := NewCoDel(CoDelConfig{LimitPackets: 2048, MemoryLimitBytes: 1 << 21, Seed: 77}, func(p aqm.Packet[uint64], why aqm.Verdict) {
			if p.Hash == innocent {
				innocentDrops++
			} else {
				floodDrops++
			}
		})
		require.NoError(t, err)
		now := ct0
		var delivered, sent, floodSent int
		var worst time.Duration
		flood := uint32(1)
		for ms := range 2000 {
			for range rate {
				flood = flood*2654435761 + 12345
				if !q.Enqueue(cpkt(uint64(flood), 1000, flood), now).Accepted() {
					floodDrops++
				}
				floodSent++
			}
			if ms%20 == 0 {
				if !q.Enqueue(cpkt(1, 200, innocent), now).Accepted() {
					innocentDrops++
				}
				sent++
			}
			for range 10 {
				p, ok := q.Dequeue(now)
				if ok && p.Hash == innocent {
					delivered++
					worst = max(worst, p.Enqueued.Since(now))
				}
			}
			require.LessOrEqual(t, q.Len(), 2048)
			require.LessOrEqual(t, q.Backlog(), 1<<21)
			d := q.Detail()
			require.LessOrEqual(t, d.NewFlowsLen+d.OldFlowsLen, 1024)
			now += aqm.Time(time.Millisecond)
		}
		innocentLoss := float64(innocentDrops) / float64(sent)
		floodLoss := float64(floodDrops) / float64(floodSent)
		t.Logf("flood %d/ms: innocent sent %d delivered %d loss %.2f worst sojourn %v; flood loss %.2f; new flows %d",
			rate, sent, delivered, innocentLoss, worst, floodLoss, q.Detail().NewFlowCount)
		if rate < 10 {
			require.Zero(t, innocentDrops)
			require.GreaterOrEqual(t, delivered, sent-1)
			require.Less(t, worst, 20*time.Millisecond)
		} else {
			require.LessOrEqual(t, innocentLoss, floodLoss*1.25+0.05)
		}
	}
}
