package pie

import (
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// ulp is one unit of the fixed-point probability.
const ulp = 1.0 / (1 << 48)

// newCtl returns a controller and its params for cfg, as New would.
func newCtl(t *testing.T, cfg Config) (*Controller, *params) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	cfg = cfg.withDefaults()
	pp := cfg.derive()
	c := &Controller{}
	c.init(&pp, cfg.Seed)
	return c, &pp
}

func prob(c *Controller) float64 { return float64(c.p) / float64(probOne) }

// TestUpdateSteps protects the periodic update against the RFC 8033 §4.2
// formula: each row sets p and qdelay_old, runs one update with the given
// current delay and expects the probability worked out by hand from
// p + (alpha·(cur−ref) + beta·(cur−old))/divisor, with the 2% cap from p ≥
// 0.1 and the 0.98 decay when both samples are 0.
func TestUpdateSteps(t *testing.T) {
	type step struct {
		name        string
		cfg         Config
		p           float64
		old, cur    time.Duration
		want        float64
		wantDivisor float64 // documents the auto-tuning band used in want
	}
	steps := []step{
		// raw = 0.125·0.005 + 1.25·0.005 = 0.006875.
		{"tune p=0", Config{}, 0, 15 * ms, 20 * ms, 0.006875 / 2048, 2048},
		{"tune p=5e-7", Config{}, 5e-7, 15 * ms, 20 * ms, 5e-7 + 0.006875/2048, 2048},
		{"tune p=5e-6", Config{}, 5e-6, 15 * ms, 20 * ms, 5e-6 + 0.006875/512, 512},
		{"tune p=5e-5", Config{}, 5e-5, 15 * ms, 20 * ms, 5e-5 + 0.006875/128, 128},
		{"tune p=5e-4", Config{}, 5e-4, 15 * ms, 20 * ms, 5e-4 + 0.006875/32, 32},
		{"tune p=5e-3", Config{}, 5e-3, 15 * ms, 20 * ms, 5e-3 + 0.006875/8, 8},
		{"tune p=5e-2", Config{}, 5e-2, 15 * ms, 20 * ms, 5e-2 + 0.006875/2, 2},
		{"tune p=0.5", Config{}, 0.5, 15 * ms, 20 * ms, 0.5 + 0.006875, 1},
		// Negative errors are tuned the same way: raw = 0.125·(−0.005) +
		// 1.25·(−0.005) = −0.006875.
		{"tune down p=5e-3", Config{}, 5e-3, 15 * ms, 10 * ms, 5e-3 - 0.006875/8, 8},
		// Cap (§5.5): raw = 0.125·(0.415−0.015) = 0.05 > 0.02 from p ≥ 0.1.
		{"cap p=0.15", Config{}, 0.15, 415 * ms, 415 * ms, 0.17, 1},
		{"no cap below 0.1", Config{}, 0.09, 415 * ms, 415 * ms, 0.09 + 0.05/2, 2},
		// Linux's 250 ms rule adds 2% after the cap.
		{"boost p=0.15", Config{Control: Control{HighDelayBoost: true}}, 0.15, 415 * ms, 415 * ms, 0.19, 1},
		{"boost off below 250ms", Config{Control: Control{HighDelayBoost: true}}, 0.15, 215 * ms, 215 * ms, 0.17, 1},
		// Clamped to 1 (never above: no windup).
		{"clamp at 1", Config{Control: Control{HighDelayBoost: true}}, 0.99, 415 * ms, 415 * ms, 1, 1},
		// Idle decay: (0.5 − 0.125·0.015)·0.98.
		{"decay", Config{}, 0.5, 0, 0, (0.5 - 0.001875) * 0.98, 1},
		// No decay unless both samples are 0: 0.5 − 0.001875 − 1.25·0.001.
		{"no decay with old>0", Config{}, 0.5, ms, 0, 0.5 - 0.001875 - 0.00125, 1},
		// Clamped at 0.
		{"clamp at 0", Config{}, 0.001, 200 * ms, 0, 0, 32},
		// RFC §4.2 halving rule: T 7.5 ms, alpha 0.0625, beta 1.28125;
		// raw = 0.0625·0.005 + 1.28125·0.005 = 0.00671875.
		{"halved T", Config{Control: Control{TUpdate: 7500 * time.Microsecond, Alpha: 0.0625, Beta: 1.28125}}, 0.5, 15 * ms, 20 * ms, 0.5 + 0.00671875, 1},
	}
	for i, s := range steps {
		c, pp := newCtl(t, s.cfg)
		c.p = int64(s.p * (1 << 48))
		c.old = int64(s.old)
		c.update(pp, int64(s.cur))
		require.InDelta(t, s.want, prob(c), 4*ulp, "step %d (%s), divisor %v", i, s.name, s.wantDivisor)
		require.Equal(t, int64(s.cur), c.old, "step %d: qdelay_old", i)
	}
}

// TestUpdateSequence protects the auto-tuning band switching across
// consecutive updates (hand-computed from RFC 8033 §4.2 with the defaults):
// p=0, old=15ms; 20ms → 0.006875/2048; 20ms → +0.000625/512 (p is now in
// [1e-6, 1e-5)); 30ms → +0.014375/512.
func TestUpdateSequence(t *testing.T) {
	c, pp := newCtl(t, Config{})
	c.old = int64(15 * ms)
	want := []struct {
		cur time.Duration
		p   float64
	}{
		{20 * ms, 0.006875 / 2048},
		{20 * ms, 0.006875/2048 + 0.000625/512},
		{30 * ms, 0.006875/2048 + 0.000625/512 + 0.014375/512},
	}
	for i, w := range want {
		c.update(pp, int64(w.cur))
		require.InDelta(t, w.p, prob(c), 4*ulp, "step %d", i)
	}
	require.InDelta(t, 3.2654e-5, prob(c), 1e-9)
}

// TestBurstAllowanceExpiresOnce protects the burst allowance of RFC 8033
// §4.4: from MAX_BURST = 150 ms with T_UPDATE = 15 ms it lasts exactly 10
// congested updates, then stays at 0 (it must not wrap around as DPDK's
// unsigned subtraction does), and a quiet update with p = 0 restores it.
func TestBurstAllowanceExpiresOnce(t *testing.T) {
	c, pp := newCtl(t, Config{})
	require.Equal(t, int64(150*ms), c.burst)
	for k := 1; k <= 30; k++ {
		c.update(pp, int64(30*ms))
		require.Equal(t, max(0, int64(150*ms)-int64(k)*int64(15*ms)), c.burst, "update %d", k)
	}
	// Quiet again: p must first fall to 0; the allowance comes back only
	// with p == 0 and both samples below 7.5 ms.
	for c.p > 0 {
		c.update(pp, int64(7*ms))
		require.Zero(t, c.burst)
	}
	c.update(pp, int64(7*ms)) // now both samples are 7 ms
	require.Equal(t, int64(150*ms), c.burst)
}

// TestBurstAllowanceNoUnderflow is the regression test for DPDK rte_pie's
// burst allowance: with MAX_BURST (20 ms) not a multiple of T_UPDATE
// (15 ms), the second update must leave exactly 0, not a huge wrapped value
// that would suppress early drops for ever.
func TestBurstAllowanceNoUnderflow(t *testing.T) {
	q, err := New[int](Config{Control: Control{MaxBurst: 20 * ms, DisableECN: true}}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	// A standing queue that nobody serves: the delay grows.
	for i := range 20 {
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}}, now)
	}
	now = now.Add(15 * ms)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, now)
	require.Equal(t, 5*ms, q.Detail().BurstAllowance)
	now = now.Add(15 * ms)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, now)
	require.Equal(t, time.Duration(0), q.Detail().BurstAllowance)
	// Early drops start once p is large: offer packets, keeping time
	// moving, and expect drops.
	dropped := 0
	for i := range 400 {
		now = now.Add(ms)
		if q.Len() > 100 {
			q.Dequeue(now)
		}
		if v := q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}}, now); v == aqm.DroppedEarly {
			dropped++
		}
	}
	require.Equal(t, time.Duration(0), q.Detail().BurstAllowance)
	require.Positive(t, dropped)
}

// TestBurstProtectsArrivals protects the burst allowance's effect at the
// queue: no early drop before the 10th update after a reset, whatever the
// probability.
func TestBurstProtectsArrivals(t *testing.T) {
	q, err := New[int](Config{Control: Control{DisableECN: true}, LimitPackets: 100000}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, now) // starts the update clock
	for i := range 20000 {
		now = now.Add(75 * time.Microsecond) // 10 updates in 150 ms
		v := q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}}, now)
		if q.Detail().Updates < 10 {
			require.Equal(t, aqm.Enqueued, v, "arrival %d before the 10th update", i)
		}
	}
	require.Positive(t, q.Stats().DroppedEarly.Packets, "drops after the allowance ran out")
}

// TestIdleDecayClosedForm protects the lazy update across a long idle gap:
// an hour with an empty queue must leave p = 0, qdelay_old = 0 and the burst
// allowance restored, with every missed update counted, and the work done
// bounded (the reference tests check exactness for shorter gaps).
func TestIdleDecayClosedForm(t *testing.T) {
	q, err := New[int](Config{}, nil)
	require.NoError(t, err)
	t0 := aqm.Time(time.Second)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 100}}, t0)
	q.Dequeue(t0)
	q.ctl.p, q.ctl.old, q.ctl.burst = probOne, int64(time.Second), 0
	now := t0.Add(time.Hour)
	_, ok := q.Dequeue(now)
	require.False(t, ok)
	d := q.Detail()
	require.Zero(t, d.Prob)
	require.Zero(t, d.QueueDelay)
	require.Equal(t, defaultMaxBurst, d.BurstAllowance)
	// Updates at t0+15ms, t0+30ms, ... up to t0+1h: 240000 of them.
	require.Equal(t, uint64(time.Hour/(15*ms)), d.Updates)
	require.Equal(t, t0.Add(time.Hour+15*ms), d.NextUpdate)
}

// TestIdleDecayPerUpdate protects the idle decay rule itself: with the queue
// empty, each update applies p ← (p − alpha·ref/div)·0.98 until 0.
func TestIdleDecayPerUpdate(t *testing.T) {
	c, pp := newCtl(t, Config{})
	c.p = probOne
	want := 1.0
	steps := 0
	for c.p > 0 {
		c.update(pp, 0)
		div := 1.0
		for _, b := range []float64{0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6} {
			if want < b {
				div *= map[float64]float64{0.1: 2, 1e-2: 4, 1e-3: 4, 1e-4: 4, 1e-5: 4, 1e-6: 4}[b]
			}
		}
		want = max(0, (want-0.125*0.015/div)*0.98)
		require.InDelta(t, want, prob(c), 1e-12, "idle update %d", steps)
		steps++
	}
	require.Zero(t, want)
	require.Less(t, steps, maxCatchUp)
}

// TestNoWindupPast100 is the regression test for probabilities that wind
// past 100% (Linux sch_pie only catches the 2^64 wrap, so with its 2^56
// scale and the 250 ms rule p can climb far above MAX_PROB): after a long
// unresponsive overload p is exactly 1, and the first update that sees the
// delay fall brings it below 1 by exactly the PI term.
func TestNoWindupPast100(t *testing.T) {
	c, pp := newCtl(t, Config{Control: Control{HighDelayBoost: true}})
	for k := range 2000 {
		c.update(pp, int64(300*ms)+int64(k)*int64(15*ms))
	}
	require.Equal(t, probOne, c.p)
	old := c.old
	// The delay drops to exactly the target with the same old sample
	// minus 1 ms: raw = 1.25·(−0.001) = −0.00125 (no cap for negatives).
	c.old = int64(16 * ms)
	c.update(pp, int64(15*ms))
	require.InDelta(t, 1-0.00125, prob(c), 4*ulp, "old was %v", time.Duration(old))
}

// setState freezes a queue's controller at probability p with qdelay_old
// old and no burst allowance, with no update due for an hour.
func setState(q *Queue[int], p int64, old time.Duration, now aqm.Time) {
	q.ctl.p, q.ctl.old, q.ctl.burst = p, int64(old), 0
	q.ctl.next = now.Add(time.Hour)
}

// fill enqueues n packets of size bytes while no drop can happen (p = 0
// and qdelay_old = 0: safeguard (a)).
func fill(t *testing.T, q *Queue[int], n int, size uint32, now aqm.Time) {
	t.Helper()
	setState(q, 0, 0, now)
	for i := range n {
		require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Payload: -1 - i, Meta: aqm.Meta{Size: size}}, now))
	}
}

// TestSafeguards protects the two safeguards of RFC 8033 §4.1: no early
// drop while qdelay_old < ref/2 and p < 0.2, nor while the backlog before the
// arrival is at most 2·MEAN_PKTSIZE bytes; just outside either, drops occur.
func TestSafeguards(t *testing.T) {
	type step struct {
		name      string
		p         float64
		old       time.Duration
		queued    int // 1500-byte packets queued before the arrivals
		wantDrops bool
	}
	steps := []step{
		{"low delay, p 0.19", 0.19, 7 * ms, 50, false},
		{"low delay, p 0.2", 0.2, 7 * ms, 50, true},
		{"delay at half target, p 0.19", 0.19, 7500 * time.Microsecond, 50, true},
		{"two packets queued, p 1", 1, time.Second, 2, false},
		{"three packets queued, p 1", 1, time.Second, 3, true},
	}
	for i, s := range steps {
		q, err := New[int](Config{Control: Control{DisableECN: true}}, nil)
		require.NoError(t, err)
		now := aqm.Time(time.Second)
		fill(t, q, s.queued, 1500, now)
		setState(q, probCeil(s.p), s.old, now)
		drops := 0
		for j := range 2000 {
			v := q.Enqueue(aqm.Packet[int]{Payload: j, Meta: aqm.Meta{Size: 1500}}, now)
			if v == aqm.DroppedEarly {
				drops++
			} else {
				require.Equal(t, aqm.Enqueued, v)
				q.Dequeue(now) // keep the backlog where it was
			}
		}
		require.Equal(t, s.wantDrops, drops > 0, "step %d (%s): %d drops", i, s.name, drops)
	}
}

// TestECNThreshold protects RFC 8033 §5.1: below mark_ecnth an ECN-capable
// packet picked for a drop is marked CE and queued; at or above it (exactly
// 10% included) it is dropped as overload; Not-ECT is always dropped; with
// DisableECN nothing is marked.
func TestECNThreshold(t *testing.T) {
	type step struct {
		name    string
		cfg     Config
		p       int64
		ecn     aqm.ECN
		want    aqm.Verdict
		wantECN aqm.ECN
	}
	steps := []step{
		{"p 0.05 ECT0", Config{}, probCeil(0.05), aqm.ECT0, aqm.Marked, aqm.CE},
		{"p 0.05 ECT1", Config{}, probCeil(0.05), aqm.ECT1, aqm.Marked, aqm.CE},
		{"p 0.05 CE", Config{}, probCeil(0.05), aqm.CE, aqm.Marked, aqm.CE},
		{"p just below 0.1", Config{}, probCeil(0.1) - 1, aqm.ECT0, aqm.Marked, aqm.CE},
		{"p exactly 0.1", Config{}, probCeil(0.1), aqm.ECT0, aqm.DroppedOverload, 0},
		{"p 0.15 ECT0", Config{}, probCeil(0.15), aqm.ECT0, aqm.DroppedOverload, 0},
		{"p 0.05 Not-ECT", Config{}, probCeil(0.05), aqm.NotECT, aqm.DroppedEarly, 0},
		{"ECN off", Config{Control: Control{DisableECN: true}}, probCeil(0.05), aqm.ECT0, aqm.DroppedEarly, 0},
		{"threshold 0.3", Config{Control: Control{ECNThreshold: 0.3}}, probCeil(0.25), aqm.ECT0, aqm.Marked, aqm.CE},
	}
	for i, s := range steps {
		q, err := New[int](s.cfg, nil)
		require.NoError(t, err)
		now := aqm.Time(time.Second)
		fill(t, q, 10, 1500, now)
		setState(q, s.p, time.Second, now)
		signals := 0
		for j := range 3000 {
			v := q.Enqueue(aqm.Packet[int]{Payload: j, Meta: aqm.Meta{Size: 1500, ECN: s.ecn}}, now)
			if v == aqm.Enqueued {
				q.Dequeue(now)
				continue
			}
			signals++
			require.Equal(t, s.want, v, "step %d (%s)", i, s.name)
			if v == aqm.Marked {
				// The marked packet is the newest; drain to it.
				var last aqm.Packet[int]
				for q.Len() > 0 {
					last, _ = q.Dequeue(now)
				}
				require.Equal(t, s.wantECN, last.ECN)
				require.Equal(t, j, last.Payload)
				fill(t, q, 10, 1500, now)
				setState(q, s.p, time.Second, now)
			}
		}
		require.Positive(t, signals, "step %d (%s)", i, s.name)
	}
}

// TestDerandomizationBounds protects RFC 8033 §5.4 at constant p: after a
// reset the first drop can come no earlier than packet ⌈0.85/p⌉ and comes at
// the latest at packet ⌈8.5/p⌉ (computed here in exact fixed point; the
// table's values are those of the spec notes).
func TestDerandomizationBounds(t *testing.T) {
	table := []struct {
		p              float64
		first, certain int
	}{{0.1, 9, 85}, {0.05, 17, 170}, {0.2, 5, 43}}
	for _, row := range table {
		pf := probCeil(row.p)
		// Exact: the smallest k with k·pf ≥ ceil(0.85·2^48), resp. 8.5·2^48.
		require.Equal(t, row.first, int((accuLow+pf-1)/pf), "p %v", row.p)
		require.Equal(t, row.certain, int((accuHigh+pf-1)/pf), "p %v", row.p)

		q, err := New[int](Config{Control: Control{DisableECN: true, Derandomize: true}, Seed: 3}, nil)
		require.NoError(t, err)
		now := aqm.Time(time.Second)
		fill(t, q, 10, 1500, now)
		setState(q, pf, time.Second, now)
		minGap, maxGap, gap := math.MaxInt, 0, 0
		for j := range 20000 {
			gap++
			if q.Enqueue(aqm.Packet[int]{Payload: j, Meta: aqm.Meta{Size: 1500}}, now) == aqm.DroppedEarly {
				require.Zero(t, q.ctl.accu, "a drop resets the accumulator")
				minGap, maxGap, gap = min(minGap, gap), max(maxGap, gap), 0
			} else {
				q.Dequeue(now)
			}
		}
		require.Equal(t, row.first, minGap, "p %v: earliest drop", row.p)
		require.LessOrEqual(t, maxGap, row.certain, "p %v: latest drop", row.p)
	}
}

// TestDerandomizationForcedDrop protects the certain-drop branch: once accu
// reaches 8.5 the decision is "drop" without a random draw.
func TestDerandomizationForcedDrop(t *testing.T) {
	c, pp := newCtl(t, Config{Control: Control{Derandomize: true}, Seed: 9})
	c.p, c.old = probCeil(0.05), int64(time.Second)
	c.accu = accuHigh - c.p
	before := c.rng
	require.True(t, c.dropEarly(pp, 1500, 1<<20))
	require.Equal(t, before, c.rng, "no random number drawn")
	// Just below 8.5 a draw decides.
	c.accu = accuHigh - c.p - 1
	c.dropEarly(pp, 1500, 1<<20)
	require.NotEqual(t, before, c.rng)
}

// TestMarkResetsAccumulator is the regression test for the marking path that
// skips the derandomization reset (Linux and ns-3 reset accu_prob only on
// drops): after a forced decision turns into a mark, the next packets must
// not all be marked; every gap between marks is at least ⌈0.85/p⌉.
func TestMarkResetsAccumulator(t *testing.T) {
	q, err := New[int](Config{Control: Control{Derandomize: true}, Seed: 5}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	fill(t, q, 10, 1500, now)
	pf := probCeil(0.05)
	setState(q, pf, time.Second, now)
	q.ctl.accu = accuHigh // the next decision is a forced one
	gap, marks := 0, 0
	for j := range 5000 {
		v := q.Enqueue(aqm.Packet[int]{Payload: j, Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, now)
		q.Dequeue(now)
		gap++
		if v == aqm.Marked {
			require.Zero(t, q.ctl.accu)
			if marks > 0 {
				require.GreaterOrEqual(t, gap, 17, "mark %d", marks)
			}
			marks, gap = marks+1, 0
		}
	}
	require.Greater(t, marks, 5000/170)
	require.Less(t, marks, 5000/17+1)
}

// TestAccumulatorResets is the regression test for DPDK's accumulator that
// never resets: it is cleared by a tail drop and whenever p is 0 at a
// decision.
func TestAccumulatorResets(t *testing.T) {
	q, err := New[int](Config{Control: Control{Derandomize: true, DisableECN: true}, LimitPackets: 12}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	fill(t, q, 10, 1500, now)
	setState(q, probCeil(0.01), time.Second, now)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, now)
	require.Equal(t, q.ctl.p, q.ctl.accu)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, now) // 12th packet fills the queue
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, now))
	require.Zero(t, q.ctl.accu, "tail drop resets")
	q.Dequeue(now)
	q.Dequeue(now)
	q.ctl.accu = probOne
	q.ctl.p = 0
	q.ctl.old = int64(time.Second)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, now)
	require.Zero(t, q.ctl.accu, "p == 0 resets")
}

// TestByteMode protects byte mode: a packet of size s sees p·min(s,
// mean)/mean, so at p = 1 a 1500-byte packet is always dropped and a
// 375-byte one about a quarter of the time; without byte mode both always.
func TestByteMode(t *testing.T) {
	for _, bm := range []bool{false, true} {
		q, err := New[int](Config{Control: Control{ByteMode: bm, DisableECN: true}, Seed: 11}, nil)
		require.NoError(t, err)
		now := aqm.Time(time.Second)
		fill(t, q, 10, 1500, now)
		setState(q, probOne, time.Second, now)
		small, big := 0, 0
		const n = 20000
		for j := range n {
			if q.Enqueue(aqm.Packet[int]{Payload: j, Meta: aqm.Meta{Size: 375}}, now) == aqm.DroppedEarly {
				small++
			} else {
				q.Dequeue(now)
			}
			if q.Enqueue(aqm.Packet[int]{Payload: j, Meta: aqm.Meta{Size: 1500}}, now) == aqm.DroppedEarly {
				big++
			} else {
				q.Dequeue(now)
			}
		}
		require.Equal(t, n, big)
		if bm {
			// Binomial(20000, 0.25): σ ≈ 61; allow 5σ.
			require.InDelta(t, n/4, small, 5*61)
		} else {
			require.Equal(t, n, small)
		}
	}
}

// TestRateEstimator protects the departure-rate estimator of RFC 8033 §5.2:
// serving 1500-byte packets every 1.2 ms (1.25 MB/s) with a backlog above
// DQ_THRESHOLD, avg_dq_time converges to the time one 16 KiB cycle takes,
// and the delay estimate is backlog·avg_dq_time/16384.
func TestRateEstimator(t *testing.T) {
	q, err := New[int](Config{Control: Control{RateEstimator: true}, LimitPackets: 10000}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	fill(t, q, 100, 1500, now)
	q.ctl.next = minTime
	for i := range 3000 {
		now = now.Add(1200 * time.Microsecond)
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}}, now)
		q.Dequeue(now)
	}
	d := q.Detail()
	// A cycle starts at one departure and ends at the 11th (11·1500 ≥
	// 16384), spanning 10 gaps of 1.2 ms: 12 ms, exact every time.
	require.Equal(t, 12*ms, d.AvgDequeueTime)
	require.InDelta(t, 16384/0.012, d.DequeueRate, 1e-3)
	// The next update sees the backlog as it is now (PIE's drops have
	// shortened the queue): backlog·0.012/16384 s.
	b := q.Backlog()
	require.Positive(t, b)
	q.Dequeue(d.NextUpdate)
	require.Equal(t, time.Duration(int64(b)*int64(12*ms)/16384), q.Detail().QueueDelay)
}

// TestLazyUpdateTiming protects the update schedule: the first packet
// operation starts the clock, updates fall at t0 + k·T and run before an
// operation at the same instant, and backward time runs none but pulls
// the next update back to one period after the backward reading.
func TestLazyUpdateTiming(t *testing.T) {
	q, err := New[int](Config{}, nil)
	require.NoError(t, err)
	t0 := aqm.Time(5 * time.Second)
	q.Dequeue(t0)
	require.Equal(t, t0.Add(15*ms), q.Detail().NextUpdate)
	q.Dequeue(t0.Add(15*ms - 1))
	require.Zero(t, q.Detail().Updates)
	q.Dequeue(t0.Add(15 * ms))
	require.Equal(t, uint64(1), q.Detail().Updates)
	q.Dequeue(t0.Add(15*ms - 1)) // backwards by 1 ns: the schedule follows
	require.Equal(t, uint64(1), q.Detail().Updates)
	require.Equal(t, t0.Add(30*ms-1), q.Detail().NextUpdate)
	q.Dequeue(t0) // backwards by a period: none runs, the schedule restarts
	require.Equal(t, uint64(1), q.Detail().Updates)
	require.Equal(t, t0.Add(15*ms), q.Detail().NextUpdate)
	q.Dequeue(t0.Add(100 * ms))
	require.Equal(t, uint64(7), q.Detail().Updates)
	require.Equal(t, t0.Add(105*ms), q.Detail().NextUpdate)
}

// TestHugeTimeJumps protects against int64 overflow and unbounded catch-up:
// jumps to the ends of the Time range, with a stalled queue in both delay
// modes and with a rate-estimator queue held just below the target (the slow
// drift the catch-up cannot settle in closed form), finish promptly and
// leave a sane state.
func TestHugeTimeJumps(t *testing.T) {
	for _, rate := range []bool{false, true} {
		q, err := New[int](Config{Control: Control{RateEstimator: rate}, LimitPackets: 100}, nil)
		require.NoError(t, err)
		now := aqm.Time(math.MinInt64 + 1)
		for i := range 50 {
			q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}}, now)
			now += aqm.Time(ms)
		}
		for range 20 {
			q.Dequeue(now)
			now += aqm.Time(ms)
		}
		for _, at := range []aqm.Time{0, math.MaxInt64 / 2, math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64, 1} {
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, at)
			d := q.Detail()
			require.True(t, d.Prob >= 0 && d.Prob <= 1, "%+v", d)
			require.True(t, d.QueueDelay >= 0 && d.QueueDelay <= maxDelay, "%+v", d)
			require.True(t, d.BurstAllowance >= 0 && d.BurstAllowance <= defaultMaxBurst, "%+v", d)
		}
	}
	// Rate estimator with a constant delay just under the target: p
	// creeps down by alpha·1µs/2 per update and cannot settle quickly.
	q, err := New[int](Config{Control: Control{RateEstimator: true}, LimitPackets: 100}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	fill(t, q, 10, 1500, now)
	q.ctl.p, q.ctl.avgDq = probCeil(0.05), uint64(int64(15*ms)-1000)*16384/15000<<avgShift
	q.ctl.old = q.ctl.delayAt(&q.pp, now, false, now, q.backlog)
	require.Less(t, q.ctl.old, int64(15*ms))
	q.ctl.next = now.Add(15 * ms)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500}}, now.Add(1000*time.Hour))
	d := q.Detail()
	require.Equal(t, uint64(1000*time.Hour/(15*ms)), d.Updates)
	require.True(t, d.Prob >= 0 && d.Prob < 0.05)
}
