package sfq

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSFQValidateEveryFieldNoMutation protects Validate's contract: every
// bad field is named at once, and Validate leaves its receiver alone.
func TestSFQValidateEveryFieldNoMutation(t *testing.T) {
	bad := Config{LimitPackets: maxLimitPackets + 1, LimitBytes: -1, DepthPackets: -1, Divisor: -1,
		QuantumBytes: -1, PerturbPeriod: math.MinInt64, HeadDrop: true, Seed: 3}
	before := bad
	err := bad.Validate()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, f := range []string{"LimitPackets", "LimitBytes", "DepthPackets", "Divisor", "QuantumBytes", "PerturbPeriod"} {
		assert.Contains(t, err.Error(), "sfq: "+f+" (", f)
	}
	assert.Len(t, strings.Split(err.Error(), "\n"), 6)
	assert.Equal(t, before, bad)
	zero := Config{}
	require.NoError(t, zero.Validate())
	assert.Equal(t, Config{}, zero)
}

// TestSFQZeroSeedIsSecret protects the default key: two SFQs built with a
// zero Seed classify the same flows differently and report different
// seeds, while two with the same non-zero Seed classify identically; and
// Reconfigure keeps the key in use.
func TestSFQZeroSeedIsSecret(t *testing.T) {
	a, err := New[int](Config{}, nil)
	require.NoError(t, err)
	b, err := New[int](Config{}, nil)
	require.NoError(t, err)
	c, err := New[int](Config{Seed: 9}, nil)
	require.NoError(t, err)
	d, err := New[int](Config{Seed: 9}, nil)
	require.NoError(t, err)
	assert.NotEqual(t, a.Config().Seed, b.Config().Seed)
	assert.Equal(t, uint64(9), c.Config().Seed)
	differ := 0
	for h := range uint32(1000) {
		if a.bucket(h) != b.bucket(h) {
			differ++
		}
		require.Equal(t, c.bucket(h), d.bucket(h))
	}
	assert.Greater(t, differ, 900, "zero-seed queues must map flows independently")
	key := a.key
	require.NoError(t, a.Reconfigure(Config{Divisor: 77}))
	assert.Equal(t, key, a.key)
	assert.Equal(t, a.Config().Seed, a.Config().Seed)
	assert.NotZero(t, a.Config().Seed)
}

// TestSFQConfigForLink protects the preset: limits sized by the shared
// buffer rule, every other field at its default, and a valid config (a
// zero rate is internal/configcheck's TestConfigForLinkZeroRate).
func TestSFQConfigForLink(t *testing.T) {
	for _, tc := range []struct {
		rate aqm.Rate
		rtt  time.Duration
	}{{8 * aqm.Mbit, 100 * time.Millisecond}, {aqm.Gbit, 20 * time.Millisecond}, {100 * aqm.Kbit, 0}} {
		c := ConfigForLink(tc.rate, tc.rtt)
		require.NoError(t, c.Validate())
		assert.Equal(t, tc.rate.BufferPackets(tc.rtt), c.LimitPackets)
		assert.Equal(t, tc.rate.BufferBytes(tc.rtt), c.LimitBytes)
		rest := c
		rest.LimitPackets, rest.LimitBytes = 0, 0
		assert.Equal(t, Config{}, rest)
		q, err := New[uint64](c, nil)
		require.NoError(t, err)
		assert.Less(t, q.Detail().MemoryBytes, 64<<20)
	}
	// 8 Mbit/s and 100 ms: 400 kB, about 265 full-size packets.
	c := ConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	assert.Equal(t, 400000, c.LimitBytes)
	assert.Equal(t, 265, c.LimitPackets)
}

// TestSFQPerturbSurvivesFarFutureEnqueue protects the time policy for the
// re-key schedule: one Enqueue at now+2^62 must not park the next re-key
// in the far future. With a 1 s period and light traffic for 60 s after
// the glitch, the key must still be replaced about every second (the old
// code replaced it 0 times), and after alternating extreme readings too.
func TestSFQPerturbSurvivesFarFutureEnqueue(t *testing.T) {
	for _, glitch := range [][]aqm.Time{
		{sfqT0 + 1<<62},
		{math.MaxInt64, math.MinInt64, math.MaxInt64, math.MinInt64 + 1, math.MaxInt64},
	} {
		q, err := New[uint64](Config{PerturbPeriod: time.Second, Seed: 1}, nil)
		require.NoError(t, err)
		now := sfqT0
		q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: 1}}, now)
		for _, g := range glitch {
			q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: 2}}, g)
		}
		before := q.Detail().Perturbations
		sent := 0
		for range 6000 { // 60 s, one packet per 10 ms
			now += aqm.Time(10 * time.Millisecond)
			if q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: uint32(now)}}, now).Accepted() {
				sent++
			}
			for q.Len() > 0 {
				q.Dequeue(now)
			}
		}
		rekeys := q.Detail().Perturbations - before
		assert.Equal(t, 6000, sent)
		assert.GreaterOrEqual(t, rekeys, uint64(58), "re-keys in 60 s after the glitch %v", glitch)
		assert.LessOrEqual(t, rekeys, uint64(60))
		assert.LessOrEqual(t, q.Detail().NextPerturb, now+aqm.Time(time.Second))
	}
}

// TestSFQMatchesReferenceWithGlitches protects the exact model through
// clock glitches: random traces with forward jumps of up to 2^62 ns and
// the returns from them, against the reference (which states the time
// policy on its own).
func TestSFQMatchesReferenceWithGlitches(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 41))
	for range 200 {
		cfg := randomSFQConfig(r)
		cfg.PerturbPeriod = time.Duration(1+r.IntN(50)) * time.Millisecond
		ops := randomSFQTrace(r, 300)
		for i := range ops {
			if r.IntN(40) == 0 {
				j := time.Duration(1) << (20 + r.IntN(43))
				ops[i].dt = j
				if k := i + 1 + r.IntN(5); k < len(ops) {
					ops[k].dt = -j
				}
			}
		}
		runSFQDifferential(t, cfg, ops)
	}
}

// TestSFQDetailMetrics protects the metric names (unique, lower snake
// case) and that each value is the Detail field it names.
func TestSFQDetailMetrics(t *testing.T) {
	q, err := New[uint64](Config{DepthPackets: 2, PerturbPeriod: time.Second, Seed: 1}, nil)
	require.NoError(t, err)
	for i := range 5 {
		q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: uint32(i % 2)}}, sfqT0)
	}
	d := q.Detail()
	got := map[string]float64{}
	for m := range d.metrics() {
		_, dup := got[m.Name]
		require.False(t, dup, m.Name)
		require.Equal(t, strings.ToLower(m.Name), m.Name)
		got[m.Name] = m.Value
	}
	want := map[string]float64{
		"active_flows": float64(d.ActiveFlows), "longest_flow_packets": float64(d.LongestFlowPackets),
		"perturbations": float64(d.Perturbations), "next_perturbation_time_seconds": time.Duration(d.NextPerturb).Seconds(),
		"dropped_depth_packets": float64(d.DroppedDepth), "dropped_overflow_packets": float64(d.DroppedOverflow),
		"memory_bytes": float64(d.MemoryBytes),
	}
	assert.Equal(t, want, got)
	assert.NotZero(t, d.DroppedDepth)
	assert.Positive(t, d.MemoryBytes)
	for range d.metrics() {
		break // stopping early must not panic
	}
}

// TestSFQMemoryBytes protects the reported memory: it grows with the
// packet limit and the divisor as documented, and a large derived flow
// table is never allocated without an explicit limit.
func TestSFQMemoryBytes(t *testing.T) {
	mem := func(c Config) int {
		q, err := New[uint64](c, nil)
		require.NoError(t, err)
		return q.Detail().MemoryBytes
	}
	base := mem(Config{})
	assert.Less(t, base, 64<<10, "the default SFQ is small")
	for _, c := range []Config{{}, {LimitPackets: 1000, Divisor: 1}, {LimitPackets: 5000, Divisor: 1 << 20}, {LimitPackets: 1, Divisor: 7}} {
		d := c.withDefaults()
		slots := min(d.Divisor, d.LimitPackets+1)
		want := (d.LimitPackets+1)*(32+8) + 8*(d.LimitPackets+2) + 4*d.Divisor + 48*slots
		assert.Equal(t, want, mem(c), "%+v: the documented formula for 8-byte payloads", c)
	}
	assert.GreaterOrEqual(t, mem(Config{Divisor: maxDivisor})-base, 4*(maxDivisor-defaultDivisor))
}
