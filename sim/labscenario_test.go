package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLabScenarioMatchesLab protects the lab scenario's setup: the lab's
// rate, base RTT, buffer, probe interval, load and warm-up, both tests and
// both congestion controls over the FIFO and FQ-CoDel, and rrul's reverse
// ACK stream at one 52-byte ACK per two link-rate segments.
func TestLabScenarioMatchesLab(t *testing.T) {
	runs, err := labScenario.Runs(Options{Seed: 3})
	require.NoError(t, err)
	require.Len(t, runs, len(labTests)*len(labCCs)*len(LabAQMs))
	seen := map[string]bool{}
	for _, r := range runs {
		seen[r.Group+"/"+r.AQM] = true
		c := r.Config
		require.Equal(t, 50e6, c.RateBps, r.Group)
		require.Equal(t, 15*time.Second, c.Duration, r.Group)
		require.Equal(t, 5*time.Second, c.Warmup, r.Group)
		require.Equal(t, 1000, r.BufferPackets, r.Group)
		require.Equal(t, uint64(3), c.Seed, r.Group)
		require.Equal(t, "linux", c.TCP.Profile, r.Group)
		var bulk, acks, pings int
		for _, f := range c.Flows {
			require.Equal(t, 20*time.Millisecond, f.RTT, r.Group)
			switch f.Kind {
			case CUBIC, BBR:
				require.Equal(t, r.Params["cc"], f.Kind.String(), r.Group)
				bulk += f.Count
			case CBR:
				acks++
				require.Equal(t, 52, f.PacketBytes)
				require.InDelta(t, 50e6/12000/2*52*8, f.RateBps, 1e-6)
			case Ping:
				pings++
				require.Equal(t, 10*time.Millisecond, f.Interval)
			}
		}
		require.Equal(t, 4, bulk, r.Group)
		require.Equal(t, 1, pings, r.Group)
		want := 0
		if r.Params["test"] == "rrul" {
			want = 1
		}
		require.Equal(t, want, acks, r.Group)
	}
	for _, g := range []string{"tcp_nup-cubic", "tcp_nup-bbr", "rrul-cubic", "rrul-bbr"} {
		for _, a := range LabAQMs {
			require.True(t, seen[g+"/"+a], "missing %s over %s", g, a)
		}
	}
}

// TestLabProbeAdded protects the lab measure: the ping's RTT less its base
// RTT, doubled when rrul's reverse ACK stream is in the run.
func TestLabProbeAdded(t *testing.T) {
	r := &Result{Ping: DelayStats{P50Ms: 25, P99Ms: 31}, Flows: []FlowResult{
		{Kind: CUBIC, RTTMs: 20, Group: "up"}, {Kind: Ping, RTTMs: 20, Group: "probe"}}}
	require.InDelta(t, 5, LabProbeAddedMs(r, 0.5), 1e-9)
	require.InDelta(t, 11, LabProbeAddedMs(r, 0.99), 1e-9)
	r.Flows = append(r.Flows, FlowResult{Kind: CBR, RTTMs: 20, Group: "acks"})
	require.InDelta(t, 10, LabProbeAddedMs(r, 0.5), 1e-9)
	require.InDelta(t, 22, LabProbeAddedMs(r, 0.99), 1e-9)
	require.Zero(t, LabProbeAddedMs(&Result{Flows: []FlowResult{{Kind: CUBIC}}}, 0.5))
}
