package fq

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/stretchr/testify/require"
)

// guardQueue is what the guard tests drive: any of the three queues.
type guardQueue interface {
	aqm.BatchQueue[uint64]
	guardCounts() (diverted, dropped, promoted uint64)
}

func (q *CoDel[T]) guardCounts() (uint64, uint64, uint64) {
	return q.g.diverted, q.g.dropped, q.g.promoted
}
func (q *Cobalt[T]) guardCounts() (uint64, uint64, uint64) {
	return q.g.diverted, q.g.dropped, q.g.promoted
}
func (q *PIE[T]) guardCounts() (uint64, uint64, uint64) {
	return q.g.diverted, q.g.dropped, q.g.promoted
}

func guardQueues(t *testing.T, off bool, limit int, drop aqm.DropFunc[uint64]) map[string]guardQueue {
	t.Helper()
	c, err := NewCoDel(CoDelConfig{Seed: 3, LimitPackets: limit, DisableFloodGuard: off}, drop)
	require.NoError(t, err)
	b, err := NewCobalt(CobaltConfig{Seed: 3, LimitPackets: limit, DisableFloodGuard: off}, drop)
	require.NoError(t, err)
	p, err := NewPIE(PIEConfig{Seed: 3, LimitPackets: limit, DisableFloodGuard: off}, drop)
	require.NoError(t, err)
	return map[string]guardQueue{"fq-codel": c, "fq-cobalt": b, "fq-pie": p}
}

// TestGuardFloodOfFreshHashes protects the flood guard's purpose: a link
// sending one 1500-byte packet every 240 µs (50 Mb/s), a sender of fresh
// hashes at twice that rate, a backlogged flow that keeps 64 packets
// queued and a 64-byte probe every 10 ms. With the guard the backlogged
// flow keeps at least a quarter of the departures and the probe, once it
// has recurred, waits less than 5 ms and is never lost; without it (RFC 8290's scheduler) the
// backlogged flow gets almost nothing, which is what the guard is for.
func TestGuardFloodOfFreshHashes(t *testing.T) {
	for _, off := range []bool{false, true} {
		const bulk, probe = 0xb01c, 0x9e0be
		var queuedBulk, probeLost int
		drop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
			switch p.Hash {
			case bulk:
				queuedBulk--
			case probe:
				probeLost++
			}
		}
		for name, q := range guardQueues(t, off, 1000, drop) {
			queuedBulk, probeLost = 0, 0
			rnd := rand.New(rand.NewPCG(5, 5))
			now := ct0
			var sent, bulkSent, probeSent, probeGot int
			var probeWait time.Duration
			id := uint64(0)
			tick := 120 * time.Microsecond // two flood packets per departure
			for step := range 200_000 {
				now += aqm.Time(tick)
				id++
				q.Enqueue(cpkt(id, 1500, rnd.Uint32()), now)
				for k := 0; queuedBulk < 64 && k < 4; k++ {
					id++
					if q.Enqueue(cpkt(id|1<<40, 1500, bulk), now).Accepted() {
						queuedBulk++
					} else {
						break
					}
				}
				if step%84 == 0 { // every ~10 ms
					id++
					probeSent++
					q.Enqueue(cpkt(id|1<<41, 64, probe), now)
				}
				if step%2 == 1 {
					p, ok := q.Dequeue(now)
					if !ok {
						continue
					}
					sent++
					switch p.Hash {
					case bulk:
						bulkSent++
						queuedBulk--
					case probe:
						probeGot++
						// The probe's first packets are a new flow's:
						// they may wait in the shared queue until it
						// has recurred.
						if step > 1000 {
							probeWait = max(probeWait, p.Enqueued.Since(now))
						}
					}
				}
			}
			div, _, _ := q.guardCounts()
			share := float64(bulkSent) / float64(sent)
			t.Logf("%s guard off %v: bulk share %.3f, probe %d/%d, max wait %v, diverted %d", name, off, share, probeGot, probeSent, probeWait, div)
			if off {
				require.Less(t, share, 0.05, name)
				require.Zero(t, div, name)
				continue
			}
			require.Greater(t, share, 0.25, name)
			require.Equal(t, probeSent, probeGot, name)
			require.Zero(t, probeLost, name)
			require.Less(t, probeWait, 5*time.Millisecond, name)
			require.Greater(t, div, uint64(100_000), name)
		}
	}
}

// TestGuardKeepsFlowOrder protects the guard's promise that a flow's
// packets leave in the order they came although the guard moves some to
// the shared queue and admits others to their bucket: on random traces
// that mix recurring hashes (some colliding in a 16-bucket table) with
// fresh ones, arrivals faster than departures (so the admission budget
// runs out), bursts, time steps past Target and reconfigurations that turn
// the guard off and on and resize the table, every dequeued packet of a
// hash follows the one before it, nothing is lost or duplicated, and the
// guard diverted, admitted and promoted flows on the way.
func TestGuardKeepsFlowOrder(t *testing.T) {
	for seed := range uint64(6) {
		rnd := rand.New(rand.NewPCG(seed, 11))
		for _, kind := range []string{"fq-codel", "fq-cobalt", "fq-pie"} {
			var q guardQueue
			var reconf func(off bool, flows int)
			last := map[uint32]uint64{}
			gone := map[uint64]bool{}
			check := func(p aqm.Packet[uint64]) {
				if l, ok := last[p.Hash]; ok {
					require.Greater(t, p.Payload, l, "%s seed %d: hash %#x reordered", kind, seed, p.Hash)
				}
				last[p.Hash] = p.Payload
				require.False(t, gone[p.Payload], "duplicate %d", p.Payload)
				gone[p.Payload] = true
			}
			drop := func(p aqm.Packet[uint64], _ aqm.Verdict) { check(p) }
			switch kind {
			case "fq-codel":
				c, err := NewCoDel(CoDelConfig{Seed: seed + 1, Flows: 16, LimitPackets: 300}, drop)
				require.NoError(t, err)
				q = c
				reconf = func(off bool, flows int) {
					cfg := c.Config()
					cfg.DisableFloodGuard, cfg.Flows, cfg.LimitPackets = off, flows, 200+rnd.IntN(200)
					require.NoError(t, c.Reconfigure(cfg))
				}
			case "fq-cobalt":
				c, err := NewCobalt(CobaltConfig{Seed: seed + 1, Flows: 16, LimitPackets: 300}, drop)
				require.NoError(t, err)
				q = c
				reconf = func(off bool, flows int) {
					cfg := c.Config()
					cfg.DisableFloodGuard, cfg.Flows, cfg.LimitPackets = off, flows, 200+rnd.IntN(200)
					require.NoError(t, c.Reconfigure(cfg))
				}
			default:
				c, err := NewPIE(PIEConfig{Seed: seed + 1, Flows: 16, LimitPackets: 300}, drop)
				require.NoError(t, err)
				q = c
				reconf = func(off bool, flows int) {
					cfg := c.Config()
					cfg.DisableFloodGuard, cfg.Flows, cfg.LimitPackets = off, flows, 200+rnd.IntN(200)
					require.NoError(t, c.Reconfigure(cfg))
				}
			}
			now := ct0
			id := uint64(0)
			accepted := 0
			var guests uint64
			for op := range 30_000 {
				switch r := rnd.IntN(100); {
				case r < 60:
					id++
					h := uint32(rnd.IntN(24)) // recurring hashes, colliding in 16 buckets
					if rnd.IntN(3) == 0 {
						h = rnd.Uint32() | 1<<31 // a fresh one
					}
					if q.Enqueue(cpkt(id, 64+uint32(rnd.IntN(1400)), h), now).Accepted() {
						accepted++
					}
				case r < 90:
					if p, ok := q.Dequeue(now); ok {
						check(p)
					}
				case r < 99:
					now += aqm.Time(rnd.IntN(int(2 * time.Millisecond)))
				default:
					if op%7 == 0 {
						flows := 16
						if rnd.IntN(2) == 0 {
							flows = 8
						}
						reconf(rnd.IntN(3) == 0, flows)
					}
				}
				if c, ok := q.(*CoDel[uint64]); ok {
					for i := range c.g.ids {
						guests += uint64(c.g.ids[i].guests)
					}
				}
			}
			for {
				p, ok := q.Dequeue(now)
				if !ok {
					break
				}
				check(p)
			}
			require.Zero(t, q.Len())
			require.Len(t, gone, accepted, "%s seed %d: every accepted packet leaves once", kind, seed)
			div, dropped, promoted := q.guardCounts()
			t.Logf("%s seed %d: diverted %d dropped %d promoted %d guests %d", kind, seed, div, dropped, promoted, guests)
			require.NotZero(t, div, kind)
			require.NotZero(t, dropped, kind)
			require.NotZero(t, promoted, kind)
			if kind == "fq-codel" {
				require.NotZero(t, guests, "guests were admitted")
			}
		}
	}
}

// TestGuardZeroAllocs protects the no-allocation promise on the guard's
// paths: diversions, the shared queue's trimming, guests, promotions and
// the bursts that take them.
func TestGuardZeroAllocs(t *testing.T) {
	for name, q := range guardQueues(t, false, 200, nil) {
		now := ct0
		ps := make([]aqm.Packet[uint64], 16)
		vs := make([]aqm.Verdict, 16)
		i := uint32(0)
		allocs := testing.AllocsPerRun(500, func() {
			for range 4 {
				i++
				q.Enqueue(cpkt(uint64(i), 1000, i*2654435761), now) // fresh hashes
				q.Enqueue(cpkt(uint64(i), 1000, i%5), now)          // recurring ones
			}
			for j := range ps {
				i++
				ps[j] = cpkt(uint64(i), 300, i*40503+uint32(j%2))
			}
			q.EnqueueBatch(ps, vs, now)
			now += aqm.Time(3 * time.Millisecond)
			q.DequeueBatch(ps[:8], now)
		})
		require.Zero(t, allocs, name)
		div, dropped, promoted := q.guardCounts()
		require.NotZero(t, div, name)
		require.NotZero(t, dropped, name)
		require.NotZero(t, promoted, name)
	}
}

func (q *CoDel[T]) bucketOwner(h uint32) (uint32, uint32, bool) {
	idx := q.bucket(h)
	return idx, q.g.ids[idx].owner, q.g.ids[idx].flags&idOwner != 0
}
func (q *Cobalt[T]) bucketOwner(h uint32) (uint32, uint32, bool) {
	idx := q.bucket(h)
	return idx, q.g.ids[idx].owner, q.g.ids[idx].flags&idOwner != 0
}
func (q *PIE[T]) bucketOwner(h uint32) (uint32, uint32, bool) {
	idx := q.bucket(h)
	return idx, q.g.ids[idx].owner, q.g.ids[idx].flags&idOwner != 0
}

// TestGuardOwnerKeepsBucket protects an active owner's bucket from a hash
// that recurs into it: a flood that draws its ports from a finite range
// repeats a hash within a bucket every few dozen of the bucket's packets,
// and such a hash, arriving again while the owner's sparse bucket is
// empty, must not take the bucket over while the owner keeps sending. The
// trace is TestGuardFloodOfFreshHashes' (fresh hashes at twice the link's
// rate, a backlogged flow, a 10 ms probe that owns its bucket before the
// flood), with one more hash of the probe's bucket every 50 ms. The probe
// keeps its bucket, loses nothing and waits under 5 ms; the recurring hash
// is never promoted. Without the rule, FQ-PIE's shared queue (sojourn up
// to its 15 ms Target, longer than the probe's interval) kept the diverted
// probe there for good.
func TestGuardOwnerKeepsBucket(t *testing.T) {
	const bulk, probe = 0xb01c, 0x9e0be
	var queuedBulk, probeLost int
	drop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
		switch p.Hash {
		case bulk:
			queuedBulk--
		case probe:
			probeLost++
		}
	}
	type owned interface {
		guardQueue
		bucketOwner(h uint32) (idx, owner uint32, set bool)
	}
	for name, gq := range guardQueues(t, false, 1000, drop) {
		q := gq.(owned)
		queuedBulk, probeLost = 0, 0
		pb, _, _ := q.bucketOwner(probe)
		var thief uint32 // another hash of the probe's bucket
		for h := uint32(1); ; h++ {
			if idx, _, _ := q.bucketOwner(h); idx == pb && h != probe && h != bulk {
				thief = h
				break
			}
		}
		rnd := rand.New(rand.NewPCG(7, 7))
		now := ct0
		var probeSent, probeGot, thiefSent int
		var probeWait time.Duration
		id := uint64(0)
		tick := 120 * time.Microsecond // two flood packets per departure
		for step := range 100_000 {
			now += aqm.Time(tick)
			flood := step > 2000 // the probe owns its bucket before
			if flood {
				id++
				q.Enqueue(cpkt(id, 1500, rnd.Uint32()), now)
				for k := 0; queuedBulk < 64 && k < 4; k++ {
					id++
					if q.Enqueue(cpkt(id|1<<40, 1500, bulk), now).Accepted() {
						queuedBulk++
					} else {
						break
					}
				}
				if step%417 == 5 { // every ~50 ms, between probes
					id++
					thiefSent++
					q.Enqueue(cpkt(id|1<<42, 1500, thief), now)
				}
			}
			if step%84 == 0 { // every ~10 ms
				id++
				probeSent++
				q.Enqueue(cpkt(id|1<<41, 64, probe), now)
			}
			if step%2 == 1 {
				p, ok := q.Dequeue(now)
				if !ok {
					continue
				}
				switch p.Hash {
				case bulk:
					queuedBulk--
				case probe:
					probeGot++
					// After the flood's first 240 ms: its onset spends
					// the saved admissions, a burst of new flows ahead
					// of the probe on the new list.
					if step > 4000 {
						probeWait = max(probeWait, p.Enqueued.Since(now))
					}
				}
			}
		}
		_, owner, set := q.bucketOwner(probe)
		_, _, promoted := q.guardCounts()
		t.Logf("%s: probe %d/%d, lost %d, max wait %v, thief sent %d, promoted %d, owner %#x", name, probeGot, probeSent, probeLost, probeWait, thiefSent, promoted, owner)
		require.Greater(t, thiefSent, 200, name)
		require.True(t, set, name)
		require.Equal(t, uint32(probe), owner, name)
		require.Zero(t, probeLost, name)
		require.Less(t, probeWait, 5*time.Millisecond, name)
	}
}

// TestGuardLateFlowGetsOut protects a flow that starts during a flood: a
// 10 ms probe that starts half a second into TestGuardFloodOfFreshHashes'
// flood (with its backlogged flow), when the admission budget is spent,
// waits in the shared queue at first but gets its bucket within its first
// ten packets, and then waits under 5 ms and is never lost; at eight start
// times, since whether the probe's first packet finds a token depends on
// the phase. The shared queue's sojourn limit is at most 5 ms for that:
// under the flood the shared queue stays full to its limit, and with
// FQ-PIE's 15 ms Target as the limit the probe's previous packet was
// always still there when the next came, so a probe that did not find a
// token never left the shared queue.
func TestGuardLateFlowGetsOut(t *testing.T) {
	const bulk, probe = 0xb01c, 0x9e0be
	var queuedBulk int
	drop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
		if p.Hash == bulk {
			queuedBulk--
		}
	}
	for phase := range 8 {
		for name, q := range guardQueues(t, false, 1000, drop) {
			queuedBulk = 0
			rnd := rand.New(rand.NewPCG(9, 9))
			now := ct0
			var probeSent, probeGot, lateSent, lateGot int
			var lateWait time.Duration
			id := uint64(0)
			tick := 120 * time.Microsecond // two flood packets per departure
			start := 4000 + 11*phase
			settled := start + 10*84
			for step := range 30_000 {
				now += aqm.Time(tick)
				id++
				q.Enqueue(cpkt(id, 1500, rnd.Uint32()), now)
				for k := 0; queuedBulk < 64 && k < 4; k++ {
					id++
					if q.Enqueue(cpkt(id|1<<39, 1500, bulk), now).Accepted() {
						queuedBulk++
					} else {
						break
					}
				}
				if step >= start && (step-start)%84 == 0 { // every ~10 ms
					id++
					probeSent++
					if step >= settled {
						lateSent++
					}
					q.Enqueue(cpkt(id|uint64(step)<<40, 64, probe), now)
				}
				if step%2 == 1 {
					p, ok := q.Dequeue(now)
					if ok && p.Hash == bulk {
						queuedBulk--
					}
					if ok && p.Hash == probe {
						probeGot++
						if int(p.Payload>>40) >= settled {
							lateGot++
							lateWait = max(lateWait, p.Enqueued.Since(now))
						}
					}
				}
			}
			t.Logf("phase %d %s: probe %d/%d, after its tenth packet %d/%d, max wait %v", phase, name, probeGot, probeSent, lateGot, lateSent, lateWait)
			require.Greater(t, lateSent, 250, name)
			require.Equal(t, lateSent, lateGot, name)
			require.Less(t, lateWait, 5*time.Millisecond, name)
		}
	}
}

// guardCountsExact reports how the guard's counts differ from the packets
// queued: the numbers handed out and not yet left against the shared
// queue's packets, and each bucket's guests against its guest-marked
// packets. Empty if they agree.
func guardCountsExact[T, A any](q *sched[T, A]) []string {
	var bad []string
	if n := int(q.g.divSeq - q.g.leftSeq); n != q.sharedLen() {
		bad = append(bad, fmt.Sprintf("shared: %d numbers out, %d packets", n, q.sharedLen()))
	}
	for i := range q.g.ids {
		n := 0
		for j := q.flows[i].head; j != cqNone; j = q.nodes[j].next {
			if q.nodes[j].mark == markGuest {
				n++
			}
		}
		if int(q.g.ids[i].guests) != n {
			bad = append(bad, fmt.Sprintf("bucket %d: %d guests counted, %d queued", i, q.g.ids[i].guests, n))
		}
	}
	return bad
}

// TestGuardCountsExact protects the guard's counts from arrivals the
// queue refuses after routing them: FQ-PIE's controllers decide at
// arrival, after the guard chose the bucket or the shared queue, and an
// early drop there must give back the guest's place or the diverted
// packet's number. Otherwise each such drop left a bucket counting a guest
// it no longer held (so it never admitted another hash) or the shared
// queue counting a packet that never came (so every bucket looked busy
// for one more departure, a lag that grows with every drop). A flood of
// fresh hashes at twice the rate beside a backlogged flow that stays a
// guest of its bucket (it never empties it, so it never becomes the owner)
// and whose packets PIE drops; the counts must match the queued packets
// throughout, for all three queues.
func TestGuardCountsExact(t *testing.T) {
	const bulk = 0xb01c
	queued := 0
	drop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
		if p.Hash == bulk {
			queued--
		}
	}
	for name, q := range guardQueues(t, false, 1000, drop) {
		queued = 0
		rnd := rand.New(rand.NewPCG(11, 11))
		now := ct0
		id := uint64(0)
		var s *sched[uint64, pie.Controller]
		check := func() []string { return nil }
		switch q := q.(type) {
		case *CoDel[uint64]:
			check = func() []string { return guardCountsExact(&q.sched) }
		case *Cobalt[uint64]:
			check = func() []string { return guardCountsExact(&q.sched) }
		case *PIE[uint64]:
			s = &q.sched
			check = func() []string { return guardCountsExact(s) }
		}
		early := uint64(0)
		for step := range 40_000 {
			now += aqm.Time(120 * time.Microsecond)
			id++
			q.Enqueue(cpkt(id, 1500, rnd.Uint32()), now)
			for k := 0; queued < 64 && k < 4; k++ {
				id++
				v := q.Enqueue(cpkt(id|1<<40, 1500, bulk), now)
				if v.Accepted() {
					queued++
				} else if v == aqm.DroppedEarly {
					early++
				}
			}
			if step%2 == 1 {
				if p, ok := q.Dequeue(now); ok && p.Hash == bulk {
					queued--
				}
			}
			if step%1000 == 999 {
				require.Empty(t, check(), "%s at step %d", name, step)
			}
		}
		t.Logf("%s: backlogged flow's early drops %d", name, early)
		if s != nil {
			require.NotZero(t, early, name)
		}
	}
}
