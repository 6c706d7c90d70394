package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPayloadGoodputExcludesHeaders protects the application-goodput
// metrics: payload goodput is the wire goodput scaled by
// (size − headers − the timestamp option)/size,
// both utilizations are against the same capacity, and each group's
// 100 ms bins add up to its goodput.
func TestPayloadGoodputExcludesHeaders(t *testing.T) {
	cfg := Config{RateBps: 2e6, MSS: 576, Duration: 20 * time.Second, Warmup: 5 * time.Second,
		Flows: []FlowSpec{{Kind: Reno, Count: 3, RTT: 40 * time.Millisecond, Group: "tcp"}}}
	r := mustRun(t, cfg, fifoQ(50))
	require.InEpsilon(t, r.GoodputMbps*(576-40-12)/576, r.PayloadGoodputMbps, 1e-9)
	require.InEpsilon(t, r.PayloadGoodputMbps/2, r.PayloadUtilization, 1e-9)
	require.Greater(t, r.Utilization, 0.95)
	require.Less(t, r.PayloadUtilization, r.Utilization)
	g := r.Group("tcp")
	require.Len(t, g.BinsMbps, 150, "15 s of 100 ms bins")
	require.InEpsilon(t, r.PayloadGoodputMbps, g.BinMeanMbps, 0.01)
	require.InEpsilon(t, r.PayloadGoodputMbps, g.GoodputMbps, 1e-9)
	require.NotZero(t, g.RTT.Count, "a named group keeps its RTT samples")
	require.GreaterOrEqual(t, g.RTT.P50Ms, 40.0)
	require.GreaterOrEqual(t, r.DropsWholeRun, r.Drops, "the whole run includes the warmup")
	require.Greater(t, r.DropsWholeRun, r.Drops, "slow start drops during the warmup")
}

// TestGoodputCoVBins protects the fixed-bin CoV: a 1 Mb/s CBR flow of
// 1000-byte packets delivers 12 or 13 packets per 100 ms bin and exactly 125
// per second, so its 1 s CoV is 0 and its 100 ms CoV is that of the 12/13
// alternation.
func TestGoodputCoVBins(t *testing.T) {
	cfg := Config{RateBps: 10e6, Duration: 11 * time.Second, Warmup: time.Second,
		Flows: []FlowSpec{{Kind: CBR, RateBps: 1e6, PacketBytes: 1000, Group: "cbr"}}}
	r := mustRun(t, cfg, fifoQ(100))
	require.InDelta(t, 0, r.GoodputCoV1s, 1e-9)
	// Half the bins hold 12 packets, half 13: sd 0.5 over mean 12.5.
	require.InDelta(t, 0.5/12.5, r.GoodputCoV100ms, 0.005)
	require.Zero(t, r.FlowCoV100ms, "the per-receiver CoV covers long-lived TCP flows only")
	require.InDelta(t, 1.0, r.PayloadGoodputMbps, 1e-3, "a CBR packet is all payload")
	require.Zero(t, r.QueueGrid.Samples, "no grid unless asked")
}

// TestGridStatsAgainstSort protects the fixed-grid queue statistics against
// a direct computation on the sorted samples.
func TestGridStatsAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + rng.IntN(500)
		var counts []uint64
		xs := make([]int, n)
		sum := 0
		for i := range xs {
			xs[i] = rng.IntN(60)
			for len(counts) <= xs[i] {
				counts = append(counts, 0)
			}
			counts[xs[i]]++
			sum += xs[i]
		}
		slices.Sort(xs)
		q := gridStats(counts)
		require.Equal(t, uint64(n), q.Samples)
		require.InDelta(t, float64(sum)/float64(n), q.MeanPackets, 1e-9)
		require.Equal(t, float64(xs[int(math.Ceil(0.99*float64(n)))-1]), q.P99Packets)
		require.Equal(t, xs[n-1], q.MaxPackets)
	}
	require.Equal(t, QueueGridStats{}, gridStats(nil))
}

// TestQueueGridSamples protects the grid's timing and content: a CBR flow
// above the link rate keeps a 30-packet FIFO full, so every sample on the
// 10 ms grid over the 10 s measured period (1001 instants, both ends
// included) sees 29 or 30 packets.
func TestQueueGridSamples(t *testing.T) {
	cfg := Config{RateBps: 1e6, Duration: 12 * time.Second, Warmup: 2 * time.Second, QueueSampleInterval: 10 * time.Millisecond,
		Flows: []FlowSpec{{Kind: CBR, RateBps: 2e6, PacketBytes: 500}}}
	r := mustRun(t, cfg, fifoQ(30))
	require.Equal(t, uint64(1001), r.QueueGrid.Samples)
	require.GreaterOrEqual(t, r.QueueGrid.MeanPackets, 29.0)
	require.Equal(t, 30.0, r.QueueGrid.P99Packets)
	require.Equal(t, 30, r.QueueGrid.MaxPackets)
}

// TestHeaderBytesValidated protects Config.HeaderBytes's rule.
func TestHeaderBytesValidated(t *testing.T) {
	for _, c := range []Config{
		{RateBps: 1e6, Duration: time.Second, HeaderBytes: -1},
		{RateBps: 1e6, Duration: time.Second, MSS: 100, HeaderBytes: 100},
		{RateBps: 1e6, Duration: time.Second, HeaderBytes: DefaultMSS},
	} {
		require.ErrorContains(t, c.normalize(), "HeaderBytes")
	}
	c := Config{RateBps: 1e6, Duration: time.Second, QueueSampleInterval: -1}
	require.ErrorContains(t, c.normalize(), "QueueSampleInterval")
}
