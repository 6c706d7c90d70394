package sim

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/stretchr/testify/require"
)

// TestReverseEchoWaitsBehindReverseData protects the reverse queue: a
// ping's echo waits behind the reverse flows' data. A reverse CBR source at
// twice the reverse rate for Stop seconds builds a backlog that grows by
// (cbr−rate)·t bits, so the echo that arrives at Stop waits about
// (cbr−rate)/rate·Stop, which is the largest added delay of the run; on a
// one-direction path the same pings see only their base RTT.
func TestReverseEchoWaitsBehindReverseData(t *testing.T) {
	const revRate, cbr = 1e6, 2e6
	stop := 800 * time.Millisecond
	base := 20 * time.Millisecond
	cfg := Config{RateBps: 10e6, Duration: 2 * time.Second, Seed: 1, Reverse: &ReversePath{RateBps: revRate},
		Flows: []FlowSpec{
			{Kind: CBR, RateBps: cbr, Stop: stop, Reverse: true, Group: "down"},
			{Kind: Ping, RTT: base, Interval: 5 * time.Millisecond, Group: "probe"},
		}}
	r := mustRun(t, cfg, fifoQ(10000))
	// The echoes themselves (64 bytes every 5 ms) join the backlog too.
	echo := 64 * 8 / 5e-3
	want := base + time.Duration((cbr+echo-revRate)/revRate*float64(stop))
	// Granularity: one reverse data packet's time on the wire (12 ms) and
	// one ping interval either side of Stop.
	tol := 12*time.Millisecond + 5*time.Millisecond
	require.InDelta(t, want.Seconds()*1e3, r.Ping.MaxMs, tol.Seconds()*1e3)
	require.NotNil(t, r.Reverse)
	require.Zero(t, r.Reverse.AckDrops)
	require.Greater(t, r.Reverse.Delay.MaxMs, 0.9*float64(want-base)/1e6)

	cfg.Reverse = nil
	cfg.Flows = cfg.Flows[1:]
	r1 := mustRun(t, cfg, fifoQ(10000))
	require.Nil(t, r1.Reverse)
	require.Less(t, r1.Ping.MaxMs, base.Seconds()*1e3+1)
}

// TestReverseAckClock protects the forward flows' ACK clock on a two-way
// path: a forward Reno flow's ACKs cross the reverse queue, so reverse
// data queued there raises the flow's RTT samples, and without reverse
// data they stay near the base RTT.
func TestReverseAckClock(t *testing.T) {
	run := func(down bool) *Result {
		cfg := Config{RateBps: 10e6, Duration: 4 * time.Second, Warmup: time.Second, Seed: 2,
			Reverse: &ReversePath{RateBps: 2e6}, TCP: LinuxTCP(),
			Flows: []FlowSpec{{Kind: Reno, RTT: 20 * time.Millisecond, Group: "up"}}}
		if down {
			cfg.Flows = append(cfg.Flows, FlowSpec{Kind: Reno, RTT: 20 * time.Millisecond, Reverse: true, Group: "down"})
		}
		return mustRun(t, cfg, fifoQ(100))
	}
	quiet, loaded := run(false), run(true)
	// The up flow's own ACKs (about 420/s of 52 bytes, 0.17 Mb/s) hardly
	// queue at 2 Mb/s; the down flow fills the 100-packet reverse buffer
	// (100 × 1500 B at 2 Mb/s = 600 ms) and the up flow's ACKs wait in it.
	require.Less(t, quiet.Reverse.Delay.P99Ms, 5.0)
	require.Greater(t, loaded.Reverse.Delay.P99Ms, 100.0)
	require.Greater(t, loaded.Group("up").RTT.P99Ms, quiet.Group("up").RTT.P99Ms+100)
	require.Positive(t, loaded.Group("down").GoodputMbps)
}

// TestReverseConservation protects the packet accounting of a two-way path,
// per direction: every packet offered to a queue is refused or accepted,
// every accepted one sent, dropped or still queued, and every packet slot
// in use is in a queue, on a link or on a return line.
func TestReverseConservation(t *testing.T) {
	for _, name := range []string{"fifo", "fq-codel"} {
		a, err := LookupAQM(name)
		require.NoError(t, err)
		cfg := Config{RateBps: 8e6, Duration: 3 * time.Second, Warmup: time.Second, Seed: 3,
			Reverse: &ReversePath{RateBps: 3e6}, TCP: LinuxTCP(), StartJitter: 5 * time.Millisecond,
			Flows: []FlowSpec{
				{Kind: CUBIC, Count: 2, RTT: 30 * time.Millisecond, Group: "up"},
				{Kind: BBR, Count: 2, RTT: 30 * time.Millisecond, Reverse: true, Group: "down"},
				{Kind: Ping, RTT: 30 * time.Millisecond, Interval: 10 * time.Millisecond, Group: "probe"},
			}}
		s, err := New(cfg, func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			return a.New(Env{RateBps: 8e6, MSS: 1500, MaxRTT: 30 * time.Millisecond, BufferPackets: 60, Seed: 3, OnDrop: d})
		})
		require.NoError(t, err)
		r := s.Run()
		check := func(dir string, n linkCount, st aqm.Stats, busy bool) {
			require.Equal(t, n.offered, st.Enqueued.Packets+n.refused, "%s %s: offered", name, dir)
			inTx := uint64(0)
			if busy {
				inTx = 1
			}
			require.Equal(t, st.Enqueued.Packets, st.Dequeued.Packets+st.DroppedQueued.Packets+uint64(st.Len), "%s %s: accepted", name, dir)
			require.Equal(t, st.Dequeued.Packets, n.sent+inTx, "%s %s: sent", name, dir)
			require.Positive(t, n.sent, "%s %s", name, dir)
		}
		check("forward", s.fwd, s.q.Stats(), s.busy)
		check("reverse", s.rev.n, s.rev.q.Stats(), s.rev.busy)
		inUse := len(s.pkts) - len(s.free)
		held := s.q.Len() + s.rev.q.Len()
		if s.busy {
			held++
		}
		if s.rev.busy {
			held++
		}
		for _, f := range s.flows {
			held += f.line.n
		}
		require.Equal(t, inUse, held, "%s: packet slots", name)
		require.Positive(t, r.Group("up").GoodputMbps, name)
		require.Positive(t, r.Group("down").GoodputMbps, name)
		require.Positive(t, r.Ping.Count, name)
	}
}

// TestReverseConfig protects the reverse path's validation: a reverse flow
// without a reverse path, a negative rate and a shaper are refused by name.
func TestReverseConfig(t *testing.T) {
	base := Config{RateBps: 1e6, Duration: time.Second}
	c := base
	c.Flows = []FlowSpec{{Kind: Reno, Reverse: true}}
	_, err := New(c, fifoQ(10))
	require.ErrorContains(t, err, "Flows[0].Reverse")
	c = base
	c.Reverse = &ReversePath{RateBps: -1}
	_, err = New(c, fifoQ(10))
	require.ErrorContains(t, err, "Reverse.RateBps")
	c = base
	c.Reverse = &ReversePath{}
	c.Shaper = &Shaper{RateBps: 1e6}
	_, err = New(c, fifoQ(10))
	require.ErrorContains(t, err, "Reverse")
}

// TestReversePacedQueue protects the reverse link's wake-up for a queue
// that paces itself: CAKE shaped at 2 Mb/s on a 10 Mb/s reverse link holds
// packets back, and the link must come back at the instant CAKE names. A
// reverse ECN-capable CBR burst (marked, not dropped) of 20 Mb/s for 0.2 s
// leaves 3.6 Mbit queued when it stops; with no arrival after that, only
// the wake-ups drain it, at the shaped rate, within the 3 s run.
func TestReversePacedQueue(t *testing.T) {
	const burst, shaped = 20e6, 2e6
	stop := 200 * time.Millisecond
	dur := 3 * time.Second
	cfg := Config{RateBps: 10e6, Duration: dur, Seed: 4, Reverse: &ReversePath{},
		Flows: []FlowSpec{{Kind: CBR, RateBps: burst, ECN: true, Stop: stop, Reverse: true, Group: "down"}}}
	built := 0
	r := mustRun(t, cfg, func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		built++
		if built == 1 {
			return fifo.New(fifo.Config{LimitPackets: 100}, d)
		}
		return cake.New(cake.Config{Rate: shaped, Seed: 4}, d)
	})
	require.Equal(t, 2, built)
	sent := burst * stop.Seconds()
	require.Less(t, sent, shaped*dur.Seconds(), "the burst must fit the run at the shaped rate")
	got := r.Group("down").GoodputMbps * 1e6 * dur.Seconds()
	require.InDelta(t, sent, got, 0.02*sent)
	require.Zero(t, r.Reverse.Queue.Len)
}
