package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/red"
)

// TestRedFamilyFollowsStudy pins the red-family scenario to the RED
// study's stated setup (ten bulk TCP sources, 2 Mb/s, identical thresholds
// 5 and 15, 60 s), ns-3's defaults of that era (NewReno, 536-byte segments
// plus 40 bytes of IPv4/TCP headers and 12 of timestamps, ns-3's TCP
// (delayed ACKs every 2 segments or 200 ms, min RTO 1 s), RedQueueDisc QW 0.002,
// LInterm 50, Wait on; LInterm 10 and MeanPktSize 512 as red-vs-ared sets
// them) and the stand-ins for what it does not state (40 ms base RTT,
// 50-packet limit). The numbers are typed from those sources, not the code.
func TestRedFamilyFollowsStudy(t *testing.T) {
	sc, err := LookupScenario("red-family")
	require.NoError(t, err)
	runs, err := sc.Runs(Options{Seed: 1})
	require.NoError(t, err)
	var names []string
	for _, r := range runs {
		names = append(names, r.AQM)
		c := r.Config
		require.Equal(t, "base", r.Group)
		require.Equal(t, 2e6, c.RateBps, r.AQM)
		require.Equal(t, 60*time.Second, c.Duration, r.AQM)
		require.Equal(t, 588, c.MSS, "%s: 536 bytes of payload, 40 of IPv4/TCP headers, 12 of timestamp option", r.AQM)
		require.Equal(t, 40, c.HeaderBytes, r.AQM)
		require.Equal(t, 10*time.Millisecond, c.QueueSampleInterval, r.AQM)
		require.Equal(t, "ns3", c.TCP.Profile, r.AQM)
		require.Equal(t, time.Second, c.TCP.MinRTO, r.AQM)
		require.Equal(t, 2, c.TCP.AckEvery, r.AQM)
		require.Equal(t, 200*time.Millisecond, c.TCP.DelayedAckTimeout, r.AQM)
		require.Equal(t, 12, c.TCP.TimestampBytes, r.AQM)
		require.Empty(t, c.RateChanges, r.AQM)
		require.Zero(t, c.LossProb, r.AQM)
		require.Len(t, c.Flows, 10, r.AQM)
		for _, f := range c.Flows {
			require.Equal(t, Reno, f.Kind)
			require.False(t, f.ECN, "ns-3's UseEcn is off: Not-ECT flows")
			require.Equal(t, 40*time.Millisecond, f.RTT)
			require.Equal(t, time.Second, f.Start)
			require.Zero(t, f.SizePackets, "long-lived flows")
		}
		require.Equal(t, 50, r.BufferPackets, r.AQM)
		require.Equal(t, 5, r.REDMinThreshold, r.AQM)
		require.Equal(t, 15, r.REDMaxThreshold, r.AQM)
		require.Equal(t, REDParams{Weight: 0.002, MaxP: 0.02, AREDMaxP: 0.1, Wait: true, MeanPacketBytes: 512, DevicePackets: 0}, r.RED, r.AQM)
		require.Equal(t, 100, redFamilyNS3DevicePkts, "ns-3's device queue, documented and left out")
	}
	require.ElementsMatch(t, []string{"red", "ared", "gentle-red"}, names)

	// The sensitivity variant adds one-knob changes, each labelled, on top
	// of the base case.
	runs, err = sc.Runs(Options{Seed: 1, Variant: "sensitivity"})
	require.NoError(t, err)
	groups := map[string]Run{}
	for _, r := range runs {
		groups[r.Group] = r
	}
	require.Len(t, groups, 1+len(redFamilySensitivity))
	require.Equal(t, 100, groups["device=100"].RED.DevicePackets)
	require.Equal(t, 100*time.Millisecond, groups["device=100 rtt=100ms"].Config.Flows[0].RTT)
	require.Equal(t, 100*time.Millisecond, groups["rtt=100ms"].Config.Flows[0].RTT)
	require.Equal(t, 1000, groups["limit=1000"].BufferPackets)
	require.Equal(t, 1500, groups["seg=1448"].Config.MSS)
	require.False(t, groups["wait=false"].RED.Wait)
	_, err = sc.Runs(Options{Variant: "nope"})
	require.ErrorContains(t, err, "nope")
}

// TestRedFamilyPublished protects the published figures the table prints
// next to ours, typed from the study's text.
func TestRedFamilyPublished(t *testing.T) {
	g, cv, d, _, _ := RedFamilyPublished("red")
	require.Equal(t, []float64{1.80, 18.7, 1240}, []float64{g, cv, d})
	_, cv, _, mq, _ := RedFamilyPublished("gentle-red")
	require.Equal(t, []float64{24.7, 6.40}, []float64{cv, mq})
	_, _, d, _, pq := RedFamilyPublished("ared")
	require.Equal(t, []float64{1003, 49}, []float64{d, pq})
}

// TestRedFamilyQueues protects how the scenario's Env becomes red.Configs:
// identical thresholds for the three variants, ns-3's w_q and max_p for
// RED and Gentle RED, ARED's automatic weight and initial max_p 1/10, the
// gentle and adaptive switches, ns-3's Wait for all three, and the device
// queue left out.
func TestRedFamilyQueues(t *testing.T) {
	sc, err := LookupScenario("red-family")
	require.NoError(t, err)
	runs, err := sc.Runs(Options{Seed: 1})
	require.NoError(t, err)
	// C = 2e6 / (8·512) packets/s; ARED's weight is 1 − exp(−1/C).
	autoW := 1 - math.Exp(-8*512/2e6)
	want := map[string]struct {
		w, maxP          float64
		gentle, adaptive bool
	}{
		"red":        {0.002, 0.02, false, false},
		"gentle-red": {0.002, 0.02, true, false},
		"ared":       {autoW, 0.1, true, true},
	}
	for _, r := range runs {
		a, err := LookupAQM(r.AQM)
		require.NoError(t, err)
		q, err := a.New(Env{RateBps: r.Config.RateBps, MSS: r.Config.MSS, MaxRTT: r.Config.MaxRTT(),
			BufferPackets: r.BufferPackets, REDMinThreshold: r.REDMinThreshold, REDMaxThreshold: r.REDMaxThreshold,
			RED: r.RED, Seed: 1})
		require.NoError(t, err)
		_, dev := q.(*deviceQueue)
		require.False(t, dev, "%s: RED manages the whole queue, no device queue", r.AQM)
		rq, ok := q.(*red.Queue[uint64])
		require.True(t, ok)
		d, c, w := rq.Detail(), rq.Config(), want[r.AQM]
		require.Equal(t, 5.0, d.MinThreshold, r.AQM)
		require.Equal(t, 15.0, d.MaxThreshold, r.AQM)
		require.InDelta(t, w.w, d.Weight, 1e-12, r.AQM)
		require.InDelta(t, w.maxP, d.MaxP, 1e-12, r.AQM)
		require.Equal(t, w.gentle, c.Gentle, r.AQM)
		require.Equal(t, w.adaptive, c.Adaptive, r.AQM)
		require.True(t, c.Wait, "%s: ns-3's RedQueueDisc waits between drops by default", r.AQM)
		require.Equal(t, 512, c.MeanPacketBytes, r.AQM)
		require.Equal(t, 50, c.LimitPackets, r.AQM)
	}
	// Outside the scenario (REDParams zero) the RED family keeps Floyd and
	// Jacobson's spacing.
	q, err := LookupAQM("red")
	require.NoError(t, err)
	plain, err := q.New(Env{RateBps: 2e6, MSS: 576, BufferPackets: 100, REDMinThreshold: 5, REDMaxThreshold: 15, Seed: 1})
	require.NoError(t, err)
	require.False(t, plain.(*red.Queue[uint64]).Config().Wait)

	// ns-3's ARED switch discards MinTh and MaxTh for the automatic
	// max(5, TargetDelay·C/2) and 3·min: at 2 Mb/s and 512 B that is 5
	// and 15 too (C/2·5 ms ≈ 1.2 < 5), so the thresholds stay identical.
	autoQ, err := red.New[int](red.Config{LinkRate: 2e6, MeanPacketBytes: 512}, nil)
	require.NoError(t, err)
	auto := autoQ.Config()
	require.Equal(t, 5, auto.MinThreshold)
	require.Equal(t, 15, auto.MaxThreshold)
}

// newTestDeviceQueue is a device queue of capacity dev over a FIFO disc of
// limit packets, so that its behaviour is that of the FIFOs alone.
func newTestDeviceQueue(limit, dev int, onDrop aqm.DropFunc[uint64]) (*deviceQueue, error) {
	disc, err := fifo.New(fifo.Config{LimitPackets: limit}, onDrop)
	if err != nil {
		return nil, err
	}
	return newDeviceQueue(disc, dev), nil
}

// TestDeviceQueueSteps protects the device queue's flow control and the
// disc-only average at fixed instants: the device fills first, the disc
// holds only the overflow, a dequeue pulls the disc's head into the device.
func TestDeviceQueueSteps(t *testing.T) {
	q, err := newTestDeviceQueue(3, 2, nil)
	require.NoError(t, err)
	pkt := func(n uint64) aqm.Packet[uint64] { return aqm.Packet[uint64]{Payload: n, Meta: aqm.Meta{Size: 100}} }
	type step struct {
		at        aqm.Time
		enq       int // payload to enqueue, or −1 to dequeue
		verdict   aqm.Verdict
		got       uint64
		disc, dev int
	}
	for i, s := range []step{
		{0, 1, aqm.Enqueued, 0, 0, 1},
		{0, 2, aqm.Enqueued, 0, 0, 2},
		{0, 3, aqm.Enqueued, 0, 1, 2},
		{0, 4, aqm.Enqueued, 0, 2, 2},
		{0, 5, aqm.Enqueued, 0, 3, 2},
		{0, 6, aqm.DroppedOverlimit, 0, 3, 2}, // the disc's limit; the device never drops
		{10, -1, 0, 1, 2, 2},
		{20, -1, 0, 2, 1, 2},
		{30, -1, 0, 3, 0, 2},
		{40, -1, 0, 4, 0, 1},
	} {
		if s.enq >= 0 {
			require.Equal(t, s.verdict, q.Enqueue(pkt(uint64(s.enq)), s.at), "step %d", i)
		} else {
			p, ok := q.Dequeue(s.at)
			require.True(t, ok, "step %d", i)
			require.Equal(t, s.got, p.Payload, "step %d", i)
		}
		require.Equal(t, s.disc, q.disc.Len(), "step %d", i)
		require.Equal(t, s.dev, q.dev.Len(), "step %d", i)
		require.Equal(t, s.disc+s.dev, q.Len(), "step %d", i)
		require.Equal(t, 100*(s.disc+s.dev), q.Backlog(), "step %d", i)
	}
	// The disc held 3 packets over [0,10), 2 over [10,20), 1 over
	// [20,30) and none over [30,40): (30+20+10+0)/40 = 1.5.
	require.InDelta(t, 1.5, q.DiscAvgPackets(), 1e-12)
	st := q.Stats()
	require.Equal(t, uint64(5), st.Enqueued.Packets)
	require.Equal(t, uint64(4), st.Dequeued.Packets)
	require.Equal(t, 1, st.Len)
	require.Equal(t, uint64(1), st.DroppedOverlimit.Packets)
}

// TestDeviceQueueRandom protects the device queue's invariants on random
// traces over a RED disc: FIFO order per flow, every accepted packet leaves
// once, the counters balance, and the disc holds packets only while the
// device is full.
func TestDeviceQueueRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for trial := range 20 {
		queued := map[uint64]bool{}
		var dropped []uint64
		onDrop := func(p aqm.Packet[uint64], _ aqm.Verdict) { dropped = append(dropped, p.Payload) }
		disc, err := red.New(red.Config{MinThreshold: 2, MaxThreshold: 6, MaxP: 0.5, Weight: 0.2, LimitPackets: 8,
			LinkRate: 1e6, Gentle: trial%2 == 0, Adaptive: trial%4 == 0, Seed: seed}, onDrop)
		require.NoError(t, err)
		q := newDeviceQueue(disc, 1+rng.IntN(5))
		now, next, last := aqm.Time(0), uint64(0), uint64(0)
		for range 2000 {
			now += aqm.Time(rng.IntN(2_000_000))
			if rng.IntN(3) != 0 {
				next++
				if q.Enqueue(aqm.Packet[uint64]{Payload: next, Meta: aqm.Meta{Size: 500}}, now).Accepted() {
					queued[next] = true
				}
			} else if p, ok := q.Dequeue(now); ok {
				require.True(t, queued[p.Payload], "a packet leaves once")
				require.Greater(t, p.Payload, last, "FIFO order")
				last = p.Payload
				delete(queued, p.Payload)
			} else {
				require.Zero(t, q.Len())
			}
			for _, d := range dropped {
				require.True(t, queued[d])
				delete(queued, d)
			}
			dropped = dropped[:0]
			if q.disc.Len() > 0 {
				require.True(t, q.dev.Full(), "the disc holds packets only while the device is full")
			}
			st := q.Stats()
			require.Equal(t, len(queued), q.Len())
			require.Equal(t, st.Enqueued.Packets, st.Dequeued.Packets+st.DroppedQueued.Packets+uint64(st.Len))
			require.Equal(t, q.Backlog(), st.Backlog)
		}
	}
}

// TestDeviceQueueConformance runs the conformance kit on a RED disc under
// a device queue (the declared limit is the disc's plus the device's).
func TestDeviceQueueConformance(t *testing.T) {
	aqmtest.Run(t, aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			disc, err := red.New(red.Config{MinThreshold: 3, MaxThreshold: 9, LimitPackets: 20, Gentle: true, Seed: seed}, onDrop)
			if err != nil {
				return nil, err
			}
			return newDeviceQueue(disc, 4), nil
		},
		LimitPackets: 24,
		// The device holds four packets whatever their segments, as an
		// ns-3 device queue does: with super-packets it can exceed a limit
		// in wire packets. The simulator sends no super-packets.
		SkipGSO: true,
	})
}
