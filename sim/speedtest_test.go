package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSpeedtestMatrixFollowsStudy pins the speedtest scenario to the lab
// study: NDT7 as one BBR flow and iperf3 as one CUBIC flow, 10 s tests,
// HTB on a 1 Gb/s line at 100…1000 Mb/s in steps of 100, burst shaping as
// ceil 1.6 × rate, burst 15 KB, cburst 30 KB (else tc's defaults), an iperf3
// CUBIC cross flow from 5 s before the test to its end, and pfifo, CoDel,
// FQ-CoDel and SFQ with Linux's limits (1000, 1000, 10240, 127); 10 seeds.
// The numbers are typed from the study and the Linux defaults.
func TestSpeedtestMatrixFollowsStudy(t *testing.T) {
	sc, err := LookupScenario("speedtest")
	require.NoError(t, err)
	require.Equal(t, 10, sc.DefaultReps)
	runs, err := sc.Runs(Options{Seed: 1})
	require.NoError(t, err)
	require.Len(t, runs, 2*10*2*2*4)
	limits := map[string]int{"fifo": 1000, "codel": 1000, "fq-codel": 10240, "sfq": 127}
	rates := map[float64]bool{}
	for _, r := range runs {
		c, p := r.Config, r.Params
		require.Equal(t, 1e9, c.RateBps, "the line")
		require.NotNil(t, c.Shaper)
		rate := c.Shaper.RateBps
		rates[rate] = true
		require.Equal(t, limits[r.AQM], r.BufferPackets, r.AQM)
		require.Equal(t, 15*time.Second, c.Duration)
		require.Equal(t, 5*time.Second, c.Warmup, "metrics cover the test only")
		test := c.Flows[0]
		require.Equal(t, "test", test.Group)
		require.Equal(t, 5*time.Second, test.Start)
		require.Equal(t, 1, max(test.Count, 1), "one connection")
		switch p["tool"] {
		case "ndt7":
			require.Equal(t, BBR, test.Kind)
		case "iperf3":
			require.Equal(t, CUBIC, test.Kind)
		default:
			t.Fatalf("tool %q", p["tool"])
		}
		if p["burst"] == "on" {
			require.Equal(t, Shaper{RateBps: rate, CeilBps: 1.6 * rate, BurstBytes: 15360, CBurstBytes: 30720}, *c.Shaper)
		} else {
			require.Equal(t, Shaper{RateBps: rate}, *c.Shaper)
		}
		if p["cross"] == "on" {
			require.Len(t, c.Flows, 2)
			x := c.Flows[1]
			require.Equal(t, FlowSpec{Kind: CUBIC, RTT: test.RTT, Stop: 15 * time.Second, Group: "cross"}, x)
		} else {
			require.Len(t, c.Flows, 1)
		}
	}
	require.Len(t, rates, 10)
	for r := 100e6; r <= 1000e6; r += 100e6 {
		require.True(t, rates[r], "rate %g", r)
	}

	quick, err := sc.Runs(Options{Seed: 1, Quick: true})
	require.NoError(t, err)
	require.Len(t, quick, 2*2*2*2*4)
	require.Equal(t, 3*time.Second, quick[0].Config.Duration)

	old, err := sc.Runs(Options{Seed: 1, Variant: "8flow-cubic"})
	require.NoError(t, err)
	require.Len(t, old, 4*2*4)
	require.Equal(t, 8, old[0].Config.Flows[0].Count)
	require.Equal(t, CUBIC, old[0].Config.Flows[0].Kind)
	require.Nil(t, old[0].Config.Shaper)
}

// TestSpeedtestRunShowsBurstEffect protects the scenario end to end at
// one point of the matrix: at 900 Mb/s an NDT7-like BBR flow over FQ-CoDel
// gets more of the shaped rate with burst shaping than with tc's default
// burst, and the result carries the test's 100 ms bins and RTT samples.
func TestSpeedtestRunShowsBurstEffect(t *testing.T) {
	sc, err := LookupScenario("speedtest")
	require.NoError(t, err)
	runs, err := sc.Runs(Options{Seed: 1, RateBps: 900e6, AQMs: []string{"fq-codel"}, Duration: 3 * time.Second})
	require.NoError(t, err)
	share := map[string]float64{}
	for _, r := range runs {
		if r.Params["tool"] != "ndt7" || r.Params["cross"] != "off" {
			continue
		}
		res, err := r.Execute()
		require.NoError(t, err)
		g := res.Group("test")
		require.Len(t, g.BinsMbps, 30)
		require.NotZero(t, g.RTT.Count)
		require.GreaterOrEqual(t, g.RTT.P50Ms, 20.0)
		share[r.Params["burst"]] = g.GoodputMbps / res.BottleneckMbps
	}
	t.Logf("share of 900 Mb/s: burst off %.3f, on %.3f", share["off"], share["on"])
	require.Greater(t, share["on"], share["off"]+0.03)
}
