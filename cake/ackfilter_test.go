package cake

import (
	"math/rand/v2"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/require"
)

// refCovers reports whether SACK block s lies inside one of t's blocks.
func refCovers(t *ackInfo, s sackBlock) bool {
	for _, u := range t.SACK[:t.NSACK] {
		if int32(s.Start-u.Start) >= 0 && int32(u.End-s.End) >= 0 {
			return true
		}
	}
	return false
}

// refRedundant is the slow statement of the eligibility rules, one rule a
// line, as tc-cake(8) and the filter's design describe them.
func refRedundant(a, t ackInfo) bool {
	rules := []bool{
		a.Flags&flagACK != 0,
		a.Flags&(flagURG|flagPSH|flagRST|flagSYN|flagFIN) == 0,
		!a.Reserved, !a.OtherOptions, !a.Payload,
		!a.HasTS || int32(t.TSVal-a.TSVal) >= 0 && int32(t.TSEcr-a.TSEcr) >= 0,
		int32(t.Ack-a.Ack) >= 0,
	}
	for _, ok := range rules {
		if !ok {
			return false
		}
	}
	var ab, tb int64
	for _, s := range a.SACK[:a.NSACK] {
		if int32(s.Start-a.Ack) < 0 || !refCovers(&t, s) {
			return false
		}
		ab += int64(s.End - s.Start)
	}
	for _, s := range t.SACK[:t.NSACK] {
		tb += int64(s.End - s.Start)
	}
	return a.Ack != t.Ack || tb > ab
}

// refFilter decides, for queue contents qs (oldest first) and arrival t,
// which index the filter drops (-1 for none): the oldest of the first two
// redundant ACKs of t's connection with unchanged ECE/CWR bits between
// them, or in aggressive mode a lone redundant one right before t with
// t's ECE/CWR bits.
func refFilter(qs []ackInfo, t ackInfo, aggressive bool) int {
	if !t.TCP || t.Flags&flagACK == 0 || t.Flags&flagSYN != 0 {
		return -1
	}
	const ec = flagECE | flagCWR
	var cands []int
	for i, a := range qs {
		if !a.TCP || a.Conn != t.Conn {
			continue
		}
		if len(cands) == 1 && a.Flags&ec != qs[cands[0]].Flags&ec {
			cands = cands[:0]
		}
		if refRedundant(a, t) {
			cands = append(cands, i)
			if len(cands) == 2 {
				return cands[0]
			}
		}
	}
	if aggressive && len(cands) == 1 && cands[0] == len(qs)-1 && qs[cands[0]].Flags&ec == t.Flags&ec {
		return cands[0]
	}
	return -1
}

// randACK draws an ACK of one of two connections with small numbers so
// that ties, reordering, SACK and flag changes are frequent.
func randACK(r *rand.Rand) ackInfo {
	a := ackInfo{TCP: r.IntN(10) > 0, Conn: uint32(r.IntN(2)), Ack: uint32(r.IntN(8)) * 100,
		Flags: flagACK}
	if r.IntN(8) == 0 {
		a.Flags |= []uint8{flagPSH, flagFIN, flagSYN, flagECE, flagCWR, flagURG, flagRST}[r.IntN(7)]
	}
	if r.IntN(6) == 0 {
		a.Flags |= flagECE
	}
	if r.IntN(3) == 0 {
		a.HasTS = true
		a.TSVal, a.TSEcr = uint32(r.IntN(4)), uint32(r.IntN(4))
	}
	a.Payload = r.IntN(10) == 0
	a.OtherOptions = r.IntN(12) == 0
	a.Reserved = r.IntN(20) == 0
	if r.IntN(3) == 0 {
		a.NSACK = uint8(1 + r.IntN(2))
		for i := range int(a.NSACK) {
			s := a.Ack + uint32(r.IntN(6))*100 - 100
			a.SACK[i] = sackBlock{s, s + uint32(1+r.IntN(4))*100}
		}
	}
	return a
}

// TestACKFilterReference protects the ACK filter's decisions: on random
// ACK streams of two connections (unshaped, nothing dequeued for a while),
// the queue drops exactly the packets the slow model picks.
func TestACKFilterReference(t *testing.T) {
	for _, mode := range []ACKFilter{ACKFilterConservative, ACKFilterAggressive} {
		r := rand.New(rand.NewPCG(uint64(mode), 1))
		for trial := range 200 {
			var dropped []int
			q, _ := New(Config{Seed: 1, ACKFilter: mode, FlowMode: FlowBlind, TinMode: BestEffort},
				func(p aqm.Packet[int], _ aqm.Verdict) { dropped = append(dropped, p.Payload) })
			type item struct {
				id int
				a  ackInfo
			}
			var model []item
			for i := range 40 {
				a := randACK(r)
				qs := make([]ackInfo, len(model))
				for k, it := range model {
					qs[k] = it.a
				}
				want := refFilter(qs, a, mode == ACKFilterAggressive)
				dropped = dropped[:0]
				q.EnqueueInfo(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 60}}, Info{ack: a}, ms)
				model = append(model, item{i, a})
				if want < 0 {
					require.Empty(t, dropped, "trial %d arrival %d", trial, i)
				} else {
					require.Equal(t, []int{model[want].id}, dropped, "trial %d arrival %d", trial, i)
					model = append(model[:want], model[want+1:]...)
				}
				if r.IntN(8) == 0 && len(model) > 0 {
					p, ok := q.Dequeue(ms)
					require.True(t, ok)
					require.Equal(t, model[0].id, p.Payload)
					model = model[1:]
				}
			}
			require.Equal(t, len(model), q.Len())
		}
	}
	q, _ := New[int](Config{Seed: 1, ACKFilter: ACKFilterAggressive}, nil)
	require.NotZero(t, q.Detail().MemoryBytes)
}

// TestACKFilterNeverDropsNews is the gopter property that the filter
// never drops an ACK carrying information the queue would lose: every
// dropped ACK was a pure ACK (no data, no other flags, no unknown option),
// a later queued ACK of its connection acknowledges at least as much with
// timestamps not older and SACK blocks covering its own, and a later
// queued ACK carries its ECE/CWR bits.
func TestACKFilterNeverDropsNews(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(8)
	params.MinSuccessfulTests = 100
	props := gopter.NewProperties(params)
	props.Property("no news lost", prop.ForAll(func(seed uint64, aggressive bool) bool {
		r := rand.New(rand.NewPCG(seed, 2))
		mode := ACKFilterConservative
		if aggressive {
			mode = ACKFilterAggressive
		}
		acks := map[int]ackInfo{}
		var victim []int
		q, _ := New(Config{Seed: 1, ACKFilter: mode, FlowMode: FlowBlind, TinMode: BestEffort},
			func(p aqm.Packet[int], _ aqm.Verdict) { victim = append(victim, p.Payload) })
		for i := range 60 {
			a := randACK(r)
			acks[i] = a
			victim = victim[:0]
			q.EnqueueInfo(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 60}}, Info{ack: a}, ms)
			for _, v := range victim {
				d := acks[v]
				if d.Flags&^(flagACK|flagECE|flagCWR) != 0 || d.Payload || d.OtherOptions || d.Reserved || !d.TCP {
					return false
				}
				covered, flags := false, false
				for n := q.flows[0].head; n != nilIdx; n = q.nodes[n].next {
					l := q.nodes[n].pkt.Payload
					la := acks[l]
					if l < v || !la.TCP || la.Conn != d.Conn {
						continue
					}
					if la.Flags&(flagECE|flagCWR) == d.Flags&(flagECE|flagCWR) {
						flags = true
					}
					ok := int32(la.Ack-d.Ack) >= 0 && (!d.HasTS || int32(la.TSVal-d.TSVal) >= 0 && int32(la.TSEcr-d.TSEcr) >= 0)
					for _, s := range d.SACK[:d.NSACK] {
						ok = ok && refCovers(&la, s)
					}
					covered = covered || ok
				}
				if !covered || !flags {
					return false
				}
			}
		}
		return true
	}, gen.UInt64(), gen.Bool()))
	props.TestingRun(t)
}

// TestACKFilterCounts protects the accounting of an ACK drop: tin and
// queue ACK-drop counters, Stats, backlog.
func TestACKFilterCounts(t *testing.T) {
	q, _ := New[int](Config{Seed: 1, ACKFilter: ACKFilterConservative}, nil)
	for i := range 3 {
		q.EnqueueInfo(pkt(60, 1), Info{ack: ackInfo{TCP: true, Conn: 1, Flags: flagACK, Ack: uint32(i+1) * 1000}}, ms)
	}
	require.Equal(t, 2, q.Len())
	require.Equal(t, 120, q.Backlog())
	d := q.Detail()
	require.Equal(t, uint64(1), d.FilteredACKs)
	require.Equal(t, uint64(1), d.Tins[1].FilteredACKs) // Best Effort shows second
	s := q.Stats()
	require.Equal(t, uint64(1), s.DroppedEarly.Packets)
	require.Equal(t, uint64(1), s.DroppedQueued.Packets)
}
