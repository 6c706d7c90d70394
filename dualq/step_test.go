package dualq_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

const t0 = aqm.Time(time.Second)

func ms(n float64) aqm.Time { return aqm.Time(n * float64(time.Millisecond)) }

func pkt(ecn aqm.ECN, size uint32, id uint64) aqm.Packet[uint64] {
	return aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: size, ECN: ecn}}
}

// TestPIUpdateTable protects the PI2 update and the coupling: at every
// update p' follows p += α(d−τ) + β(d−d_prev) on the head delay, and
// p_C = (p_CL/k)^2 = p'^2, until the overload threshold p' = 1/k.
func TestPIUpdateTable(t *testing.T) {
	q, err := dualq.New[uint64](dualq.Config{}, nil)
	require.NoError(t, err)
	// One Classic packet stays at the head from t0 on; later arrivals go
	// behind it, so the head delay at the n-th update (t0 + n·16 ms) is n·16 ms.
	require.Equal(t, aqm.Enqueued, q.Enqueue(pkt(aqm.ECT0, 1500, 0), t0))
	type step struct {
		n    int     // update number
		want float64 // p' after it, derived by hand (α = 0.16, β = 3.2, τ = 15 ms)
	}
	// n=1: d=16ms, prev=0:     0.16·0.001 + 3.2·0.016            = 0.05136
	// n=2: d=32ms, prev=16ms:  0.05136 + 0.16·0.017 + 3.2·0.016  = 0.10528
	// n=3: d=48ms:             0.10528 + 0.16·0.033 + 0.0512     = 0.16176
	// n=4: d=64ms:             0.16176 + 0.16·0.049 + 0.0512     = 0.2208
	hand := []step{{1, 0.05136}, {2, 0.10528}, {3, 0.16176}, {4, 0.2208}}
	p, prev := 0.0, 0.0
	for n := 1; n <= 12; n++ {
		now := t0 + aqm.Time(n)*ms(16)
		require.Equal(t, aqm.Enqueued, q.Enqueue(pkt(aqm.ECT0, 1500, uint64(n)), now), "step %d", n)
		d := float64(n) * 0.016
		p = math.Min(1, math.Max(0, p+0.16*(d-0.015)+3.2*(d-prev)))
		prev = d
		if n <= len(hand) {
			require.InDelta(t, hand[n-1].want, p, 1e-12, "step %d: test's own formula", n)
		}
		got := q.Detail()
		assert.InDelta(t, p, got.Prob, 1e-6, "step %d: p'", n)
		assert.InDelta(t, p*p, got.ProbClassic, 1e-6, "step %d: p_C = p'^2", n)
		assert.InDelta(t, math.Min(1, 2*p), got.ProbL4SCoupled, 1e-6, "step %d: p_CL = k·p'", n)
		if got.ProbL4SCoupled < 1 {
			assert.InDelta(t, math.Pow(got.ProbL4SCoupled/2, 2), got.ProbClassic, 1.0/(1<<30), "step %d: p_C = (p_CL/k)^2", n)
		}
		assert.Equal(t, p >= 0.5, got.Overloaded, "step %d: overload at p' ≥ 1/k", n)
		assert.Equal(t, uint64(n), got.Updates, "step %d", n)
	}
}

// TestPCoupledEveryUpdate protects p_C = (p_CL/k)^2 at every update for
// several k and random delay histories (integer rounding only: p_C is
// derived from the 2^32-scaled p' by one multiply).
func TestPCoupledEveryUpdate(t *testing.T) {
	for _, k := range []int{1, 2, 3, 8} {
		q, err := dualq.New[uint64](dualq.Config{CouplingFactor: k, Alpha: 0.5, Beta: 2}, nil)
		require.NoError(t, err)
		now := t0
		q.Enqueue(pkt(aqm.ECT0, 1500, 0), now)
		for i := range 400 {
			now += ms(16)
			// Alternate growth and drains so p' rises and falls.
			if i%37 < 20 {
				q.Enqueue(pkt(aqm.ECT0, 1500, uint64(i)), now)
			} else {
				q.Dequeue(now)
				q.Enqueue(pkt(aqm.ECT1, 1500, uint64(i)), now)
			}
			d := q.Detail()
			raw := float64(d.ProbRaw) / (1 << 32)
			require.InDelta(t, raw*raw, d.ProbClassic, 1.0/(1<<31), "k=%d update %d", k, i)
			if d.ProbL4SCoupled < 1 {
				require.InDelta(t, math.Pow(d.ProbL4SCoupled/float64(k), 2), d.ProbClassic, 1.0/(1<<30), "k=%d update %d", k, i)
			}
			require.Equal(t, float64(k)*d.Prob >= 1, d.Overloaded, "k=%d update %d", k, i)
		}
	}
}

// TestStepThreshold protects the native L4S step: strictly above 1 ms of
// sojourn an L4S packet is marked (and counted as a step mark), at exactly
// 1 ms it is not; Classic packets never see the step.
func TestStepThreshold(t *testing.T) {
	steps := []struct {
		ecn     aqm.ECN
		sojourn time.Duration
		want    aqm.ECN
	}{
		{aqm.ECT1, 0, aqm.ECT1},
		{aqm.ECT1, time.Millisecond - 1, aqm.ECT1},
		{aqm.ECT1, time.Millisecond, aqm.ECT1},
		{aqm.ECT1, time.Millisecond + 1, aqm.CE},
		{aqm.ECT1, 5 * time.Millisecond, aqm.CE},
		{aqm.CE, 2 * time.Millisecond, aqm.CE},
		{aqm.ECT0, 10 * time.Millisecond, aqm.ECT0}, // Classic: no step
	}
	for i, s := range steps {
		q, err := dualq.New[uint64](dualq.Config{}, nil)
		require.NoError(t, err)
		q.Enqueue(pkt(s.ecn, 1500, 1), t0)
		p, ok := q.Dequeue(t0.Add(s.sojourn))
		require.True(t, ok, "step %d", i)
		assert.Equal(t, s.want, p.ECN, "step %d", i)
		wantStep := uint64(0)
		if s.want == aqm.CE {
			wantStep = 1
		}
		assert.Equal(t, wantStep, q.Detail().MarkedStep, "step %d", i)
	}
}

// TestRampThreshold protects the optional RFC 9332 ramp: 0 at or below
// minTh (800 µs), 1 at or above maxTh (1.2 ms), and nothing while the L4S
// queue holds only the dequeued packet (Th_len = 1).
func TestRampThreshold(t *testing.T) {
	steps := []struct {
		sojourn time.Duration
		alone   bool
		want    aqm.ECN
	}{
		{800 * time.Microsecond, false, aqm.ECT1},
		{1200 * time.Microsecond, false, aqm.CE},
		{5 * time.Millisecond, false, aqm.CE},
		{5 * time.Millisecond, true, aqm.ECT1}, // Th_len: a lone packet is never ramp-marked
	}
	for i, s := range steps {
		q, err := dualq.New[uint64](dualq.Config{Ramp: true}, nil)
		require.NoError(t, err)
		q.Enqueue(pkt(aqm.ECT1, 100, 1), t0)
		if !s.alone {
			q.Enqueue(pkt(aqm.ECT1, 100, 2), t0)
		}
		p, ok := q.Dequeue(t0.Add(s.sojourn))
		require.True(t, ok)
		assert.Equal(t, s.want, p.ECN, "step %d", i)
	}
	// In the middle of the ramp (1 ms = minTh + range/2) half the packets
	// are marked.
	q, err := dualq.New[uint64](dualq.Config{Ramp: true, Seed: 7}, nil)
	require.NoError(t, err)
	const n = 20000
	marks := 0
	for i := range n {
		q.Enqueue(pkt(aqm.ECT1, 100, uint64(2*i)), t0)
		q.Enqueue(pkt(aqm.ECT1, 100, uint64(2*i+1)), t0)
		for range 2 {
			if p, _ := q.Dequeue(t0 + ms(1)); p.ECN == aqm.CE && p.Payload%2 == 0 {
				marks++
			}
		}
	}
	assert.InDelta(t, 0.5, float64(marks)/n, 4*math.Sqrt(0.25/n))
}

// TestClassification protects the classifier: ECT(1) and CE go to L4S,
// Not-ECT and ECT(0) to Classic; with AnyECTToL4S every ECN-capable
// codepoint goes to L4S. (A known public port sent ECT(0) to L4S.)
func TestClassification(t *testing.T) {
	for _, any := range []bool{false, true} {
		for _, s := range []struct {
			ecn   aqm.ECN
			l4s   bool
			l4sAE bool
		}{{aqm.NotECT, false, false}, {aqm.ECT0, false, true}, {aqm.ECT1, true, true}, {aqm.CE, true, true}, {aqm.ECT1 | 0xf0, true, true}} {
			q, err := dualq.New[uint64](dualq.Config{AnyECTToL4S: any}, nil)
			require.NoError(t, err)
			q.Enqueue(pkt(s.ecn, 100, 1), t0)
			want := s.l4s
			if any {
				want = s.l4sAE
			}
			d := q.Detail()
			assert.Equal(t, want, d.PacketsL4S == 1, "any=%v ecn=%#x", any, uint8(s.ecn))
			assert.Equal(t, !want, d.PacketsClassic == 1, "any=%v ecn=%#x", any, uint8(s.ecn))
		}
	}
}

// servicePattern fills both queues with n equal packets at one instant and
// returns the order in which Dequeue serves them, as a string of L and C.
func servicePattern(t *testing.T, cfg dualq.Config, size uint32, n int) string {
	t.Helper()
	cfg.StepThreshold = 10 * time.Second // no marks: service order only
	q, err := dualq.New[uint64](cfg, nil)
	require.NoError(t, err)
	for i := range n {
		q.Enqueue(pkt(aqm.ECT1, size, uint64(i)), t0)
		q.Enqueue(pkt(aqm.NotECT, size, uint64(i)), t0)
	}
	var b strings.Builder
	for range n {
		p, ok := q.Dequeue(t0)
		require.True(t, ok)
		if p.ECN == aqm.ECT1 {
			b.WriteByte('L')
		} else {
			b.WriteByte('C')
		}
	}
	return b.String()
}

// TestSchedulerPattern protects the WRR service pattern. The credit starts
// at MTU·(wc−wl), each L packet served while C waits adds wc·size, each C
// packet served while L waits subtracts wl·size, and L is served while the
// credit is ≤ 0. So the byte shares are wl:wc, and for equal packets:
func TestSchedulerPattern(t *testing.T) {
	steps := []struct {
		name string
		cfg  dualq.Config
		size uint32
		want string
	}{
		// wc=10: credit −120000; nine L (+15000 each) reach +15000, one C
		// (−135000) returns to −120000: 9:1, as the 90:10 weights say.
		{"default", dualq.Config{}, 1500, strings.Repeat("LLLLLLLLLC", 4)},
		// 1000-byte packets: −120000 + 13·10000 = +10000 after 13 L; then
		// C (−90000) → −80000, nine L → +10000, C → … : 13 L, then 9:1.
		{"default-1000B", dualq.Config{}, 1000, "LLLLLLLLLLLLLC" + strings.Repeat("LLLLLLLLLC", 2) + "LLLLLL"},
		// wc=50: credit 0, L (+75000), C (−75000): strict alternation.
		{"50%", dualq.Config{ClassicProtectionPercent: 50}, 1500, strings.Repeat("LC", 20)},
		// wc=25: credit −75000; two L (+37500 each) reach 0, a third
		// reaches +37500, one C (−112500) returns to −75000: 3:1.
		{"25%", dualq.Config{ClassicProtectionPercent: 25}, 1500, strings.Repeat("LLLC", 10)},
		// wc=100: credit +150000 and C costs nothing: Classic first.
		{"100%", dualq.Config{ClassicProtectionPercent: 100}, 1500, strings.Repeat("C", 40)},
		// wc=0: credit −150000 and L earns nothing: strict L4S priority.
		{"0%", dualq.Config{ClassicProtectionPercent: dualq.ClassicProtectionNone}, 1500, strings.Repeat("L", 40)},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			assert.Equal(t, s.want, servicePattern(t, s.cfg, s.size, 40))
		})
	}
}

// TestTimeShiftedFIFO protects the optional scheduler: the L4S head is
// served unless the Classic head is at least TimeShift older.
func TestTimeShiftedFIFO(t *testing.T) {
	q, err := dualq.New[uint64](dualq.Config{TimeShiftedFIFO: true, TimeShift: 10 * time.Millisecond, StepThreshold: time.Second}, nil)
	require.NoError(t, err)
	q.Enqueue(pkt(aqm.NotECT, 100, 1), t0)        // C at 0
	q.Enqueue(pkt(aqm.ECT1, 100, 2), t0+ms(5))    // L at 5 ms: 5 ms younger, within the shift
	q.Enqueue(pkt(aqm.ECT1, 100, 3), t0+ms(10))   // L at 10 ms: exactly the shift younger
	q.Enqueue(pkt(aqm.ECT1, 100, 4), t0+ms(10.5)) // later L
	var got []uint64
	for {
		p, ok := q.Dequeue(t0 + ms(11))
		if !ok {
			break
		}
		got = append(got, p.Payload)
	}
	// L enqueued at 5 ms < 0 + 10 ms goes first; the L enqueued at 10 ms is
	// not < 0 + 10 ms, so C goes next.
	assert.Equal(t, []uint64{2, 1, 3, 4}, got)
}
