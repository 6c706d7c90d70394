package sfq

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/require"
)

// refSFQ is a slow, obviously-correct SFQ written from the description of
// Linux sch_sfq (our pseudocode in the spec, §4.3) with maps and slices and
// no cleverness: flows are a map from bucket to a slice of packets, the
// round-robin ring is a slice whose first element is served next, the
// longest flow is found by scanning, and the DRR skip is the plain loop.
//
// Linux breaks ties between longest flows by the order of its per-depth
// lists: the slot that most recently changed its length comes first. Here
// that is a stamp per flow, bumped every time its packet count changes.
type refSFQ struct {
	cfg   Config // validated
	rnd   rng.Source
	key   uint64
	flows map[uint32]*refFlow
	ring  []uint32 // buckets, ring[0] is served next
	clock uint64   // stamp source

	armed bool
	next  aqm.Time

	seq     uint64
	evicted []aqm.Packet[uint64]
}

type refPkt struct {
	p  aqm.Packet[uint64]
	id uint64
}

type refFlow struct {
	pkts  []refPkt
	allot int64
	stamp uint64
}

func newRefSFQ(cfg Config) *refSFQ {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	r := &refSFQ{cfg: cfg, flows: map[uint32]*refFlow{}}
	r.rnd.Seed(cfg.Seed)
	r.key = r.rnd.Uint64()
	return r
}

// refBucket is the keyed hash written out again: SplitMix64's finaliser
// applied to hash xor key, the top 32 bits scaled to [0, divisor).
func refBucket(h uint32, key uint64, divisor int) uint32 {
	z := uint64(h) ^ key
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	hi := float64(z>>32) / (1 << 32) // in [0, 1), exact in float64
	return uint32(math.Floor(hi * float64(divisor)))
}

func (r *refSFQ) Len() int {
	n := 0
	for _, f := range r.flows {
		n += len(f.pkts)
	}
	return n
}

func (r *refSFQ) Backlog() int {
	b := 0
	for _, f := range r.flows {
		for _, p := range f.pkts {
			b += int(p.p.Size)
		}
	}
	return b
}

func (r *refSFQ) touch(f *refFlow) {
	r.clock++
	f.stamp = r.clock
}

// add appends a packet to its flow, creating the flow at the back of the
// ring with a full quantum if it had no packets.
func (r *refSFQ) add(rp refPkt) *refFlow {
	b := refBucket(rp.p.Hash, r.key, r.cfg.Divisor)
	f := r.flows[b]
	if f == nil {
		f = &refFlow{allot: int64(r.cfg.QuantumBytes)}
		r.flows[b] = f
		r.ring = append(r.ring, b)
	}
	f.pkts = append(f.pkts, rp)
	r.touch(f)
	return f
}

func (r *refSFQ) removeFlowIfEmpty(b uint32) {
	if len(r.flows[b].pkts) > 0 {
		return
	}
	delete(r.flows, b)
	for i, x := range r.ring {
		if x == b {
			r.ring = append(r.ring[:i], r.ring[i+1:]...)
			return
		}
	}
	panic("ref: flow not in ring")
}

func (r *refSFQ) Enqueue(p aqm.Packet[uint64], now aqm.Time) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	if r.cfg.PerturbPeriod > 0 {
		if !r.armed {
			r.armed = true
			r.next = refAddSat(now, r.cfg.PerturbPeriod)
		} else if now >= r.next {
			r.next = refAddSat(now, r.cfg.PerturbPeriod)
			r.key = r.rnd.Uint64()
			r.rehash()
		} else if uint64(r.next)-uint64(now) > uint64(r.cfg.PerturbPeriod) {
			// The time policy: a re-key scheduled further ahead than one
			// period (after a glitch) is pulled back to one period from now.
			r.next = refAddSat(now, r.cfg.PerturbPeriod)
		}
	}
	lb := r.cfg.LimitBytes
	if lb > 0 && (int(p.Size) > lb || r.Backlog() > lb) || r.Len() > r.cfg.LimitPackets {
		return aqm.DroppedOverlimit
	}
	r.seq++
	arrival := refPkt{p: p, id: r.seq}
	b := refBucket(p.Hash, r.key, r.cfg.Divisor)
	if f := r.flows[b]; f != nil && len(f.pkts) >= r.cfg.DepthPackets {
		if !r.cfg.HeadDrop {
			return aqm.DroppedOverlimit
		}
		old := f.pkts[0]
		f.pkts = append(f.pkts[1:], arrival) // same length: no stamp
		r.evicted = append(r.evicted, old.p)
	} else {
		r.add(arrival)
	}
	for r.Len() > r.cfg.LimitPackets || (lb > 0 && r.Backlog() > lb) {
		longest := 0
		for _, f := range r.flows {
			longest = max(longest, len(f.pkts))
		}
		var vb uint32
		var head bool
		if longest > 1 {
			var best *refFlow
			for b, f := range r.flows {
				if len(f.pkts) == longest && (best == nil || f.stamp > best.stamp) {
					best, vb = f, b
				}
			}
			head = r.cfg.HeadDrop
		} else {
			vb, head = r.ring[0], true
		}
		f := r.flows[vb]
		var v refPkt
		if head {
			v, f.pkts = f.pkts[0], f.pkts[1:]
		} else {
			v, f.pkts = f.pkts[len(f.pkts)-1], f.pkts[:len(f.pkts)-1]
		}
		r.touch(f)
		r.removeFlowIfEmpty(vb)
		if v.id == arrival.id {
			return aqm.DroppedOverlimit
		}
		r.evicted = append(r.evicted, v.p)
	}
	return aqm.Enqueued
}

func (r *refSFQ) Dequeue(now aqm.Time) (aqm.Packet[uint64], bool) {
	if len(r.ring) == 0 {
		return aqm.Packet[uint64]{}, false
	}
	for r.flows[r.ring[0]].allot <= 0 {
		b := r.ring[0]
		r.flows[b].allot += int64(r.cfg.QuantumBytes)
		r.ring = append(r.ring[1:], b)
	}
	b := r.ring[0]
	f := r.flows[b]
	p := f.pkts[0].p
	f.pkts = f.pkts[1:]
	r.touch(f)
	if len(f.pkts) == 0 {
		r.removeFlowIfEmpty(b)
	} else {
		f.allot -= int64(p.Size)
	}
	return p, true
}

// rehash moves every packet, in service order, to its bucket under the new
// key, ignoring the depth limit.
func (r *refSFQ) rehash() {
	var all []refPkt
	for _, b := range r.ring {
		all = append(all, r.flows[b].pkts...)
	}
	r.flows = map[uint32]*refFlow{}
	r.ring = nil
	for _, rp := range all {
		r.add(rp)
	}
}

func refAddSat(t aqm.Time, d time.Duration) aqm.Time {
	if t > aqm.Time(math.MaxInt64-int64(d)) {
		return aqm.Time(math.MaxInt64)
	}
	return t + aqm.Time(d)
}

// sfqTrace is a random workload for differential runs.
type sfqTraceOp struct {
	kind byte // 'e' enqueue, 'd' dequeue
	p    aqm.Packet[uint64]
	dt   time.Duration // advance before the op
}

func randomSFQConfig(r *rand.Rand) Config {
	c := Config{
		LimitPackets: 1 + r.IntN(40),
		DepthPackets: 1 + r.IntN(20),
		Divisor:      1 + r.IntN(64),
		QuantumBytes: 1 + r.IntN(3000),
		HeadDrop:     r.IntN(2) == 0,
		Seed:         r.Uint64(),
	}
	if r.IntN(3) == 0 {
		c.LimitBytes = 1 + r.IntN(20000)
	}
	if r.IntN(2) == 0 {
		c.PerturbPeriod = time.Duration(1+r.IntN(50)) * time.Millisecond
	}
	return c
}

func randomSFQTrace(r *rand.Rand, n int) []sfqTraceOp {
	flows := 1 + r.IntN(30)
	maxSize := 1 + r.IntN(3000)
	ops := make([]sfqTraceOp, n)
	pEnq := 0.3 + 0.5*r.Float64()
	for i := range ops {
		o := sfqTraceOp{kind: 'd', dt: time.Duration(r.IntN(2000)) * time.Microsecond}
		if r.Float64() < pEnq {
			o.kind = 'e'
			o.p = aqm.Packet[uint64]{
				Payload: uint64(i),
				Meta:    aqm.Meta{Size: uint32(r.IntN(maxSize + 1)), Hash: uint32(r.IntN(flows)) * 0x9e3779b1, ECN: aqm.ECN(r.IntN(256))},
			}
		}
		ops[i] = o
	}
	return ops
}

// runSFQDifferential feeds one trace to the fast SFQ and the reference and
// requires identical verdicts, dequeued packets, evictions and sizes.
func runSFQDifferential(t testing.TB, cfg Config, ops []sfqTraceOp) {
	ref := newRefSFQ(cfg)
	var evicted []aqm.Packet[uint64]
	q, err := New(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) {
		if v != aqm.DroppedOverlimit {
			t.Fatalf("eviction with verdict %v", v)
		}
		evicted = append(evicted, p)
	})
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	for k, o := range ops {
		now += aqm.Time(o.dt)
		switch o.kind {
		case 'e':
			got, want := q.Enqueue(o.p, now), ref.Enqueue(o.p, now)
			if got != want {
				t.Fatalf("op %d: enqueue %+v: verdict %v, reference %v (cfg %+v)", k, o.p, got, want, cfg)
			}
		case 'd':
			gp, gok := q.Dequeue(now)
			wp, wok := ref.Dequeue(now)
			if gok != wok || gp != wp {
				t.Fatalf("op %d: dequeue %+v %v, reference %+v %v (cfg %+v)", k, gp, gok, wp, wok, cfg)
			}
		}
		if len(evicted) != len(ref.evicted) {
			t.Fatalf("op %d: %d evictions, reference %d (cfg %+v)", k, len(evicted), len(ref.evicted), cfg)
		}
		for i := range evicted {
			if evicted[i] != ref.evicted[i] {
				t.Fatalf("op %d: eviction %d is %+v, reference %+v", k, i, evicted[i], ref.evicted[i])
			}
		}
		if q.Len() != ref.Len() || q.Backlog() != ref.Backlog() {
			t.Fatalf("op %d: len/backlog %d/%d, reference %d/%d", k, q.Len(), q.Backlog(), ref.Len(), ref.Backlog())
		}
		longest := 0
		for _, f := range ref.flows {
			longest = max(longest, len(f.pkts))
		}
		if d := q.Detail(); d.ActiveFlows != len(ref.flows) || d.LongestFlowPackets != longest {
			t.Fatalf("op %d: detail %+v, reference flows %d longest %d", k, d, len(ref.flows), longest)
		}
	}
}

// TestSFQMatchesReference protects the fast SFQ's exact dequeue order, drop
// choice (longest flow, Linux tie-break, head/tail, all-depth-one case),
// depth and byte limits, the closed-form DRR skip for small quanta, and the
// perturbation rehash, against the slow reference on random traces. No
// tolerance: SFQ has no arithmetic to round, so every decision must match.
func TestSFQMatchesReference(t *testing.T) {
	traces, length := 1500, 400
	if testing.Short() {
		traces = 300
	}
	seed := uint64(20240611)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for range traces {
		cfg := randomSFQConfig(r)
		runSFQDifferential(t, cfg, randomSFQTrace(r, length))
	}
}

// TestSFQReferenceBucket protects the reference's independent statement of
// the keyed hash (float scaling) against the fast integer multiply-shift.
func TestSFQReferenceBucket(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 100000 {
		h, key, div := r.Uint32(), r.Uint64(), 1+r.IntN(maxDivisor)
		require.Equal(t, refBucket(h, key, div), bucketOf(h, key, uint32(div)))
	}
}
