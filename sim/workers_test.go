package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkersDoNotChangeResults protects reproducibility: runs that share a capacity trace give the same results on one worker as on several.
func TestWorkersDoNotChangeResults(t *testing.T) {
	// An hour-long rate trace in 40 ms steps: 90 000 of them.
	var b strings.Builder
	for ms := 0; ms < 3600e3; ms += 40 {
		fmt.Fprintf(&b, "%dms %dkbit\n", ms, 20000+(ms/1000%4)*10000+ms%700)
	}
	b.WriteString("3600s end\n")
	file := filepath.Join(t.TempDir(), "hour.rate")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644))

	sc, err := LookupScenario("autorate")
	require.NoError(t, err)
	runs, err := sc.Runs(Options{Traces: []string{file}, Duration: 2 * time.Second, Seed: 1,
		AQMs: []string{"fq-codel+autorate-passive", "fq-codel+cake-autorate-v3"}})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(runs), 4, "the passive and v3 rows and the bounds a trace file adds")

	results := func(workers int) []string {
		var out []string
		for _, o := range ExecuteAll(runs, 8, workers, nil) {
			require.NoError(t, o.Err)
			out = append(out, o.Run.AQM+" seed "+fmt.Sprint(o.Run.Config.Seed)+": "+resultJSON(t, o.Result))
		}
		return out
	}
	one := results(1)
	for _, workers := range []int{2, 3, 4} {
		several := results(workers)
		for i := range one {
			require.Equal(t, one[i], several[i], "%d workers", workers)
		}
	}
}

// TestRunsOnlyReadTheTrace protects runs that share a capacity trace: building and running one reads the trace and never rebuilds it.
func TestRunsOnlyReadTheTrace(t *testing.T) {
	tr, err := StepTrace("step", 2*time.Second, RateChange{RateBps: 20e6}, RateChange{At: time.Second, RateBps: 5e6})
	require.NoError(t, err)
	table, want := &tr.cum[0], slices.Clone(tr.cum)
	r := Run{Scenario: "t", Group: "g", AQM: "fq-codel@mean", BufferPackets: 100, Config: Config{
		RateBps: 12.5e6, Capacity: tr, Duration: 2 * time.Second, Seed: 1,
		Flows: []FlowSpec{{Kind: CUBIC, Count: 2, RTT: 20 * time.Millisecond}},
	}}
	res, err := r.Execute()
	require.NoError(t, err)
	require.Positive(t, res.GoodputMbps)
	require.Same(t, table, &tr.cum[0], "the run replaced the trace's table")
	require.Equal(t, want, tr.cum)
}
