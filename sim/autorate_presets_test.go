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
// fed by probes; the Starlink one is the passive setting with thresholds
// of 8/25/50 ms and increases of up to 15 %, fed by passive RTT alone.
func TestAutorateLinkPresets(t *testing.T) {
	tr, err := LoadTrace(filepath.Join(tracesDir(), "cellular-fading.mahi"))
	require.NoError(t, err)
	fast, cell := autorateConfig(tr, arFast), autorateConfig(tr, arCellular)
	require.Equal(t, 3, cell.DetectionThreshold)
	require.Equal(t, 0.5, cell.Recovery)
	fast.DetectionThreshold, fast.Recovery = cell.DetectionThreshold, cell.Recovery
	require.Equal(t, fast, cell, "otherwise the fast setting")

	pas, star := autorateConfig(tr, arPassive), autorateConfig(tr, arStarlink)
	require.Equal(t, 0.15, star.MaxIncrease)
	require.Equal(t, [3]time.Duration{8 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond},
		[3]time.Duration{star.FullIncreaseBelow, star.DelayThreshold, star.FullCutAbove})
	pas.MaxIncrease, pas.FullIncreaseBelow, pas.DelayThreshold, pas.FullCutAbove = star.MaxIncrease, star.FullIncreaseBelow, star.DelayThreshold, star.FullCutAbove
	require.Equal(t, pas, star, "otherwise the passive setting")
	require.NoError(t, star.Validate())
	require.NoError(t, cell.Validate())

	for name, passive := range map[string]bool{"fq-codel+autorate-cellular": false, "fq-codel+autorate-starlink": true} {
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
