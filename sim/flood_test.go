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
