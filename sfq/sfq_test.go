package sfq

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSFQConfigDefaults protects the documented zero-value defaults
// (Linux's "limit 127p depth 127 divisor 1024", quantum one Ethernet MTU,
// no perturbation, tail drop).
func TestSFQConfigDefaults(t *testing.T) {
	var c Config
	require.NoError(t, c.Validate())
	assert.Equal(t, Config{LimitPackets: 127, DepthPackets: 127, Divisor: 1024, QuantumBytes: 1514}, c.withDefaults())
	q, err := New[int](Config{}, nil)
	require.NoError(t, err)
	got := q.Config()
	assert.NotZero(t, got.Seed, "the seed drawn is reported")
	got.Seed = 0
	assert.Equal(t, c.withDefaults(), got)
	assert.Equal(t, 128, len(q.slots), "min(divisor 1024, limit+1)")
	assert.Equal(t, 128, len(q.nodes), "limit plus the arrival held while a victim is chosen")
}

// TestSFQConfigErrors protects validation: every bad field is named, each
// error wraps aqm.ErrInvalidConfig, and nothing is built.
func TestSFQConfigErrors(t *testing.T) {
	bad := Config{LimitPackets: -1, LimitBytes: -1, DepthPackets: -1, Divisor: maxDivisor + 1,
		QuantumBytes: -5, PerturbPeriod: -time.Second}
	q, err := New[int](bad, nil)
	require.Error(t, err)
	assert.Nil(t, q)
	assert.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, f := range []string{"LimitPackets", "LimitBytes", "DepthPackets", "Divisor", "QuantumBytes", "PerturbPeriod"} {
		assert.Contains(t, err.Error(), "sfq: "+f+" (", f)
	}
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "sfq", ce.Pkg)
	_, err = New[int](Config{LimitPackets: maxLimitPackets + 1}, nil)
	assert.ErrorIs(t, err, aqm.ErrInvalidConfig)
	if intBits == 64 {
		_, err = New[int](Config{QuantumBytes: math.MaxUint32 + 1}, nil)
		assert.ErrorIs(t, err, aqm.ErrInvalidConfig)
	}
}

// intBits is the size of int; QuantumBytes above MaxUint32 needs 64 bits.
const intBits = 32 << (^uint(0) >> 63)

// sfqStep is one row of a step table: at t0+at, enqueue a packet of flow
// hash h (id is its payload) and expect verdict want, or dequeue and expect
// payload id (0: expect an empty queue). evict lists the payloads the step
// must hand to the DropFunc, in order.
type sfqStep struct {
	at    time.Duration
	enq   bool
	h     uint32
	size  uint32
	id    uint64
	want  aqm.Verdict
	evict []uint64
}

const sfqT0 = aqm.Time(1_000_000_000)

// runSFQSteps plays steps against a queue built from cfg. The hashes used
// must fall in distinct buckets (checked), so flows are exactly the hashes.
func runSFQSteps(t *testing.T, cfg Config, steps []sfqStep) *Queue[uint64] {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = 1 // the bucket check below is for one fixed key
	}
	var evicted []uint64
	q, err := New(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) {
		assert.Equal(t, aqm.DroppedOverlimit, v)
		evicted = append(evicted, p.Payload)
	})
	require.NoError(t, err)
	buckets := map[uint32]uint32{}
	for _, s := range steps {
		if s.enq {
			b := q.bucket(s.h)
			if h, ok := buckets[b]; ok && h != s.h {
				t.Fatalf("precondition: hashes %d and %d share bucket %d", h, s.h, b)
			}
			buckets[b] = s.h
		}
	}
	for i, s := range steps {
		evicted = evicted[:0]
		now := sfqT0.Add(s.at)
		if s.enq {
			v := q.Enqueue(aqm.Packet[uint64]{Payload: s.id, Meta: aqm.Meta{Size: s.size, Hash: s.h}}, now)
			require.Equal(t, s.want, v, "step %d: verdict", i)
		} else {
			p, ok := q.Dequeue(now)
			if s.id == 0 {
				require.False(t, ok, "step %d: want empty, got %d", i, p.Payload)
			} else {
				require.True(t, ok, "step %d: want %d, got empty", i, s.id)
				require.Equal(t, s.id, p.Payload, "step %d: dequeued", i)
			}
		}
		if len(s.evict) == 0 {
			require.Empty(t, evicted, "step %d: evictions", i)
		} else {
			require.Equal(t, s.evict, evicted, "step %d: evictions", i)
		}
	}
	return q
}

func enq(h uint32, size uint32, id uint64, want aqm.Verdict, evict ...uint64) sfqStep {
	return sfqStep{enq: true, h: h, size: size, id: id, want: want, evict: evict}
}

func deq(id uint64) sfqStep { return sfqStep{id: id} }

// Flow hashes A, B, C for the step tables, in a huge divisor so they do not
// collide (runSFQSteps checks).
const (
	fA = 0x1111
	fB = 0x2222
	fC = 0x3333
)

// TestSFQSteps protects the scheduling and drop rules at fixed instants; each
// expectation is derived by hand from the rules in the SFQ doc comment.
func TestSFQSteps(t *testing.T) {
	big := Config{LimitPackets: 100, Divisor: 1 << 20, Seed: 1, QuantumBytes: 1000}
	ok, refused := aqm.Enqueued, aqm.DroppedOverlimit
	t.Run("drr-bytes", func(t *testing.T) {
		// A: 600,600,600; B: 1000,1000; quantum 1000. A (allot 1000) sends
		// A1 (400 left) and A2 (-200); the ring moves on: B sends B1 (0
		// left); A gets +1000 (800) and sends A3, emptying; B gets +1000 and
		// sends B2.
		runSFQSteps(t, big, []sfqStep{
			enq(fA, 600, 1, ok), enq(fA, 600, 2, ok), enq(fA, 600, 3, ok),
			enq(fB, 1000, 11, ok), enq(fB, 1000, 12, ok),
			deq(1), deq(2), deq(11), deq(3), deq(12), deq(0),
		})
	})
	t.Run("new-flow-joins-at-back", func(t *testing.T) {
		// A and B are active with one quantum each; C arrives after A's
		// turn started and is served after B: A1 A2 | B1 | C1 | A3.
		runSFQSteps(t, big, []sfqStep{
			enq(fA, 500, 1, ok), enq(fA, 500, 2, ok), enq(fA, 500, 3, ok), enq(fB, 1000, 11, ok),
			deq(1), enq(fC, 100, 21, ok),
			deq(2), deq(11), deq(21), deq(3), deq(0),
		})
	})
	t.Run("empty-flow-forgets-credit", func(t *testing.T) {
		// Quantum 1000. A sends a 1500-byte packet (credit -500) and
		// empties, leaving the ring; its debt is forgotten. A's next packet
		// makes it rejoin behind B with a fresh 1000. B sends B1 (credit 0);
		// B is refilled and moved back, A (1000) sends A2, then B2. Had A
		// kept its -500, it would have been skipped once and B2 gone first.
		runSFQSteps(t, Config{LimitPackets: 100, Divisor: 1 << 20, Seed: 1, QuantumBytes: 1000}, []sfqStep{
			enq(fA, 1500, 1, ok), enq(fB, 1000, 11, ok), enq(fB, 1000, 12, ok),
			deq(1),
			enq(fA, 1000, 2, ok),
			deq(11), deq(2), deq(12), deq(0),
		})
	})
	t.Run("overflow-tail-drop-longest", func(t *testing.T) {
		// limit 4: A holds 3, B 1. B's arrival makes 5 > 4: A (3) is the
		// longest, its newest packet (3) goes. A's own arrival when A is
		// longest is the victim itself: refused.
		// Quantum 100 = one 100-byte packet per turn.
		runSFQSteps(t, Config{LimitPackets: 4, Divisor: 1 << 20, Seed: 1, QuantumBytes: 100}, []sfqStep{
			enq(fA, 100, 1, ok), enq(fA, 100, 2, ok), enq(fA, 100, 3, ok), enq(fB, 100, 11, ok),
			enq(fB, 100, 12, ok, 3),
			enq(fA, 100, 4, refused), // A 2, B 2: A reaches 3, longest
			enq(fB, 100, 13, refused),
			deq(1), deq(11), deq(2), deq(12), deq(0),
		})
	})
	t.Run("overflow-head-drop-longest", func(t *testing.T) {
		// As above with HeadDrop: the longest flow loses its oldest packet,
		// and an arrival to the longest flow is kept (its flow's head goes).
		runSFQSteps(t, Config{LimitPackets: 4, Divisor: 1 << 20, Seed: 1, QuantumBytes: 100, HeadDrop: true}, []sfqStep{
			enq(fA, 100, 1, ok), enq(fA, 100, 2, ok), enq(fA, 100, 3, ok), enq(fB, 100, 11, ok),
			enq(fB, 100, 12, ok, 1),
			enq(fA, 100, 4, ok, 2),
			deq(3), deq(11), deq(4), deq(12), deq(0),
		})
	})
	t.Run("tie-prefers-most-recent", func(t *testing.T) {
		// limit 4: A 2, B 2 (B reached 2 last). C's arrival: A and B are
		// both longest; the one that changed length last (B) loses its tail.
		runSFQSteps(t, Config{LimitPackets: 4, Divisor: 1 << 20, Seed: 1}, []sfqStep{
			enq(fA, 100, 1, ok), enq(fA, 100, 2, ok), enq(fB, 100, 11, ok), enq(fB, 100, 12, ok),
			enq(fC, 100, 21, ok, 12),
			enq(fA, 100, 3, refused), // A 3 is the unique longest
		})
	})
	t.Run("all-depth-one-drops-front", func(t *testing.T) {
		// limit 2, every flow one packet: the front of the ring (A, the
		// next to be served) loses its packet and leaves the ring.
		runSFQSteps(t, Config{LimitPackets: 2, Divisor: 1 << 20, Seed: 1}, []sfqStep{
			enq(fA, 100, 1, ok), enq(fB, 100, 11, ok),
			enq(fC, 100, 21, ok, 1),
			deq(11), deq(21), deq(0),
		})
	})
	t.Run("depth-limit", func(t *testing.T) {
		// depth 2: A's third packet is refused; with HeadDrop it replaces
		// A's oldest.
		runSFQSteps(t, Config{DepthPackets: 2, Divisor: 1 << 20, Seed: 1}, []sfqStep{
			enq(fA, 100, 1, ok), enq(fA, 100, 2, ok), enq(fA, 100, 3, refused),
			deq(1), deq(2), deq(0),
		})
		q := runSFQSteps(t, Config{DepthPackets: 2, Divisor: 1 << 20, Seed: 1, HeadDrop: true}, []sfqStep{
			enq(fA, 100, 1, ok), enq(fA, 100, 2, ok), enq(fA, 100, 3, ok, 1),
			deq(2), deq(3), deq(0),
		})
		assert.Equal(t, uint64(1), q.Detail().DroppedDepth, "one head replaced")
	})
	t.Run("byte-limit", func(t *testing.T) {
		// 3000 bytes: A 1000+1000, B 1500 makes 3500: A (2 packets) is the
		// longest, its tail goes (2500 left). A 4000-byte packet is refused
		// outright.
		runSFQSteps(t, Config{LimitBytes: 3000, Divisor: 1 << 20, Seed: 1}, []sfqStep{
			enq(fA, 1000, 1, ok), enq(fA, 1000, 2, ok), enq(fB, 1500, 11, ok, 2),
			enq(fC, 4000, 21, refused),
			deq(1), deq(11), deq(0),
		})
	})
	t.Run("perturb-schedule", func(t *testing.T) {
		// Period 10 ms: the first Enqueue (t0) arms t0+10ms; 9.999 ms later
		// nothing happens; at t0+10ms the key changes and the next instant
		// is t0+20ms. FIFO within the flow survives the re-key.
		cfg := Config{Divisor: 1 << 20, Seed: 1, PerturbPeriod: 10 * time.Millisecond}
		q, err := New[uint64](cfg, nil)
		require.NoError(t, err)
		assert.Zero(t, q.Detail().NextPerturb)
		q.Enqueue(aqm.Packet[uint64]{Payload: 1, Meta: aqm.Meta{Hash: fA}}, sfqT0)
		assert.Equal(t, sfqT0.Add(10*time.Millisecond), q.Detail().NextPerturb)
		key := q.key
		q.Enqueue(aqm.Packet[uint64]{Payload: 2, Meta: aqm.Meta{Hash: fA}}, sfqT0.Add(10*time.Millisecond-1))
		assert.Equal(t, key, q.key)
		assert.Zero(t, q.Detail().Perturbations)
		q.Enqueue(aqm.Packet[uint64]{Payload: 3, Meta: aqm.Meta{Hash: fA}}, sfqT0.Add(10*time.Millisecond))
		assert.NotEqual(t, key, q.key)
		assert.Equal(t, uint64(1), q.Detail().Perturbations)
		assert.Equal(t, sfqT0.Add(20*time.Millisecond), q.Detail().NextPerturb)
		for want := uint64(1); want <= 3; want++ {
			p, ok := q.Dequeue(sfqT0.Add(time.Second))
			require.True(t, ok)
			assert.Equal(t, want, p.Payload)
		}
	})
}

// TestSFQDepthDropCounter protects Detail's depth and overflow counters.
func TestSFQDepthDropCounter(t *testing.T) {
	q, err := New[uint64](Config{LimitPackets: 3, DepthPackets: 2, Divisor: 1 << 20, Seed: 1}, nil)
	require.NoError(t, err)
	for i := range 3 {
		q.Enqueue(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Hash: fA}}, sfqT0)
	}
	q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Hash: fB}}, sfqT0)
	q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Hash: fC}}, sfqT0) // 4 > 3: A (2) longest, loses its tail
	d := q.Detail()
	assert.Equal(t, uint64(1), d.DroppedDepth)
	assert.Equal(t, uint64(1), d.DroppedOverflow)
	assert.Equal(t, 3, d.ActiveFlows)
	assert.Equal(t, 1, d.LongestFlowPackets)
	f, ok := q.Flow(fB)
	require.True(t, ok)
	assert.Equal(t, FlowDetail{Packets: 1, Bytes: 0, AllotBytes: defaultQuantumBytes}, f)
}

// FuzzSFQModel decodes a random configuration and trace and requires the
// fast SFQ to match the reference model exactly.
func FuzzSFQModel(f *testing.F) {
	f.Add(uint64(1), []byte("seed corpus"))
	f.Add(uint64(42), []byte{0, 1, 2, 3, 255, 254, 17, 99, 3, 3, 3, 3, 3, 3, 3, 200})
	f.Fuzz(func(t *testing.T, seed uint64, data []byte) {
		r := rand.New(rand.NewPCG(seed, 0))
		cfg := randomSFQConfig(r)
		ops := make([]sfqTraceOp, 0, len(data)/2)
		for i := 0; i+1 < len(data); i += 2 {
			b, c := data[i], data[i+1]
			o := sfqTraceOp{dt: time.Duration(b>>4) * time.Millisecond}
			if b&1 == 1 {
				o.kind = 'e'
				o.p = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: uint32(c) * 13, Hash: uint32(c % 11), ECN: aqm.ECN(b)}}
			} else {
				o.kind = 'd'
			}
			ops = append(ops, o)
		}
		runSFQDifferential(t, cfg, ops)
	})
}

// sfqGopterParams returns gopter parameters with a fixed, logged seed.
func sfqGopterParams(t *testing.T) *gopter.TestParameters {
	const seed = 1990 // McKenney's year
	return proptest.Parameters(t, seed, 150, 30)
}

// distinctHashes returns n hashes that fall in distinct buckets of q.
func distinctHashes(q *Queue[uint64], n int, r *rand.Rand) []uint32 {
	seen := map[uint32]bool{}
	var hs []uint32
	for len(hs) < n {
		h := r.Uint32()
		if b := q.bucket(h); !seen[b] {
			seen[b] = true
			hs = append(hs, h)
		}
	}
	return hs
}

// TestSFQPropertyDRRFairness protects the DRR bound: with every flow
// backlogged and QuantumBytes Q at least the largest packet M, each of a
// flow's turns is one run of consecutive dequeues, and over any k
// consecutive complete turns a flow is served more than kQ-M and less than
// kQ+M bytes (the credit at a turn's start is in (Q-M, Q], at its end in
// (-M, 0], and each turn in between adds Q). So over full rounds every flow
// is within one quantum of its fair share.
func TestSFQPropertyDRRFairness(t *testing.T) {
	props := gopter.NewProperties(sfqGopterParams(t))
	props.Property("served bytes within M of k*quantum", prop.ForAll(func(seed uint64) string {
		r := rand.New(rand.NewPCG(seed, 2))
		maxP := 1 + r.IntN(3000)
		quantum := maxP + r.IntN(2*maxP+1)
		nflows := 2 + r.IntN(7)
		per := 20 + r.IntN(40)
		q, err := New[uint64](Config{LimitPackets: nflows * per, DepthPackets: per, Divisor: 1 << 20,
			QuantumBytes: quantum, Seed: seed}, nil)
		if err != nil {
			return err.Error()
		}
		hs := distinctHashes(q, nflows, r)
		left := map[uint32]int{}
		for range per * nflows {
			h := hs[r.IntN(nflows)]
			if q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: uint32(1 + r.IntN(maxP)), Hash: h}}, sfqT0).Accepted() {
				left[h]++
			}
		}
		// Serve while every flow stays backlogged.
		type run struct {
			h     uint32
			bytes int
		}
		var runs []run
		for {
			p, ok := q.Dequeue(sfqT0)
			if !ok {
				break
			}
			left[p.Hash]--
			if len(runs) > 0 && runs[len(runs)-1].h == p.Hash {
				runs[len(runs)-1].bytes += int(p.Size)
			} else {
				runs = append(runs, run{p.Hash, int(p.Size)})
			}
			if left[p.Hash] == 0 {
				runs = runs[:len(runs)-1] // its last turn ended by emptying
				break
			}
		}
		for _, h := range hs {
			var turns []int
			for _, x := range runs[:max(0, len(runs)-1)] { // the very last run may be unfinished
				if x.h == h {
					turns = append(turns, x.bytes)
				}
			}
			for i := range turns {
				sum := 0
				for k := 1; i+k <= len(turns); k++ {
					sum += turns[i+k-1]
					if sum <= k*quantum-maxP || sum >= k*quantum+maxP {
						return "flow served outside the DRR bound"
					}
				}
			}
		}
		return ""
	}, gen.UInt64()))
	props.TestingRun(t)
}

// sfqShadow tracks, outside the queue, which packets it holds, to check
// conservation, per-flow order and the longest-flow drop rule.
type sfqShadow struct {
	queued map[uint64]aqm.Packet[uint64] // by payload
	last   map[uint32]uint64             // per hash: last payload dequeued or evicted
	errs   []string
}

func (s *sfqShadow) leave(p aqm.Packet[uint64], how string) {
	if _, ok := s.queued[p.Payload]; !ok {
		s.errs = append(s.errs, how+" of a packet not queued (duplicate or invented)")
		return
	}
	delete(s.queued, p.Payload)
	if how == "dequeue" {
		if p.Payload < s.last[p.Hash] {
			s.errs = append(s.errs, "reordered within a flow")
		}
		s.last[p.Hash] = p.Payload
	}
}

// TestSFQPropertyLongestDropAndMemory protects the overload rule (every
// overflow drop comes from a flow of maximal packet count, arrival
// included) and the memory bound (Len, Backlog, active slots and slab use
// within the limits) under random configurations and arrival patterns.
func TestSFQPropertyLongestDropAndMemory(t *testing.T) {
	props := gopter.NewProperties(sfqGopterParams(t))
	props.Property("drops from a longest flow; memory within limits", prop.ForAll(func(seed uint64) string {
		r := rand.New(rand.NewPCG(seed, 3))
		cfg := randomSFQConfig(r)
		cfg.PerturbPeriod = 0 // buckets are computed by the shadow with the fixed key
		sh := &sfqShadow{queued: map[uint64]aqm.Packet[uint64]{}, last: map[uint32]uint64{}}
		var q *Queue[uint64]
		counts := map[uint32]int{} // per bucket, arrival included while it is in flight
		skipCheck := false
		q, err := New(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) {
			b := q.bucket(p.Hash)
			if !skipCheck {
				for _, c := range counts {
					if c > counts[b] {
						sh.errs = append(sh.errs, "evicted from a flow shorter than the longest")
					}
				}
			}
			skipCheck = false
			counts[b]--
			sh.leave(p, "eviction")
		})
		if err != nil {
			return err.Error()
		}
		if err := cfg.Validate(); err != nil {
			return err.Error()
		}
		now := sfqT0
		for i, o := range randomSFQTrace(r, 600) {
			now += aqm.Time(o.dt)
			if o.kind == 'e' {
				o.p.Payload = uint64(i + 1)
				b := q.bucket(o.p.Hash)
				f, _ := q.Flow(o.p.Hash)
				// A head-drop depth swap evicts first, and not by the
				// longest-flow rule.
				skipCheck = cfg.HeadDrop && f.Packets >= cfg.DepthPackets
				counts[b]++
				before := q.Detail()
				v := q.Enqueue(o.p, now)
				if v.Accepted() {
					sh.queued[o.p.Payload] = o.p
				} else {
					after := q.Detail()
					if after.DroppedOverflow > before.DroppedOverflow && after.DroppedDepth == before.DroppedDepth {
						// the arrival itself was the overflow victim: its
						// flow (with it) must have been a longest one.
						for _, c := range counts {
							if c > counts[b] {
								return "refused an arrival whose flow was not the longest"
							}
						}
					}
					counts[b]--
				}
				skipCheck = false
			} else if p, ok := q.Dequeue(now); ok {
				counts[q.bucket(p.Hash)]--
				sh.leave(p, "dequeue")
			}
			if len(sh.errs) > 0 {
				return sh.errs[0]
			}
			if q.Len() > cfg.LimitPackets || (cfg.LimitBytes > 0 && q.Backlog() > cfg.LimitBytes) {
				return "over a limit"
			}
			if q.Len() != len(sh.queued) {
				return "Len disagrees with the packets held"
			}
			free := 0
			for j := q.free; j != none; j = q.nodes[j].next {
				free++
			}
			if free+q.Len() != len(q.nodes) || q.Detail().ActiveFlows > q.Len() {
				return "slab or slot accounting broken"
			}
		}
		return ""
	}, gen.UInt64()))
	props.TestingRun(t)
}

// TestSFQPropertyPerturbKeepsOrder protects per-flow FIFO order and
// conservation across frequent re-keys (every 1-3 ms while packets are
// queued), with random Reconfigure calls mixed in.
func TestSFQPropertyPerturbKeepsOrder(t *testing.T) {
	props := gopter.NewProperties(sfqGopterParams(t))
	props.Property("no reordering, loss or duplication", prop.ForAll(func(seed uint64) string {
		r := rand.New(rand.NewPCG(seed, 4))
		cfg := randomSFQConfig(r)
		cfg.PerturbPeriod = time.Duration(1+r.IntN(3)) * time.Millisecond
		sh := &sfqShadow{queued: map[uint64]aqm.Packet[uint64]{}, last: map[uint32]uint64{}}
		q, err := New(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { sh.leave(p, "eviction") })
		if err != nil {
			return err.Error()
		}
		now := sfqT0
		for i, o := range randomSFQTrace(r, 800) {
			now += aqm.Time(o.dt)
			if r.IntN(100) == 0 {
				c := randomSFQConfig(r)
				c.PerturbPeriod = cfg.PerturbPeriod
				before := q.Len()
				if err := q.Reconfigure(c); err != nil {
					return err.Error()
				}
				if q.Len() != before {
					return "Reconfigure changed Len"
				}
			}
			if o.kind == 'e' {
				o.p.Payload = uint64(i + 1)
				if q.Enqueue(o.p, now).Accepted() {
					sh.queued[o.p.Payload] = o.p
				}
			} else if p, ok := q.Dequeue(now); ok {
				sh.leave(p, "dequeue")
			}
			if len(sh.errs) > 0 {
				return sh.errs[0]
			}
		}
		for {
			p, ok := q.Dequeue(now)
			if !ok {
				break
			}
			sh.leave(p, "dequeue")
		}
		if len(sh.errs) > 0 {
			return sh.errs[0]
		}
		if len(sh.queued) != 0 {
			return "packets lost"
		}
		if q.Detail().Perturbations == 0 {
			return "no perturbation happened"
		}
		return ""
	}, gen.UInt64()))
	props.TestingRun(t)
}

// TestSFQHashFlood protects bounded memory and no starvation under a flood
// of distinct flows: an attacker sends 4 packets per packet time, each to a
// new flow hash (800,000 distinct flows), while an innocent flow sends one
// packet every 8 packet times, more than its fair share, so it stays
// backlogged. Bound: a backlogged flow gets at least one turn per round; a
// round has at most one turn per active flow (at most LimitPackets+1 of
// them), and with 1500-byte packets and a 1514-byte quantum a turn sends at
// most 2 packets, so the innocent flow gets at least ticks/(2(limit+1))
// packets. Memory: the slab never grows (a full slab would panic), Len
// stays within the limit and active flows within limit+1.
func TestSFQHashFlood(t *testing.T) {
	ticks := 200000
	if testing.Short() {
		ticks = 50000
	}
	for _, cfg := range []Config{{}, {LimitPackets: 1024, PerturbPeriod: 100 * time.Millisecond}} {
		q, err := New[uint64](cfg, nil)
		require.NoError(t, err)
		cfg = cfg.withDefaults() // the default limit, for the bound
		now := sfqT0
		attack := uint32(1 << 20)
		innocent := uint32(7)
		got, maxActive := 0, 0
		for tick := range ticks {
			now += aqm.Time(10 * time.Microsecond)
			for range 4 {
				attack++
				q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, Hash: attack}}, now)
			}
			if tick%8 == 0 {
				q.Enqueue(aqm.Packet[uint64]{Payload: 1, Meta: aqm.Meta{Size: 1500, Hash: innocent}}, now)
			}
			if p, ok := q.Dequeue(now); ok && p.Payload == 1 {
				got++
			}
			require.LessOrEqual(t, q.Len(), cfg.LimitPackets)
			maxActive = max(maxActive, q.Detail().ActiveFlows)
		}
		require.LessOrEqual(t, maxActive, cfg.LimitPackets+1)
		require.Equal(t, cfg.LimitPackets+1, len(q.nodes), "no growth")
		bound := ticks / (2 * (cfg.LimitPackets + 1))
		t.Logf("limit %d: innocent got %d packets (bound %d), max active flows %d", cfg.LimitPackets, got, bound, maxActive)
		assert.GreaterOrEqual(t, got, bound, "innocent flow starved")
	}
}

// TestSFQReconfigure protects Reconfigure: a lower limit keeps the queued
// packets and refuses arrivals until the queue is below it; a larger
// capacity or another divisor rebuilds without loss or reordering.
func TestSFQReconfigure(t *testing.T) {
	q, err := New[uint64](Config{LimitPackets: 20}, nil)
	require.NoError(t, err)
	for i := range 20 {
		require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 100, Hash: uint32(i % 3)}}, sfqT0))
	}
	require.NoError(t, q.Reconfigure(Config{LimitPackets: 5}))
	assert.Equal(t, 20, q.Len())
	assert.Equal(t, aqm.DroppedOverlimit, q.Enqueue(aqm.Packet[uint64]{Payload: 100, Meta: aqm.Meta{Hash: 9}}, sfqT0))
	assert.Equal(t, 20, q.Len())
	err = q.Reconfigure(Config{Divisor: -1})
	assert.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.NoError(t, q.Reconfigure(Config{LimitPackets: 500, Divisor: 7, QuantumBytes: 50}))
	assert.Equal(t, 20, q.Len())
	assert.Equal(t, 2000, q.Backlog())
	assert.Len(t, q.ht, 7)
	last := map[uint32]uint64{}
	seen := 0
	for {
		p, ok := q.Dequeue(sfqT0)
		if !ok {
			break
		}
		if prev, ok := last[p.Hash]; ok {
			assert.Greater(t, p.Payload, prev, "order within flow %d", p.Hash)
		}
		last[p.Hash] = p.Payload
		seen++
	}
	assert.Equal(t, 20, seen)
	assert.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[uint64]{Payload: 1, Meta: aqm.Meta{Hash: 9}}, sfqT0))
}

// TestSFQOddInputs protects against panics and unbounded work on odd
// input: zero and 4 GiB sizes with a 1-byte quantum (the closed-form skip),
// stray ECN bits, time going backwards and a jump to the end of time with
// perturbation on (saturating schedule).
func TestSFQOddInputs(t *testing.T) {
	q, err := New[uint64](Config{QuantumBytes: 1, PerturbPeriod: time.Hour, Divisor: 1 << 20, Seed: 1}, nil)
	require.NoError(t, err)
	now := sfqT0
	q.Enqueue(aqm.Packet[uint64]{Payload: 1, Meta: aqm.Meta{Size: math.MaxUint32, Hash: fA, ECN: 0xff}}, now)
	q.Enqueue(aqm.Packet[uint64]{Payload: 2, Meta: aqm.Meta{Size: math.MaxUint32, Hash: fA}}, now)
	q.Enqueue(aqm.Packet[uint64]{Payload: 11, Meta: aqm.Meta{Size: 0, Hash: fB}}, now-5)
	q.Enqueue(aqm.Packet[uint64]{Payload: 12, Meta: aqm.Meta{Size: 1, Hash: fB}}, now)
	// A's first 4 GiB packet leaves A about -2^32 in debt: with a 1-byte
	// quantum A then needs ~2^32 rounds, B serves meanwhile.
	var order []uint64
	for {
		p, ok := q.Dequeue(now)
		if !ok {
			break
		}
		order = append(order, p.Payload)
		if p.Payload == 1 {
			assert.Equal(t, aqm.CE, p.ECN, "stray high bits cleared, CE kept")
		}
	}
	assert.Equal(t, []uint64{1, 11, 12, 2}, order)
	q.Enqueue(aqm.Packet[uint64]{Payload: 3, Meta: aqm.Meta{Hash: fA}}, aqm.Time(math.MaxInt64))
	q.Enqueue(aqm.Packet[uint64]{Payload: 4, Meta: aqm.Meta{Hash: fA}}, aqm.Time(math.MaxInt64))
	assert.Equal(t, aqm.Time(math.MaxInt64), q.Detail().NextPerturb)
	assert.Equal(t, 2, q.Len())
	require.NotPanics(t, func() { q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Hash: fA}}, aqm.Time(math.MinInt64)) })
	if s := q.Stats(); s.Enqueued.Packets != s.Dequeued.Packets+s.DroppedQueued.Packets+uint64(s.Len) {
		t.Fatalf("stats do not balance: %+v", s)
	}
}
