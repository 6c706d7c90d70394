package dualq_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

// TestValidateEveryFieldNoMutation protects Validate's contract: with
// every field bad at once (durations at their extremes too) each is named
// once, a LimitBytes left at zero is not blamed for a bad LimitPackets,
// and Validate leaves its receiver alone.
func TestValidateEveryFieldNoMutation(t *testing.T) {
	bad := dualq.Config{
		Target: math.MaxInt64, Tupdate: math.MinInt64, Alpha: math.NaN(), Beta: math.Inf(1), CouplingFactor: -2,
		StepThreshold: -1, RampMinThreshold: math.MaxInt64, RampRange: -1, ClassicProtectionPercent: -7,
		TimeShift: math.MaxInt64, LimitPackets: 1 << 25, LimitBytes: 1<<52 + 1, MTUBytes: 1<<20 + 1, Seed: 4,
	}
	before := bad
	err := bad.Validate()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	fields := []string{"Target", "Tupdate", "Alpha", "Beta", "CouplingFactor", "StepThreshold",
		"RampMinThreshold", "RampRange", "ClassicProtectionPercent", "TimeShift", "LimitPackets", "LimitBytes", "MTUBytes"}
	for _, f := range fields {
		assert.Contains(t, err.Error(), "dualq: "+f+" (", f)
	}
	assert.Len(t, strings.Split(err.Error(), "\n"), len(fields))
	assert.Equal(t, before.Seed, bad.Seed)
	assert.Equal(t, before.Target, bad.Target)
	assert.True(t, math.IsNaN(bad.Alpha))
	bad.Alpha, before.Alpha = 0, 0
	assert.Equal(t, before, bad)

	err = dualq.Config{LimitPackets: -1}.Validate()
	assert.Contains(t, err.Error(), "LimitPackets")
	assert.NotContains(t, err.Error(), "LimitBytes")
}

// TestConfigEffective protects Config(): the effective configuration with
// every default filled in and the seed in use, kept by a Reconfigure with
// a zero Seed.
func TestConfigEffective(t *testing.T) {
	q, err := dualq.New[int](dualq.Config{}, nil)
	require.NoError(t, err)
	c := q.Config()
	assert.NotZero(t, c.Seed)
	assert.Equal(t, dualq.DefaultLimitPackets, c.LimitPackets)
	assert.Equal(t, dualq.DefaultLimitPackets*2*dualq.DefaultMTUBytes, c.LimitBytes)
	assert.Equal(t, dualq.DefaultTarget, c.Target)
	assert.Equal(t, dualq.DefaultTupdate, c.Tupdate)
	assert.Equal(t, dualq.DefaultAlpha, c.Alpha)
	assert.Equal(t, dualq.DefaultBeta, c.Beta)
	assert.Equal(t, dualq.DefaultCouplingFactor, c.CouplingFactor)
	assert.Equal(t, dualq.DefaultClassicProtectionPercent, c.ClassicProtectionPercent)
	assert.Equal(t, dualq.DefaultMTUBytes, c.MTUBytes)
	require.NoError(t, c.Validate())
	// The effective config builds an equivalent queue.
	q2, err := dualq.New[int](c, nil)
	require.NoError(t, err)
	assert.Equal(t, c, q2.Config())

	require.NoError(t, q.Reconfigure(dualq.Config{LimitPackets: 64}))
	assert.Equal(t, c.Seed, q.Config().Seed)
	assert.Equal(t, 64, q.Config().LimitPackets)
	require.NoError(t, q.Reconfigure(dualq.Config{Seed: 77}))
	assert.Equal(t, uint64(77), q.Config().Seed)
}

// marks runs a fixed trace that keeps p' strictly between 0 and 1 and
// returns the sequence of CE marks, one bool per dequeued packet.
func marks(t *testing.T, seed uint64) []bool {
	q, err := dualq.New[uint64](dualq.Config{Seed: seed, StepThreshold: time.Second}, nil)
	require.NoError(t, err)
	now := t0
	var out []bool
	for i := range 3000 {
		now += aqm.Time(100 * time.Microsecond)
		q.Enqueue(pkt(aqm.ECT1, 1500, uint64(i)), now)
		if i%10 != 0 { // a slowly growing queue
			p, ok := q.Dequeue(now)
			if ok {
				out = append(out, p.ECN == aqm.CE)
			}
		}
	}
	d := q.Detail()
	require.Greater(t, d.ProbL4SCoupled, 0.0)
	return out
}

// TestZeroSeedIsRandom protects the default random stream: two queues
// with a zero Seed make different decisions on the same trace, while two
// with the same non-zero Seed make identical ones.
func TestZeroSeedIsRandom(t *testing.T) {
	assert.Equal(t, marks(t, 5), marks(t, 5))
	a, b := marks(t, 0), marks(t, 0)
	require.Equal(t, len(a), len(b))
	assert.NotEqual(t, a, b)
	assert.Contains(t, a, true)
	assert.Contains(t, a, false)
}

// TestConfigForLink protects the preset: limits from the shared buffer
// rule, every other field at its default, and a valid, small queue (a
// zero rate is internal/configcheck's TestConfigForLinkZeroRate).
func TestConfigForLink(t *testing.T) {
	for _, rate := range []aqm.Rate{64 * aqm.Kbit, 8 * aqm.Mbit, aqm.Gbit, 100 * aqm.Gbit} {
		c := dualq.ConfigForLink(rate, 50*time.Millisecond)
		require.NoError(t, c.Validate())
		assert.Equal(t, rate.BufferPackets(50*time.Millisecond), c.LimitPackets)
		assert.Equal(t, rate.BufferBytes(50*time.Millisecond), c.LimitBytes)
		rest := c
		rest.LimitPackets, rest.LimitBytes = 0, 0
		assert.Equal(t, dualq.Config{}, rest)
		q, err := dualq.New[uint64](c, nil)
		require.NoError(t, err)
		assert.LessOrEqual(t, q.Detail().MemoryBytes, 2*c.LimitPackets*32)
	}
	c := dualq.ConfigForLink(8*aqm.Mbit, 0) // 100 ms: 400 kB
	assert.Equal(t, 400000, c.LimitBytes)
	assert.Equal(t, 265, c.LimitPackets)
}

// TestClockGlitchRecovery protects the time policy for the PI schedule.
// A backlog sees one reading far in the future (a Dequeue at now+2^62, or
// alternating extreme readings), which pins p' at 100 %; back at normal
// time, light Classic traffic (3 packets every 10 ms) must be delivered
// as on a fresh queue after at most 1 s. The old schedule stayed parked
// 2^62 ns ahead, so p' never moved again and a third of the packets were
// dropped forever.
func TestClockGlitchRecovery(t *testing.T) {
	run := func(glitch []aqm.Time) (delivered, late int, q *dualq.Queue[uint64]) {
		q, err := dualq.New[uint64](dualq.Config{Seed: 1}, nil)
		require.NoError(t, err)
		now := t0
		for i := range 20 {
			q.Enqueue(pkt(aqm.NotECT, 1500, uint64(i)), now)
		}
		for _, g := range glitch {
			q.Dequeue(g)
			q.Enqueue(pkt(aqm.NotECT, 1500, 0), g)
		}
		if len(glitch) > 0 {
			require.Equal(t, 1.0, q.Detail().Prob, "the glitch pins p'")
		}
		for q.Len() > 0 {
			q.Dequeue(now)
		}
		for tick := range 1000 { // 10 s
			now += aqm.Time(10 * time.Millisecond)
			for range 3 {
				q.Enqueue(pkt(aqm.NotECT, 1500, 1), now)
			}
			for {
				if _, ok := q.Dequeue(now); !ok {
					break
				}
				delivered++
				if tick >= 100 {
					late++
				}
			}
		}
		return delivered, late, q
	}
	_, controlLate, _ := run(nil)
	require.Equal(t, 2700, controlLate)
	for _, g := range [][]aqm.Time{
		{t0 + 1<<62},
		{math.MaxInt64, math.MinInt64, math.MaxInt64, math.MinInt64, math.MaxInt64},
	} {
		_, late, q := run(g)
		assert.Equal(t, controlLate, late, "after 1 s of recovery, glitch %v", g)
		d := q.Detail()
		assert.Zero(t, d.Prob)
		assert.LessOrEqual(t, d.NextUpdate, t0+aqm.Time(11*time.Second))
	}
}

// TestBatchMatchesLoop protects the burst path: EnqueueBatch and
// DequeueBatch give exactly the outcome of the loops of single calls
// (verdicts, packets, marks, drops, Stats, Detail) on random bursts of 0
// to 300 packets in every conformance mode.
func TestBatchMatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	rounds := 20
	if testing.Short() {
		rounds = 6
	}
	for _, m := range conformanceModes {
		for range rounds {
			cfg := m.cfg
			cfg.LimitPackets = 1 + r.IntN(600)
			cfg.Seed = r.Uint64() | 1
			var da, db []aqm.Packet[uint64]
			a, err := dualq.New(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { da = append(da, p) })
			require.NoError(t, err)
			b, err := dualq.New(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { db = append(db, p) })
			require.NoError(t, err)
			now := t0
			var seq uint64
			for range 30 {
				now += aqm.Time(r.IntN(3)) * aqm.Time(r.IntN(20)) * aqm.Time(time.Millisecond)
				n := r.IntN(301)
				ps := make([]aqm.Packet[uint64], n)
				for i := range ps {
					seq++
					ps[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: uint32(r.IntN(2000)), ECN: aqm.ECN(r.IntN(256))}}
				}
				nv := n
				if r.IntN(4) == 0 {
					nv = r.IntN(n + 1)
				}
				va, vb := make([]aqm.Verdict, nv), make([]aqm.Verdict, nv)
				require.Equal(t, aqm.EnqueueLoop(a, ps, va, now), b.EnqueueBatch(ps, vb, now))
				require.Equal(t, va, vb)
				k := r.IntN(301)
				oa, ob := make([]aqm.Packet[uint64], k), make([]aqm.Packet[uint64], k)
				require.Equal(t, aqm.DequeueLoop(a, oa, now), b.DequeueBatch(ob, now))
				require.Equal(t, oa, ob)
				require.True(t, slices.Equal(da, db))
				require.Equal(t, a.Stats(), b.Stats())
				require.Equal(t, a.Detail(), b.Detail())
			}
		}
	}
}

// TestDetailMetrics protects the metric names (unique, lower snake case)
// and that each value is the Detail field it names.
func TestDetailMetrics(t *testing.T) {
	q, err := dualq.New[uint64](dualq.Config{Seed: 1}, nil)
	require.NoError(t, err)
	now := t0
	for i := range 50 {
		now += aqm.Time(time.Millisecond)
		q.Enqueue(pkt(aqm.ECN(i%3), 1000, uint64(i)), now)
	}
	q.Dequeue(now)
	d := q.Detail()
	got := map[string]float64{}
	for m := range d.Metrics() {
		_, dup := got[m.Name]
		require.False(t, dup, m.Name)
		require.Equal(t, strings.ToLower(m.Name), m.Name)
		got[m.Name] = m.Value
	}
	want := map[string]float64{
		"base_probability": d.Prob, "classic_probability": d.ProbClassic, "l4s_coupled_probability": d.ProbL4SCoupled,
		"overloaded": 0, "classic_delay_seconds": d.DelayClassic.Seconds(), "l4s_delay_seconds": d.DelayL4S.Seconds(),
		"classic_backlog_packets": float64(d.PacketsClassic), "l4s_backlog_packets": float64(d.PacketsL4S),
		"classic_backlog_bytes": float64(d.BytesClassic), "l4s_backlog_bytes": float64(d.BytesL4S),
		"max_backlog_packets": float64(d.MaxPackets), "marked_step_packets": float64(d.MarkedStep),
		"wrr_credit": float64(d.Credit), "max_memory_used_bytes": float64(d.MaxMemoryUsed),
		"memory_limit_bytes": float64(d.MemoryLimit), "updates": float64(d.Updates),
		"next_update_time_seconds": time.Duration(d.NextUpdate).Seconds(), "memory_bytes": float64(d.MemoryBytes),
	}
	assert.Equal(t, want, got)
	assert.Positive(t, d.Prob)
	assert.Positive(t, d.DelayClassic)
	assert.Equal(t, 2*dualq.DefaultLimitPackets*32, d.MemoryBytes)
	for range d.Metrics() {
		break // stopping early must not panic
	}
}

// TestBatchNoAllocs protects the burst path from allocating.
func TestBatchNoAllocs(t *testing.T) {
	q, err := dualq.New[uint64](dualq.Config{Seed: 1}, nil)
	require.NoError(t, err)
	ps := make([]aqm.Packet[uint64], 32)
	vs := make([]aqm.Verdict, 32)
	out := make([]aqm.Packet[uint64], 32)
	for i := range ps {
		ps[i] = pkt(aqm.ECN(i%3), 1500, uint64(i))
	}
	now := t0
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		now += aqm.Time(time.Millisecond)
		q.EnqueueBatch(ps, vs, now)
		q.DequeueBatch(out, now)
	}))
}

// TestReconfigureShorterTupdate protects the schedule across Reconfigure:
// a shorter Tupdate pulls an update scheduled further ahead back to one new
// Tupdate from the next call, and a longer one keeps the schedule.
func TestReconfigureShorterTupdate(t *testing.T) {
	q, err := dualq.New[uint64](dualq.Config{Tupdate: time.Second, Seed: 1}, nil)
	require.NoError(t, err)
	q.Enqueue(pkt(aqm.ECT0, 100, 1), t0)
	require.Equal(t, t0+aqm.Time(time.Second), q.Detail().NextUpdate)
	require.NoError(t, q.Reconfigure(dualq.Config{Tupdate: 2 * time.Second, Seed: 1}))
	q.Enqueue(pkt(aqm.ECT0, 100, 2), t0+1)
	assert.Equal(t, t0+aqm.Time(time.Second), q.Detail().NextUpdate, "a longer Tupdate keeps the schedule")
	require.NoError(t, q.Reconfigure(dualq.Config{Tupdate: time.Millisecond, Seed: 1}))
	now := t0 + aqm.Time(2*time.Millisecond)
	q.Enqueue(pkt(aqm.ECT0, 100, 3), now)
	assert.Equal(t, now+aqm.Time(time.Millisecond), q.Detail().NextUpdate)
	before := q.Detail().Updates
	q.Dequeue(now + aqm.Time(5*time.Millisecond))
	assert.Equal(t, before+5, q.Detail().Updates, "updates run every new Tupdate")
}
