package fq

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// armState is what TestGuardArmsOnlyUnderFlood reads of a queue's guard.
type armState struct {
	armed          bool
	arms, disarms  uint64
	work, diverted uint64
	exact          []string
}

func guardArmState(q guardQueue) armState {
	read := func(armed bool, arms, disarms, work, diverted uint64, exact []string) armState {
		return armState{armed, arms, disarms, work, diverted, exact}
	}
	switch q := q.(type) {
	case *CoDel[uint64]:
		return read(q.g.armed, q.g.arms, q.g.disarms, q.work, q.g.diverted, guardMarksExact(&q.sched))
	case *Cobalt[uint64]:
		return read(q.g.armed, q.g.arms, q.g.disarms, q.work, q.g.diverted, guardMarksExact(&q.sched))
	case *PIE[uint64]:
		return read(q.g.armed, q.g.arms, q.g.disarms, q.work, q.g.diverted, guardMarksExact(&q.sched))
	}
	panic("unknown queue")
}

// guardMarksExact is guardCountsExact reading the guest bit of each mark
// (a guest can also carry markEnd) and checking the legacy counts too:
// each bucket's count of markEnd packets.
func guardMarksExact[T, A any](q *sched[T, A]) []string {
	var bad []string
	if n := int(q.g.divSeq - q.g.leftSeq); n != q.sharedLen() {
		bad = append(bad, fmt.Sprintf("shared: %d numbers out, %d packets", n, q.sharedLen()))
	}
	for i := range q.g.ids {
		guests, ends := 0, 0
		for j := q.flows[i].head; j != cqNone; j = q.nodes[j].next {
			if q.nodes[j].mark&markGuest != 0 {
				guests++
			}
			if q.nodes[j].mark&markEnd != 0 {
				ends++
			}
		}
		if int(q.g.ids[i].guests) != guests {
			bad = append(bad, fmt.Sprintf("bucket %d: %d guests counted, %d queued", i, q.g.ids[i].guests, guests))
		}
		if int(q.g.ids[i].flags/idLegacy) != ends {
			bad = append(bad, fmt.Sprintf("bucket %d: %d legacy ends counted, %d queued", i, q.g.ids[i].flags/idLegacy, ends))
		}
	}
	return bad
}

// TestGuardArmsOnlyUnderFlood protects what makes the guard cheap: it does
// no work on ordinary traffic and arms only under a flood. Ordinary
// traffic is 300 recurring flows (colliding in a 1024-bucket table), some
// sparse, some kept backlogged, that start one per 16 departures: the
// guard never arms and does no step of its own (its work count stays 0).
// A flood of fresh hashes at twice the link's rate arms it within the
// admission budget and it diverts the flood; once the flood stops it
// disarms within a few look-backs, and afterwards does no work again. Every
// flow keeps its order throughout and the guard's counts match the queued
// packets at each phase's end; three rounds, so that it arms with packets
// of unknown hashes queued and disarms with packets in the shared queue.
func TestGuardArmsOnlyUnderFlood(t *testing.T) {
	for name, q := range guardQueues(t, false, 1000, nil) {
		rnd := rand.New(rand.NewPCG(1, 2))
		now := ct0
		id := uint64(0)
		last := map[uint32]uint64{}
		send := func(h uint32) {
			id++
			q.Enqueue(cpkt(id, 1000, h), now)
		}
		depart := func() {
			p, ok := q.Dequeue(now)
			if !ok {
				return
			}
			if l, seen := last[p.Hash]; seen {
				require.Greater(t, p.Payload, l, "%s: hash %#x reordered", name, p.Hash)
			}
			last[p.Hash] = p.Payload
		}
		const flows = 300
		started := 0
		ordinary := func(steps int) {
			for step := range steps {
				now += aqm.Time(100 * time.Microsecond)
				if started < flows && step%16 == 0 {
					started++
				}
				if started > 0 {
					h := uint32(rnd.IntN(started)) + 1
					send(h)
					if h%4 == 0 { // backlogged flows send twice
						send(h)
					}
				}
				for q.Len() > 40 {
					depart()
				}
			}
		}
		for round := range 3 {
			before := guardArmState(q)
			ordinary(20_000)
			after := guardArmState(q)
			t.Logf("%s round %d ordinary: arms %d disarms %d work %d", name, round, after.arms, after.disarms, after.work-before.work)
			require.False(t, after.armed, "%s round %d: armed by ordinary traffic", name, round)
			require.Equal(t, before.arms, after.arms, "%s round %d: armed by ordinary traffic", name, round)
			require.Equal(t, before.work, after.work, "%s round %d: the disarmed guard did work", name, round)
			require.Empty(t, after.exact, name)

			// The flood: a fresh hash at every step, a departure every
			// other step, beside the ordinary flows.
			armedAt := -1
			for step := range 20_000 {
				now += aqm.Time(120 * time.Microsecond)
				send(rnd.Uint32() | 1<<31)
				if step%4 == 0 {
					send(uint32(rnd.IntN(flows)) + 1)
				}
				if step%2 == 1 {
					depart()
				}
				if armedAt < 0 && guardArmState(q).armed {
					armedAt = step
				}
			}
			flood := guardArmState(q)
			t.Logf("%s round %d flood: armed at step %d, diverted %d", name, round, armedAt, flood.diverted-after.diverted)
			require.True(t, flood.armed, name)
			require.Equal(t, after.arms+1, flood.arms, "%s: armed once for the flood", name)
			require.GreaterOrEqual(t, armedAt, 0, name)
			require.Less(t, armedAt, 2*guardBurst+64, "%s: armed within the admission budget", name)
			require.Greater(t, flood.diverted-after.diverted, uint64(10_000), name)
			require.Empty(t, flood.exact, name)

			// After the flood: disarmed within 4·guardCalm steps (about
			// 5000 arrivals, two look-backs after the one that still sees
			// the flood's drops).
			ordinary(4 * guardCalm)
			calm := guardArmState(q)
			require.False(t, calm.armed, "%s round %d: still armed after the flood", name, round)
			require.Equal(t, flood.disarms+1, calm.disarms, name)
			require.Empty(t, calm.exact, name)
		}
		for q.Len() > 0 {
			depart()
		}
		require.Zero(t, q.Len(), name)
	}
}
