package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// runAutorate runs the autorate scenario's rows aqms on one trace file,
// seed 1, and returns the results by row.
func runAutorate(t *testing.T, file string, aqms ...string) map[string]*Result {
	t.Helper()
	return runAutorateSeed(t, file, 1, aqms...)
}

// runAutorateSeed is runAutorate with the given seed.
func runAutorateSeed(t *testing.T, file string, seed uint64, aqms ...string) map[string]*Result {
	t.Helper()
	sc, err := LookupScenario("autorate")
	require.NoError(t, err)
	runs, err := sc.Runs(Options{Seed: seed, AQMs: aqms, Traces: []string{file}})
	require.NoError(t, err)
	got := map[string]*Result{}
	for _, r := range runs {
		res, err := r.Execute()
		require.NoError(t, err)
		got[r.AQM] = res
	}
	return got
}

// TestAutorateLeavesMinRate protects the probes' timing: after a fade to
// 200 kbit/s has cut the rate to its minimum (100 kbit/s), the rate climbs
// back once the link returns, and the run uses 28 % of the capacity. A
// probe timed through the shaper waits a round of every bulk flow's packet
// there (4·1500 bytes at 100 kbit/s is 480 ms), reads that as bufferbloat,
// and keeps the rate at the minimum to the end of the run: 4 %.
func TestAutorateLeavesMinRate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "outage.rate")
	require.NoError(t, os.WriteFile(file, []byte("0s 6mbit\n10s 0.2mbit\n13s 6mbit\n40s end\n"), 0o644))
	got := runAutorate(t, file, "fq-codel+autorate")
	require.Greater(t, got["fq-codel+autorate"].Utilization, 0.2)
}

// TestVerizonRecovery protects the recommended setting on the real
// Verizon LTE uplink trace, whose deep fades cut the rate again and
// again: it uses at least 0.85 of what the oracle that learns the capacity
// 300 ms late uses, with a ping p99 within 1.2 times the oracle's plus
// 10 ms; cake-autorate's defaults use less.
func TestVerizonRecovery(t *testing.T) {
	file := filepath.Join(realTraces(t), "Verizon-LTE-short.up")
	got := runAutorate(t, file, "fq-codel+autorate-recovery", "fq-codel+cake-autorate-v3")
	rec, cake := got["fq-codel+autorate-recovery"], got["fq-codel+cake-autorate-v3"]
	requireNearOracle(t, rec, got["fq-codel@oracle-300ms"])
	require.Greater(t, rec.Utilization, cake.Utilization)
}

// requireNearOracle fails unless r uses at least 0.85 of the oracle's
// utilisation with a ping p99 within 1.2 times the oracle's plus 10 ms.
func requireNearOracle(t *testing.T, r, oracle *Result) {
	t.Helper()
	require.GreaterOrEqual(t, r.Utilization, 0.85*oracle.Utilization)
	require.LessOrEqual(t, r.Ping.P99Ms, 1.2*oracle.Ping.P99Ms+10)
}

// TestAutoratePassive protects the passive feed: with no probe reaching
// the controller, the TCP flows' own round trips keep the shaper near the
// capacity of the real T-Mobile LTE uplink, at least 0.85 of the oracle's
// utilisation with a ping p99 within 1.2 times the oracle's plus 10 ms.
func TestAutoratePassive(t *testing.T) {
	file := filepath.Join(realTraces(t), "TMobile-LTE-short.up")
	got := runAutorate(t, file, "fq-codel+autorate-passive")
	requireNearOracle(t, got["fq-codel+autorate-passive"], got["fq-codel@oracle-300ms"])
}

// TestAutoratePassiveSteps protects the passive feed without the real
// traces: on the shipped step trace it uses more than the shaper fixed
// at the minimum and keeps the pings' p95 below half the fixed mean's.
func TestAutoratePassiveSteps(t *testing.T) {
	got := runAutorate(t, filepath.Join(tracesDir(), "step-down-up.rate"), "fq-codel+autorate-passive", "fq-codel@min")
	p95 := func(a string) float64 { return got[a].DelayHistogram("ping").Quantile(0.95).Seconds() }
	require.Greater(t, got["fq-codel+autorate-passive"].Utilization, got["fq-codel@min"].Utilization+0.2)
	require.Less(t, p95("fq-codel+autorate-passive"), p95("fq-codel@mean")/2)
}
