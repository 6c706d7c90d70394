package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestAutorateScenario protects the scenario's point on the step trace:
// the shaper fixed at the trace's minimum wastes capacity
// and the one at its mean bloats in the dip, while the autorate-driven
// shaper uses more than the first and queues far less than the second;
// and the controller actually moved the rate (cuts and increases).
func TestAutorateScenario(t *testing.T) {
	sc, err := LookupScenario("autorate")
	require.NoError(t, err)
	runs, err := sc.Runs(Options{Seed: 1, AQMs: []string{"fq-codel+autorate-fast", "fq-codel@mean", "fq-codel@min"}})
	require.NoError(t, err)
	got := map[string]*Result{}
	for _, r := range runs {
		if r.Group != "step-down-up" {
			continue
		}
		res, err := r.Execute()
		require.NoError(t, err)
		got[r.AQM] = res
	}
	require.Len(t, got, 3)
	p95 := func(a string) float64 { return got[a].DelayHistogram("ping").Quantile(0.95).Seconds() }
	auto, mean, lo := got["fq-codel+autorate-fast"], got["fq-codel@mean"], got["fq-codel@min"]
	require.Less(t, lo.Utilization, 0.5, "the minimum wastes")
	require.Greater(t, auto.Utilization, lo.Utilization+0.3)
	require.Greater(t, p95("fq-codel@mean"), 0.3, "the mean bloats")
	require.Less(t, p95("fq-codel+autorate-fast"), p95("fq-codel@mean")/2)
	require.Less(t, mean.Utilization, 1.0)
}

// TestShapedPathConservation protects the scenario's composite queue:
// every packet offered leaves exactly once (through Dequeue, the DropFunc,
// or a refusal), never faster than the shaper's rate, and its counters
// balance as the conformance kit demands of every queue.
func TestShapedPathConservation(t *testing.T) {
	tr, err := StepTrace("flat", 0, RateChange{RateBps: 10e6})
	require.NoError(t, err)
	seen := map[uint64]int{}
	q, err := newShapedPath(Env{BufferPackets: 200, MSS: 1500, Seed: 1, Capacity: tr,
		OnDrop: func(p aqm.Packet[uint64], _ aqm.Verdict) { seen[p.Payload]++ }}, 8e6, nil)
	require.NoError(t, err)
	g := rand.New(rand.NewPCG(1, 2))
	now := epoch
	var out uint64
	first, last := aqm.Time(0), aqm.Time(0)
	for i := range uint64(20000) {
		now += aqm.Time(g.IntN(int(2 * time.Millisecond)))
		if g.IntN(3) > 0 {
			v := q.Enqueue(aqm.Packet[uint64]{Payload: i, Meta: aqm.Meta{Size: 1500, Hash: uint32(g.IntN(8))}}, now)
			if !v.Accepted() {
				seen[i]++
			}
		} else if p, ok := q.Dequeue(now); ok {
			seen[p.Payload]++
			out += uint64(p.Size)
			if first == 0 {
				first = now
			}
			last = now
		} else if d := q.NextDeparture(now); d != 0 {
			require.True(t, d > now || q.fifo.n > 0, "a wake-up in the past with nothing to send")
		}
		st := q.Stats()
		require.Equal(t, st.Enqueued.Packets, st.Dequeued.Packets+st.DroppedQueued.Packets+uint64(st.Len), "step %d", i)
	}
	for q.Len() > 0 {
		now += aqm.Time(time.Millisecond)
		if p, ok := q.Dequeue(now); ok {
			seen[p.Payload]++
		}
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "packet %d", id)
	}
	// 8 Mbit/s plus at most the burst.
	require.LessOrEqual(t, float64(out)*8, 8e6*last.Sub(first).Seconds()+8*4000)
	require.Positive(t, q.fifoDrops.Packets+q.Stats().DroppedOverlimit.Packets)
}

// TestAutorateStarlink protects the fast setting on the Starlink-like
// trace: probe latency p95 under 30 ms while using at least 80% of the
// capacity, where the shaper fixed at the mean bloats and the one at the
// minimum wastes half.
func TestAutorateStarlink(t *testing.T) {
	sc, err := LookupScenario("autorate")
	require.NoError(t, err)
	runs, err := sc.Runs(Options{Seed: 1, AQMs: []string{"fq-codel+autorate-fast", "fq-codel@mean", "fq-codel@min"}})
	require.NoError(t, err)
	got := map[string]*Result{}
	for _, r := range runs {
		if r.Group == "starlink-15s" {
			res, err := r.Execute()
			require.NoError(t, err)
			got[r.AQM] = res
		}
	}
	require.Len(t, got, 3)
	p95 := func(a string) time.Duration { return got[a].DelayHistogram("ping").Quantile(0.95) }
	require.Less(t, p95("fq-codel+autorate-fast"), 30*time.Millisecond)
	require.GreaterOrEqual(t, got["fq-codel+autorate-fast"].Utilization, 0.8)
	require.Greater(t, p95("fq-codel@mean"), 100*time.Millisecond)
	require.Less(t, got["fq-codel@min"].Utilization, 0.6)
}

// TestOraclePath protects the oracle shaper the scenario measures
// controllers against: every 50 ms its rate is 0.9 of the capacity's mean
// over the 50 ms that ended its lag ago.
func TestOraclePath(t *testing.T) {
	tr, err := StepTrace("step", 0, RateChange{RateBps: 40e6}, RateChange{At: time.Second, RateBps: 10e6})
	require.NoError(t, err)
	for _, lag := range []time.Duration{0, 300 * time.Millisecond} {
		q, err := newShapedPath(Env{BufferPackets: 100, MSS: 1500, Seed: 1, Capacity: tr,
			OnDrop: func(aqm.Packet[uint64], aqm.Verdict) {}}, 25e6, nil)
		require.NoError(t, err)
		q.oracle, q.oracleLag = tr, lag
		rateAt := func(d time.Duration) float64 {
			q.pump(epoch.Add(d))
			return q.rate
		}
		require.InDelta(t, 36e6, rateAt(900*time.Millisecond), 1, "lag %v", lag)
		require.InDelta(t, 36e6, rateAt(time.Second+lag), 1, "lag %v: the step is not known yet", lag)
		require.InDelta(t, 9e6, rateAt(time.Second+lag+60*time.Millisecond), 1, "lag %v", lag)
	}
}
