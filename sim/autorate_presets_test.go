package sim

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestAutorateLinkPresets protects the recommended settings: the cellular
// one is the fast setting with 3 delayed samples of 6 and Recovery 0.5,
// fed by probes; the mmWave one is the fast setting with 3 delayed
// samples of 6 and no cut to the achieved rate, fed by probes; the
// Starlink one is the passive setting with thresholds of 8/25/50 ms and
// increases of up to 15 %, fed by passive RTT alone.
func TestAutorateLinkPresets(t *testing.T) {
	tr, err := LoadTrace(filepath.Join(tracesDir(), "cellular-fading.mahi"))
	require.NoError(t, err)
	fast, cell := autorateConfig(tr, arFast), autorateConfig(tr, arCellular)
	require.Equal(t, 3, cell.DetectionThreshold)
	require.Equal(t, 0.5, cell.Recovery)
	fast.DetectionThreshold, fast.Recovery = cell.DetectionThreshold, cell.Recovery
	require.Equal(t, fast, cell, "otherwise the fast setting")

	fast, mm := autorateConfig(tr, arFast), autorateConfig(tr, arMmwave)
	require.Equal(t, 3, mm.DetectionThreshold)
	require.Zero(t, mm.AchievedCut)
	require.Zero(t, mm.Recovery)
	fast.DetectionThreshold, fast.AchievedCut = mm.DetectionThreshold, mm.AchievedCut
	require.Equal(t, fast, mm, "otherwise the fast setting")
	require.NoError(t, mm.Validate())

	pas, star := autorateConfig(tr, arPassive), autorateConfig(tr, arStarlink)
	require.Equal(t, 0.15, star.MaxIncrease)
	require.Equal(t, [3]time.Duration{8 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond},
		[3]time.Duration{star.FullIncreaseBelow, star.DelayThreshold, star.FullCutAbove})
	pas.MaxIncrease, pas.FullIncreaseBelow, pas.DelayThreshold, pas.FullCutAbove = star.MaxIncrease, star.FullIncreaseBelow, star.DelayThreshold, star.FullCutAbove
	require.Equal(t, pas, star, "otherwise the passive setting")
	require.NoError(t, star.Validate())
	require.NoError(t, cell.Validate())

	for name, passive := range map[string]bool{"fq-codel+autorate-cellular": false, "fq-codel+autorate-mmwave": false, "fq-codel+autorate-starlink": true} {
		a, err := LookupAQM(name)
		require.NoError(t, err)
		q, err := a.New(Env{Capacity: tr, BufferPackets: 100, MSS: DefaultMSS, Seed: 1, OnDrop: func(aqm.Packet[uint64], aqm.Verdict) {}})
		require.NoError(t, err)
		p := q.(*shapedPath)
		require.Equal(t, passive, p.passive != nil, name)
		require.True(t, p.wanRTT, name)
	}
}

// TestCellularPreset protects the cellular setting on the real Verizon LTE
// uplink trace (seed 1): at least 0.85 of the oracle's utilisation with a
// ping p99 within 1.2 times the oracle's plus 10 ms, and ahead of
// cake-autorate's defaults on both utilisation and p99.
func TestCellularPreset(t *testing.T) {
	file := filepath.Join(realTraces(t), "Verizon-LTE-short.up")
	got := runAutorate(t, file, "fq-codel+autorate-cellular", "fq-codel+cake-autorate-v3")
	cell, cake := got["fq-codel+autorate-cellular"], got["fq-codel+cake-autorate-v3"]
	requireNearOracle(t, cell, got["fq-codel@oracle-300ms"])
	require.Greater(t, cell.Utilization, cake.Utilization)
	require.Less(t, cell.Ping.P99Ms, cake.Ping.P99Ms)
}

// TestMmwavePreset protects the mmWave setting on the real Verizon mmWave
// drive, whose outages of a whole second set every setting's ping p99:
// over seeds 1 to 3, at least 0.85 of the oracle's mean utilisation with a
// mean p99 within 1.2 times the oracle's plus 10 ms, and a mean p99 within
// 10 ms of cake-autorate's defaults at a utilisation at least 20 points
// higher (the cellular setting's p99 is 78 ms above theirs).
func TestMmwavePreset(t *testing.T) {
	if testing.Short() {
		t.Skip("three seeds of a 100 s drive: about 30 s")
	}
	file := filepath.Join(realTraces(t), "5gophers-drive1-verizon-mmwave.rate")
	rows := []string{"fq-codel+autorate-mmwave", "fq-codel+cake-autorate-v3", "fq-codel@oracle-300ms"}
	util, p99 := map[string]float64{}, map[string]float64{}
	for seed := uint64(1); seed <= 3; seed++ {
		for a, r := range runAutorateSeed(t, file, seed, rows...) {
			util[a] += r.Utilization / 3
			p99[a] += r.Ping.P99Ms / 3
		}
	}
	mm, cake, oracle := rows[0], rows[1], rows[2]
	require.GreaterOrEqual(t, util[mm], 0.85*util[oracle])
	require.LessOrEqual(t, p99[mm], 1.2*p99[oracle]+10)
	require.Greater(t, util[mm], util[cake]+0.2)
	require.LessOrEqual(t, p99[mm], p99[cake]+10)
}
