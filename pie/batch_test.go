package pie

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestBatchMatchesLoop protects the burst path where the kit's Burst check
// cannot look: over random configurations (the kit runs named ones) and on
// the whole controller state, beyond what Detail shows. On random traces
// (bursts of 0 to 300 packets, random sizes and ECN codepoints, overload
// and drain, idle gaps, backward time, readings at the ends of the time
// range) EnqueueBatch and DequeueBatch give exactly the verdicts, packets,
// order, Stats, Detail and controller of the loop of single calls on an
// identically seeded queue.
func TestBatchMatchesLoop(t *testing.T) {
	traces := 60
	if testing.Short() {
		traces = 15
	}
	g := rand.New(rand.NewPCG(14, 1))
	for trace := range traces {
		cfg := randomConfig(g)
		a, err := New[uint64](cfg, nil)
		require.NoError(t, err)
		b, err := New[uint64](cfg, nil)
		require.NoError(t, err)
		now := aqm.Time(time.Second)
		id := uint64(0)
		ps := make([]aqm.Packet[uint64], 300)
		vsA, vsB := make([]aqm.Verdict, 300), make([]aqm.Verdict, 300)
		bufA, bufB := make([]aqm.Packet[uint64], 300), make([]aqm.Packet[uint64], 300)
		enqP := 0.5
		for op := range 500 {
			if op%50 == 0 {
				enqP = []float64{0.3, 0.5, 0.6, 0.8}[g.IntN(4)]
			}
			switch r := g.IntN(1000); {
			case r < 5:
				now = aqm.Time(math.MaxInt64 - int64(g.IntN(2)))
			case r < 10:
				now = aqm.Time(math.MinInt64 + int64(g.IntN(2)))
			case r < 30:
				now = aqm.Time(time.Second) + aqm.Time(op)*aqm.Time(20*time.Millisecond)
			case r < 40:
				now -= aqm.Time(g.IntN(int(30 * time.Millisecond)))
			case r < 200:
				// same instant
			default:
				now = aqm.Time(int64(now) + int64(g.IntN(int(30*time.Millisecond))))
			}
			n := g.IntN(301)
			if g.Float64() < enqP {
				for i := range n {
					id++
					size := uint32(1500)
					if g.IntN(3) == 0 {
						size = uint32(g.IntN(3000))
					}
					ps[i] = aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: size, ECN: aqm.ECN(g.IntN(4))}}
				}
				m := min(n, len(vsA)-g.IntN(3)) // len(vs) may be shorter
				accA := a.EnqueueBatch(ps[:n], vsA[:m], now)
				accB := aqm.EnqueueLoop[uint64](b, ps[:n], vsB[:m], now)
				require.Equal(t, accB, accA, "trace %d op %d: accepted", trace, op)
				require.Equal(t, vsB[:m], vsA[:m], "trace %d op %d: verdicts", trace, op)
			} else {
				gotA := a.DequeueBatch(bufA[:n], now)
				gotB := aqm.DequeueLoop[uint64](b, bufB[:n], now)
				require.Equal(t, gotB, gotA, "trace %d op %d: dequeued", trace, op)
				require.Equal(t, bufB[:gotB], bufA[:gotA], "trace %d op %d: packets", trace, op)
			}
			require.Equal(t, b.Stats(), a.Stats(), "trace %d op %d: stats", trace, op)
			require.Equal(t, b.Detail(), a.Detail(), "trace %d op %d: detail", trace, op)
			require.Equal(t, b.ctl, a.ctl, "trace %d op %d: controller", trace, op)
		}
	}
}

// TestSeeds protects the seeding rule: two queues with a zero Seed draw
// different random streams (and report different seeds), two with the same
// non-zero Seed make identical decisions, and Reconfigure with a zero Seed
// keeps the stream while a new Seed restarts it.
func TestSeeds(t *testing.T) {
	decisions := func(q *Queue[int]) []aqm.Verdict {
		// A saturated queue drops about every other arrival at random.
		q.ctl.p, q.ctl.old, q.ctl.burst = probOne/2, int64(time.Second), 0
		now := aqm.Time(time.Second)
		var vs []aqm.Verdict
		for i := range 200 {
			q.Dequeue(now) // the first call starts the schedule; no update runs
			for q.Len() < 5 {
				q.Enqueue(aqm.Packet[int]{Payload: -1, Meta: aqm.Meta{Size: 1500}}, now)
			}
			q.ctl.p, q.ctl.old, q.ctl.burst = probOne/2, int64(time.Second), 0
			vs = append(vs, q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}}, now))
		}
		return vs
	}
	mk := func(seed uint64) *Queue[int] {
		q, err := New[int](Config{Seed: seed, Control: Control{DisableECN: true}}, nil)
		require.NoError(t, err)
		return q
	}
	a, b := mk(0), mk(0)
	require.NotEqual(t, a.Config().Seed, b.Config().Seed)
	require.NotEqual(t, decisions(a), decisions(b))
	c, d := mk(99), mk(99)
	require.Equal(t, decisions(c), decisions(d))

	// Reconfigure: Seed 0 keeps the stream (and the reported seed), a new
	// seed restarts it.
	e, f := mk(5), mk(5)
	decisions(e)
	decisions(f)
	require.NoError(t, e.Reconfigure(Config{Control: Control{DisableECN: true}}))
	require.Equal(t, uint64(5), e.Config().Seed)
	require.Equal(t, decisions(f), decisions(e))
	require.NoError(t, e.Reconfigure(Config{Control: Control{DisableECN: true}, Seed: 99}))
	require.NoError(t, f.Reconfigure(Config{Control: Control{DisableECN: true}, Seed: 99}))
	require.Equal(t, uint64(99), e.Config().Seed)
	h := mk(5) // the same history, stream kept
	decisions(h)
	decisions(h)
	want := decisions(f)
	require.Equal(t, want, decisions(e))
	require.NotEqual(t, want, decisions(h))
}

// TestConfigForLink protects the link preset: limits sized by the rate's
// buffer rule, at least the default packet limit, everything else default,
// and a valid Config (a zero rate is internal/configcheck's
// TestConfigForLinkZeroRate).
func TestConfigForLink(t *testing.T) {
	for _, rate := range []aqm.Rate{64 * aqm.Kbit, 8 * aqm.Mbit, 100 * aqm.Mbit, 10 * aqm.Gbit} {
		for _, rtt := range []time.Duration{0, 10 * time.Millisecond, 300 * time.Millisecond} {
			c := ConfigForLink(rate, rtt)
			require.NoError(t, c.Validate())
			require.Equal(t, rate.BufferBytes(rtt), c.LimitBytes)
			require.Equal(t, max(rate.BufferPackets(rtt), defaultLimitPackets), c.LimitPackets)
			c.LimitBytes, c.LimitPackets = 0, 0
			require.Equal(t, Config{}, c)
		}
	}
	c := ConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	require.Equal(t, 400_000, c.LimitBytes)
	q, err := New[int](c, nil)
	require.NoError(t, err)
	require.Equal(t, c.LimitBytes, q.Config().LimitBytes)
}

// TestDetailMetrics protects Detail.Metrics: unique lower_snake names and
// values equal to the Detail's fields, and MemoryBytes equal to the ring's
// preallocation (a power of two of packets).
func TestDetailMetrics(t *testing.T) {
	q, err := New[uint64](Config{Seed: 1, LimitPackets: 1000, Control: Control{RateEstimator: true}}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	for range 300 {
		q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500}}, now)
	}
	for range 200 {
		now += aqm.Time(time.Millisecond)
		q.Dequeue(now)
	}
	d := q.Detail()
	require.NotZero(t, d.Prob)
	require.Equal(t, 1024*32, d.MemoryBytes)
	got := map[string]float64{}
	for m := range d.metrics() {
		require.NotContains(t, got, m.Name, "duplicate metric")
		require.Regexp(t, `^[a-z]+(_[a-z]+)*$`, m.Name)
		got[m.Name] = m.Value
	}
	measuring := 0.0
	if d.Measuring {
		measuring = 1
	}
	require.Equal(t, map[string]float64{
		"probability": d.Prob, "delay_seconds": d.QueueDelay.Seconds(),
		"burst_allowance_seconds": d.BurstAllowance.Seconds(), "accumulated_probability": d.AccuProb,
		"average_dequeue_time_seconds":  d.AvgDequeueTime.Seconds(),
		"dequeue_rate_bytes_per_second": d.DequeueRate, "measuring": measuring, "updates": float64(d.Updates),
		"next_update_time_seconds": time.Duration(d.NextUpdate).Seconds(), "memory_bytes": 1024 * 32,
	}, got)
	n := 0
	for range d.metrics() {
		n++
		break // stopping early must not panic
	}
	require.Equal(t, 1, n)
}
