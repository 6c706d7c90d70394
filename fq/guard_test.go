package fq

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
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

// The guard tests' flood: a link sending one 1500-byte packet every 240 µs
// (50 Mb/s), fresh hashes arriving at twice that rate, a backlogged flow
// kept at 64 queued packets and a 64-byte probe.
const (
	floodTick        = 120 * time.Microsecond // two flood packets per departure
	bulkHash         = 0xb01c
	probeHash        = 0x9e0be
	floodBulkBacklog = 64
)

// floodRig drives one queue through the flood and keeps the counts the
// guard tests check; its drop function keeps bulkQueued and probeLost
// right whatever the queue drops.
type floodRig struct {
	q          guardQueue
	rnd        *rand.Rand
	now        aqm.Time
	id         uint64
	bulkQueued int // the backlogged flow's packets in the queue
	bulkEarly  int // the backlogged flow's arrivals refused early
	probeLost  int // probe packets the queue dropped
}

// floodRigs returns a rig for each of the three queues (guard off or on,
// 1000 packets), with its own random stream from seed.
func floodRigs(t *testing.T, off bool, seed uint64) map[string]*floodRig {
	t.Helper()
	rigs := map[string]*floodRig{}
	for _, name := range []string{"fq-codel", "fq-cobalt", "fq-pie"} {
		r := &floodRig{rnd: rand.New(rand.NewPCG(seed, seed)), now: ct0}
		r.q = guardQueues(t, off, 1000, r.drop)[name]
		rigs[name] = r
	}
	return rigs
}

func (r *floodRig) drop(p aqm.Packet[uint64], _ aqm.Verdict) {
	switch p.Hash {
	case bulkHash:
		r.bulkQueued--
	case probeHash:
		r.probeLost++
	}
}

// tick moves the clock on by one flood interarrival.
func (r *floodRig) tick() { r.now += aqm.Time(floodTick) }

// flood offers one packet of a fresh hash and tops the backlogged flow up
// to its backlog, at most four packets at a time.
func (r *floodRig) flood() {
	r.send(1500, r.rnd.Uint32(), 0)
	for k := 0; r.bulkQueued < floodBulkBacklog && k < 4; k++ {
		v := r.send(1500, bulkHash, 1<<40)
		if !v.Accepted() {
			if v == aqm.DroppedEarly {
				r.bulkEarly++
			}
			break
		}
		r.bulkQueued++
	}
}

// send offers a packet of the given size and hash, whose payload is a
// fresh id ORed with tag.
func (r *floodRig) send(size, hash uint32, tag uint64) aqm.Verdict {
	r.id++
	return r.q.Enqueue(cpkt(r.id|tag, size, hash), r.now)
}

// depart dequeues one packet, counting the backlogged flow's departures.
func (r *floodRig) depart() (aqm.Packet[uint64], bool) {
	p, ok := r.q.Dequeue(r.now)
	if ok && p.Hash == bulkHash {
		r.bulkQueued--
	}
	return p, ok
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
		for name, r := range floodRigs(t, off, 5) {
			var sent, bulkSent, probeSent, probeGot int
			var probeWait time.Duration
			for step := range 200_000 {
				r.tick()
				r.flood()
				if step%84 == 0 { // every ~10 ms
					probeSent++
					r.send(64, probeHash, 1<<41)
				}
				if step%2 == 1 {
					p, ok := r.depart()
					if !ok {
						continue
					}
					sent++
					switch p.Hash {
					case bulkHash:
						bulkSent++
					case probeHash:
						probeGot++
						// The probe's first packets are a new flow's:
						// they may wait in the shared queue until it
						// has recurred.
						if step > 1000 {
							probeWait = max(probeWait, p.Enqueued.Since(r.now))
						}
					}
				}
			}
			div, _, _ := r.q.guardCounts()
			share := float64(bulkSent) / float64(sent)
			t.Logf("%s guard off %v: bulk share %.3f, probe %d/%d, max wait %v, diverted %d", name, off, share, probeGot, probeSent, probeWait, div)
			if off {
				require.Less(t, share, 0.05, name)
				require.Zero(t, div, name)
				continue
			}
			require.Greater(t, share, 0.25, name)
			require.Equal(t, probeSent, probeGot, name)
			require.Zero(t, r.probeLost, name)
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
	type owned interface {
		guardQueue
		bucketOwner(h uint32) (idx, owner uint32, set bool)
	}
	for name, r := range floodRigs(t, false, 7) {
		q := r.q.(owned)
		pb, _, _ := q.bucketOwner(probeHash)
		var thief uint32 // another hash of the probe's bucket
		for h := uint32(1); ; h++ {
			if idx, _, _ := q.bucketOwner(h); idx == pb && h != probeHash && h != bulkHash {
				thief = h
				break
			}
		}
		var probeSent, probeGot, thiefSent int
		var probeWait time.Duration
		for step := range 100_000 {
			r.tick()
			if step > 2000 { // the probe owns its bucket before the flood
				r.flood()
				if step%417 == 5 { // every ~50 ms, between probes
					thiefSent++
					r.send(1500, thief, 1<<42)
				}
			}
			if step%84 == 0 { // every ~10 ms
				probeSent++
				r.send(64, probeHash, 1<<41)
			}
			if step%2 == 1 {
				p, ok := r.depart()
				if ok && p.Hash == probeHash {
					probeGot++
					// After the flood's first 240 ms: its onset spends
					// the saved admissions, a burst of new flows ahead
					// of the probe on the new list.
					if step > 4000 {
						probeWait = max(probeWait, p.Enqueued.Since(r.now))
					}
				}
			}
		}
		_, owner, set := q.bucketOwner(probeHash)
		_, _, promoted := q.guardCounts()
		t.Logf("%s: probe %d/%d, lost %d, max wait %v, thief sent %d, promoted %d, owner %#x", name, probeGot, probeSent, r.probeLost, probeWait, thiefSent, promoted, owner)
		require.Greater(t, thiefSent, 200, name)
		require.True(t, set, name)
		require.Equal(t, uint32(probeHash), owner, name)
		require.Zero(t, r.probeLost, name)
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
	for phase := range 8 {
		for name, r := range floodRigs(t, false, 9) {
			var probeSent, probeGot, lateSent, lateGot int
			var lateWait time.Duration
			start := 4000 + 11*phase
			settled := start + 10*84
			for step := range 30_000 {
				r.tick()
				r.flood()
				if step >= start && (step-start)%84 == 0 { // every ~10 ms
					probeSent++
					if step >= settled {
						lateSent++
					}
					r.send(64, probeHash, uint64(step)<<40)
				}
				if step%2 == 1 {
					p, ok := r.depart()
					if ok && p.Hash == probeHash {
						probeGot++
						if int(p.Payload>>40) >= settled {
							lateGot++
							lateWait = max(lateWait, p.Enqueued.Since(r.now))
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
	for name, r := range floodRigs(t, false, 11) {
		var check func() []string
		switch q := r.q.(type) {
		case *CoDel[uint64]:
			check = func() []string { return guardCountsExact(&q.sched) }
		case *Cobalt[uint64]:
			check = func() []string { return guardCountsExact(&q.sched) }
		case *PIE[uint64]:
			check = func() []string { return guardCountsExact(&q.sched) }
		}
		for step := range 40_000 {
			r.tick()
			r.flood()
			if step%2 == 1 {
				r.depart()
			}
			if step%1000 == 999 {
				require.Empty(t, check(), "%s at step %d", name, step)
			}
		}
		t.Logf("%s: backlogged flow's early drops %d", name, r.bulkEarly)
		if _, isPIE := r.q.(*PIE[uint64]); isPIE {
			require.NotZero(t, r.bulkEarly, name)
		}
	}
}
