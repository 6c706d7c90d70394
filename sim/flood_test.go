package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFloodScenarioGuard protects the flood scenario and what it shows: a
// random-port flood at twice the link's rate starves the CUBIC upload and
// delays the probe under the fair queues without their flood guard, and
// with it the probe's p99 stays within 30 ms of the base RTT with under 5 %
// loss and the upload keeps a quarter of the link; the per-packet rehash
// really gives the flood many hashes (else the unguarded queues would not
// suffer).
func TestFloodScenarioGuard(t *testing.T) {
	for _, unguarded := range []bool{false, true} {
		variant := ""
		if unguarded {
			variant = "unguarded"
		}
		runs, err := floodScenario.Runs(Options{Seed: 1, Duration: 15 * time.Second, Variant: variant, AQMs: []string{"fq-codel", "cake"}})
		require.NoError(t, err)
		for _, r := range runs {
			if !r.Flood.RandomPorts {
				continue
			}
			res, err := r.Execute()
			require.NoError(t, err)
			var lost uint64
			for _, f := range res.Flows {
				if f.Group == "probe" {
					lost = f.Drops
				}
			}
			loss := float64(lost) / float64(lost+res.Ping.Count)
			tcp := res.GroupGoodputMbps("tcp")
			t.Logf("%s %s: probe p99 %.1f ms, loss %.3f, tcp %.2f Mb/s", r.AQM, r.Group, res.Ping.P99Ms, loss, tcp)
			if unguarded {
				require.Less(t, tcp, 5.0, r.AQM)
				continue
			}
			require.Less(t, res.Ping.P99Ms-20, 30.0, r.AQM)
			require.Less(t, loss, 0.05, r.AQM)
			require.Greater(t, tcp, 12.5, r.AQM)
		}
	}
}

// TestFloodLabPortsProbe protects the probe under a flood whose random
// ports come from the lab's 64512 source ports, so that flood hashes recur
// within a bucket: no flood hash may take the probe's bucket from it, in
// any guarded fair queue, and a probe that starts 2 s into the flood gets
// its bucket, so the probe loses under 1 % and the upload keeps a quarter
// of the link.
func TestFloodLabPortsProbe(t *testing.T) {
	for _, late := range []bool{false, true} {
		for seed := uint64(1); seed <= 2; seed++ {
			testFloodLabPorts(t, seed, late)
		}
	}
}

func testFloodLabPorts(t *testing.T, seed uint64, late bool) {
	runs, err := floodScenario.Runs(Options{Seed: seed, Duration: 20 * time.Second, Variant: "ports",
		AQMs: []string{"fq-codel", "fq-cobalt", "fq-pie", "cake"}})
	require.NoError(t, err)
	for _, r := range runs {
		if !r.Flood.RandomPorts {
			continue
		}
		require.Equal(t, floodLabPorts, r.Flood.Ports)
		if late {
			r.Config.Flows = append([]FlowSpec(nil), r.Config.Flows...)
			r.Config.Flows[1].Start = floodStart + 2*time.Second
		}
		res, err := r.Execute()
		require.NoError(t, err)
		var lost uint64
		for _, f := range res.Flows {
			if f.Group == "probe" {
				lost = f.Drops
			}
		}
		loss := float64(lost) / float64(lost+res.Ping.Count)
		tcp := res.GroupGoodputMbps("tcp")
		t.Logf("seed %d late %v %s %s: probe p50 %.1f p99 %.1f ms, loss %.4f (%d), tcp %.2f Mb/s", seed, late, r.AQM, r.Group, res.Ping.P50Ms, res.Ping.P99Ms, loss, lost, tcp)
		require.Less(t, loss, 0.01, r.AQM)
		require.Greater(t, tcp, 12.5, r.AQM)
	}
}
