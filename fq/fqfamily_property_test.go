package fq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

const fqFamilyPropSeed = 1616

// mixRun drives a link that sends one packet every gap: one unresponsive
// flow (hash 0) offering over times the link rate, and sparse flows
// (hashes 1..sparse) offering one packet every 20 ms each, 2 ms apart,
// for dur. It
// returns how many packets of sparse flows were refused or dropped.
func mixRun(q fqQueue, sparse int, over float64, gap time.Duration, dur time.Duration, onDrops *int) (sparseLost int) {
	now := aqm.Time(time.Second)
	end := now + aqm.Time(dur)
	var seq uint64
	credit := 0.0
	next := make([]aqm.Time, sparse+1)
	for h := range next {
		next[h] = now + aqm.Time(h)*aqm.Time(2*time.Millisecond) // staggered: each finds the link nearly free
	}
	for ; now < end; now += aqm.Time(gap) {
		credit += over
		for ; credit >= 1; credit-- {
			seq++
			q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: 0}}, now)
		}
		for h := 1; h <= sparse; h++ {
			if now >= next[h] {
				next[h] = now + aqm.Time(20*time.Millisecond)
				seq++
				if v := q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 200, Hash: uint32(h)}}, now); !v.Accepted() {
					sparseLost++
				}
			}
		}
		q.Dequeue(now)
	}
	return sparseLost + *onDrops
}

// TestCobaltPropertyBlueIsolated protects FQ-COBALT's per-flow BLUE: with
// one unresponsive flow at 1.5 to 4 times the link rate and up to eight
// sparse flows, the unresponsive flow's BLUE probability rises (its
// sojourn passes the ceiling) while every sparse flow's stays 0, and no
// sparse packet is lost.
func TestCobaltPropertyBlueIsolated(t *testing.T) {
	props := gopter.NewProperties(proptest.Parameters(t, fqFamilyPropSeed, 30, 8))
	props.Property("BLUE rises only for the unresponsive flow", prop.ForAll(func(sparse int, over float64, seed uint64) bool {
		sparseDrops := 0
		q, err := NewCobalt(CobaltConfig{Flows: 1024, Seed: seed + 1, Control: cobalt.Control{BlueThreshold: 50 * time.Millisecond}},
			func(p aqm.Packet[uint64], _ aqm.Verdict) {
				if p.Hash != 0 {
					sparseDrops++
				}
			})
		if err != nil {
			return false
		}
		for h := uint32(1); h <= uint32(sparse); h++ {
			if flowState(q.Flow(h)).Bucket == flowState(q.Flow(0)).Bucket {
				return true // a collision: the flows share a queue, nothing to isolate
			}
		}
		lost := mixRun(q, sparse, over, time.Millisecond, 3*time.Second, &sparseDrops)
		if flowState(q.Flow(0)).Cobalt.BlueProbability == 0 || lost != 0 {
			t.Logf("unresponsive p %v, sparse lost %d", flowState(q.Flow(0)).Cobalt.BlueProbability, lost)
			return false
		}
		for h := uint32(1); h <= uint32(sparse); h++ {
			if flowState(q.Flow(h)).Cobalt.BlueProbability != 0 {
				return false
			}
		}
		return true
	}, gen.IntRange(1, 8), gen.Float64Range(1.5, 4), gen.UInt64()))
	props.TestingRun(t)
}

// TestPIEPropertyProbabilityIsolated protects FQ-PIE's per-flow PIE: with
// one unresponsive flow at 1.5 to 4 times the link rate and up to eight
// sparse flows, the unresponsive flow's drop probability rises and it
// sees early drops, while every sparse flow's probability stays 0 and none
// of its packets is refused.
func TestPIEPropertyProbabilityIsolated(t *testing.T) {
	props := gopter.NewProperties(proptest.Parameters(t, fqFamilyPropSeed, 30, 8))
	props.Property("PIE probability rises only for the flow above target", prop.ForAll(func(sparse int, over float64, seed uint64) bool {
		sparseDrops := 0
		q, err := NewPIE(PIEConfig{Flows: 1024, Seed: seed + 1}, func(p aqm.Packet[uint64], _ aqm.Verdict) {
			if p.Hash != 0 {
				sparseDrops++
			}
		})
		if err != nil {
			return false
		}
		for h := uint32(1); h <= uint32(sparse); h++ {
			if flowState(q.Flow(h)).Bucket == flowState(q.Flow(0)).Bucket {
				return true
			}
		}
		lost := mixRun(q, sparse, over, time.Millisecond, 3*time.Second, &sparseDrops)
		if flowState(q.Flow(0)).PIE.Prob == 0 || (q.Stats().DroppedEarly.Packets+q.Stats().DroppedOverload.Packets) == 0 || lost != 0 {
			t.Logf("unresponsive p %v, early drops %d, sparse lost %d", flowState(q.Flow(0)).PIE.Prob, (q.Stats().DroppedEarly.Packets + q.Stats().DroppedOverload.Packets), lost)
			return false
		}
		for h := uint32(1); h <= uint32(sparse); h++ {
			if flowState(q.Flow(h)).PIE.Prob != 0 {
				return false
			}
		}
		return true
	}, gen.IntRange(1, 8), gen.Float64Range(1.5, 4), gen.UInt64()))
	props.TestingRun(t)
}
