package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLabScenarioMatchesLab protects the lab scenario's setup: the lab's
// rate, base RTT, buffer, probe interval, load and warm-up, both tests and
// both congestion controls over the FIFO and FQ-CoDel; rrul's 4 downloads
// on a reverse direction of the same rate with 52-byte ACKs, and in the
// one-way variant its reverse ACK stream at one 52-byte ACK per two
// link-rate segments.
func TestLabScenarioMatchesLab(t *testing.T) {
	for _, variant := range []string{"", "one-way"} {
		checkLabRuns(t, variant)
	}
	_, err := labScenario.Runs(Options{Variant: "two"})
	require.ErrorContains(t, err, "variant")
}

func checkLabRuns(t *testing.T, variant string) {
	runs, err := labScenario.Runs(Options{Seed: 3, Variant: variant})
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
		var bulk, down, acks, pings int
		for _, f := range c.Flows {
			require.Equal(t, 20*time.Millisecond, f.RTT, r.Group)
			switch f.Kind {
			case CUBIC, BBR:
				require.Equal(t, r.Params["cc"], f.Kind.String(), r.Group)
				if f.Reverse {
					down += f.Count
				} else {
					bulk += f.Count
				}
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
		wantAcks, wantDown := 0, 0
		switch {
		case r.Params["test"] == "rrul" && variant == "one-way":
			wantAcks = 1
		case r.Params["test"] == "rrul":
			wantDown = 4
			require.Equal(t, ReversePath{RateBps: 50e6, AckBytes: 52}, *c.Reverse, r.Group)
		}
		require.Equal(t, wantAcks, acks, r.Group)
		require.Equal(t, wantDown, down, r.Group)
		if wantDown == 0 {
			require.Nil(t, c.Reverse, r.Group)
		}
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

// TestLabGoodputShare protects the lab's goodput measure: uploads and
// downloads over the rate of the directions that carry them.
func TestLabGoodputShare(t *testing.T) {
	r := &Result{BottleneckMbps: 50, Groups: []GroupResult{{Group: "up", GoodputMbps: 45}, {Group: "probe", GoodputMbps: 0.1}}}
	require.InDelta(t, 0.9, LabGoodputShare(r), 1e-12)
	r.Reverse = &ReverseResult{RateMbps: 50}
	require.InDelta(t, 0.9, LabGoodputShare(r), 1e-12)
	r.Groups = append(r.Groups, GroupResult{Group: "down", GoodputMbps: 40})
	require.InDelta(t, 0.85, LabGoodputShare(r), 1e-12)
	require.Zero(t, LabGoodputShare(&Result{}))
}
