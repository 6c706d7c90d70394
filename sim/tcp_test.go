package sim

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
)

// The tests in this file drive one Reno flow's receiver or sender by hand
// (a scripted path: no link, no queue decisions) and check each TCPConfig
// behaviour against the RFC or the reference it names.

// scripted returns a run with one Reno flow on a 40 ms path under tcp, not
// started: the test calls the receiver and the sender itself.
func scripted(t *testing.T, tcp TCPConfig) (*Sim, *flow) {
	t.Helper()
	cfg := Config{RateBps: 10e6, Duration: 100 * time.Second, TCP: tcp,
		Flows: []FlowSpec{{Kind: Reno, RTT: 40 * time.Millisecond}}}
	s, err := New(cfg, fifoQ(10000))
	require.NoError(t, err)
	return s, s.flows[0]
}

// arrive hands the receiver data segment seq, sent at s.now, CE-marked if ce.
func arrive(s *Sim, f *flow, seq int64, ce bool) {
	slot := s.alloc()
	e := aqm.NotECT
	if ce {
		e = aqm.CE
	}
	s.pkts[slot] = pkt{sent: s.now, seq: seq, flow: f.id, size: uint32(f.pktBytes), ecn: e}
	s.receiveData(f, slot)
}

// ackSent is an ACK as the receiver put it on the return path.
type ackSent struct {
	ack, sack int64
	ceN       int
}

// acks takes the ACKs off the flow's return path.
func acks(s *Sim, f *flow) []ackSent {
	var out []ackSent
	for f.line.n > 0 {
		le := f.line.pop()
		p := s.pkts[le.slot]
		out = append(out, ackSent{p.seq, p.sack, int(p.ceN)})
		s.release(le.slot)
	}
	return out
}

// delAckTimer returns when the held ACK is due, if one is held, after
// checking that a timer event is pending no later than that.
func delAckTimer(t *testing.T, s *Sim, f *flow) (aqm.Time, bool) {
	if f.dackAt == 0 {
		return 0, false
	}
	pending := false
	for _, e := range s.ag.ev {
		pending = pending || (e.kind == evDelAck && e.flow == f.id && e.at <= f.dackAt)
	}
	require.True(t, pending, "a held ACK has a timer event")
	return f.dackAt, true
}

// fireDelAck runs the flow's delayed-ACK timer events up to until.
func fireDelAck(s *Sim, f *flow, until aqm.Time) {
	for {
		i := -1
		for j, e := range s.ag.ev {
			if e.kind == evDelAck && e.flow == f.id && e.at <= until && (i < 0 || e.at < s.ag.ev[i].at) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		e := s.ag.ev[i]
		s.ag.ev[i].kind = evSample // spent (the tests never run the agenda)
		s.now = e.at
		s.delAckEvent(f)
	}
	s.now = until
}

// TestDelayedAcks protects the receiver's ACK policy (RFC 5681 §4.2, ns-3's
// DelAckCount 2 and DelAckTimeout 200 ms): every second in-order segment is
// ACKed, a lone one after the timer, and out-of-order data, gap fills and
// duplicates at once, each ACK carrying the CE marks of what it covers.
func TestDelayedAcks(t *testing.T) {
	s, f := scripted(t, NS3TCP())
	arrive(s, f, 0, false)
	require.Empty(t, acks(s, f), "the first segment waits for a second")
	arrive(s, f, 1, true)
	require.Equal(t, []ackSent{{2, -1, 1}}, acks(s, f))

	arrive(s, f, 2, true)
	require.Empty(t, acks(s, f))
	due, ok := delAckTimer(t, s, f)
	require.True(t, ok)
	require.Equal(t, s.now.Add(200*time.Millisecond), due)
	fireDelAck(s, f, due-1)
	require.Empty(t, acks(s, f), "not before 200 ms")
	fireDelAck(s, f, due)
	require.Equal(t, []ackSent{{3, -1, 1}}, acks(s, f), "the timer ACKs the held segment")
	fireDelAck(s, f, due+aqm.Time(time.Second))
	require.Empty(t, acks(s, f), "a timer fires once")

	arrive(s, f, 3, false) // held
	arrive(s, f, 5, false) // out of order: at once, covering the held one
	require.Equal(t, []ackSent{{4, 5, 0}}, acks(s, f))
	_, ok = delAckTimer(t, s, f)
	require.False(t, ok, "the immediate ACK cancels the timer")
	fireDelAck(s, f, s.now.Add(time.Second))
	require.Empty(t, acks(s, f), "a cancelled timer sends nothing")
	arrive(s, f, 7, false)
	require.Equal(t, []ackSent{{4, 7, 0}}, acks(s, f))
	arrive(s, f, 4, false) // fills part of the gap
	require.Equal(t, []ackSent{{6, -1, 0}}, acks(s, f))
	arrive(s, f, 6, false) // fills the rest
	require.Equal(t, []ackSent{{8, -1, 0}}, acks(s, f))
	arrive(s, f, 2, false) // duplicate
	require.Equal(t, []ackSent{{8, -1, 0}}, acks(s, f))
	arrive(s, f, 8, false)
	arrive(s, f, 9, false)
	require.Equal(t, []ackSent{{10, -1, 0}}, acks(s, f), "back to every second segment")
	// A hold that starts while an older timer event is pending: that event
	// fires first and re-arms; the ACK leaves 200 ms after this hold began.
	s.now = s.now.Add(100 * time.Millisecond)
	arrive(s, f, 10, false)
	due, ok = delAckTimer(t, s, f)
	require.True(t, ok)
	fireDelAck(s, f, due-1)
	require.Empty(t, acks(s, f))
	fireDelAck(s, f, due)
	require.Equal(t, []ackSent{{11, -1, 0}}, acks(s, f))

	// Without delayed ACKs every segment has its ACK.
	tcp := NS3TCP()
	tcp.Profile, tcp.AckEvery = "ack-every-segment", 1
	s, f = scripted(t, tcp)
	for seq := range int64(3) {
		arrive(s, f, seq, false)
	}
	require.Equal(t, []ackSent{{1, -1, 0}, {2, -1, 0}, {3, -1, 0}}, acks(s, f))
}

// TestQuickAcks protects Linux's quick-ack mode: the first QuickAcks
// segments are ACKed one by one, then every second one, and after a silence
// longer than MinRTO quick-acks start again.
func TestQuickAcks(t *testing.T) {
	tcp := LinuxTCP()
	tcp.Profile, tcp.QuickAcks = "linux-quick4", 4
	s, f := scripted(t, tcp)
	seq := int64(0)
	n := func(k int) int {
		for range k {
			arrive(s, f, seq, false)
			seq++
		}
		return len(acks(s, f))
	}
	require.Equal(t, 4, n(4), "quick-acks")
	require.Equal(t, 3, n(6), "then every second segment")
	s.now = s.now.Add(tcp.MinRTO + time.Millisecond)
	require.Equal(t, 4, n(4), "quick again after a silence")
	require.Equal(t, 1, n(2))
	_, ok := delAckTimer(t, s, f)
	require.False(t, ok)
	arrive(s, f, seq, false)
	due, ok := delAckTimer(t, s, f)
	require.True(t, ok)
	require.Equal(t, s.now.Add(40*time.Millisecond), due, "Linux's 40 ms minimum ATO")
}

// TestInOrderGoodput protects the goodput definition: bytes count when the
// receiver can deliver them in order, so data behind a hole counts when the
// hole is filled, not when it arrives.
func TestInOrderGoodput(t *testing.T) {
	s, f := scripted(t, NS3TCP())
	arrive(s, f, 0, false)
	require.Equal(t, f.payload, f.payloadBytes)
	arrive(s, f, 2, false)
	arrive(s, f, 3, false)
	require.Equal(t, f.payload, f.payloadBytes, "out-of-order data waits")
	arrive(s, f, 1, false)
	require.Equal(t, 4*f.payload, f.payloadBytes, "the gap fill releases three segments")
	arrive(s, f, 1, false)
	require.Equal(t, 4*f.payload, f.payloadBytes, "a duplicate adds nothing")
	require.Equal(t, uint64(1500-40-12), f.payload, "timestamps count as header")
}

// sendTo makes the flow send until highSent is n (cwnd n, nothing
// outstanding before).
func sendTo(s *Sim, f *flow, n int64) {
	f.cwnd = float64(n)
	s.trySend(f)
}

// TestGrowthPerAckAndABC protects window growth: once per ACK whatever it
// covers (RFC 5681, ns-3: +1 in slow start, +1/cwnd in congestion
// avoidance), or by segments ACKed (ABC, Linux), capped at ABCLimit in slow
// start.
func TestGrowthPerAckAndABC(t *testing.T) {
	abcL1 := LinuxTCP()
	abcL1.Profile, abcL1.ABCLimit = "linux-L1", 1
	for _, tc := range []struct {
		tcp    TCPConfig
		ss, ca float64 // cwnd after an ACK of 2 segments from 10 (slow start), from 20 (ssthresh 10)
	}{
		{NS3TCP(), 11, 20 + 1.0/20},
		{LinuxTCP(), 12, 20 + 2.0/20},
		{abcL1, 11, 20 + 2.0/20},
	} {
		s, f := scripted(t, tc.tcp)
		f.highSent = 40
		f.cwnd = 10
		s.grow(f, 2)
		require.InDelta(t, tc.ss, f.cwnd, 1e-12, "%s slow start", tc.tcp.Profile)
		f.cwnd, f.ssthresh = 20, 10
		s.grow(f, 2)
		require.InDelta(t, tc.ca, f.cwnd, 1e-12, "%s congestion avoidance", tc.tcp.Profile)
	}
}

// TestWholeSegments protects the sending rule: a window of 2.1 sends two
// whole segments (RFC 6675 (C), ns-3, Linux), three with PartialSegments.
func TestWholeSegments(t *testing.T) {
	for _, tc := range []struct {
		partial bool
		want    int64
	}{{false, 2}, {true, 3}} {
		tcp := NS3TCP()
		tcp.Profile, tcp.PartialSegments = "ns3-partial", tc.partial
		s, f := scripted(t, tcp)
		f.cwnd = 2.1
		s.trySend(f)
		require.Equal(t, tc.want, f.highSent, "partial %v", tc.partial)
	}
}

// TestInitialWindow protects the initial window: the flow's start sends
// InitialWindow segments at once.
func TestInitialWindow(t *testing.T) {
	for _, iw := range []int{10, 4} {
		tcp := LinuxTCP()
		tcp.Profile, tcp.InitialWindow = "linux-iw", iw
		s, f := scripted(t, tcp)
		s.sendEvent(f)
		require.EqualValues(t, iw, f.highSent)
	}
}

// isLostSlow is RFC 6675's IsLost written out: at least DupThresh SACKed
// segments above seq (all segments one MSS, so the byte rule is the same).
func isLostSlow(f *flow, seq int64) bool {
	n := 0
	for q := seq + 1; q < f.highSent; q++ {
		if f.sacked.has(q, f.sndUna) {
			n++
		}
	}
	return !f.sacked.has(seq, f.sndUna) && n >= dupThresh
}

// TestIsLost protects loss marking: on scripted SACKs and on random ones,
// the scoreboard presumes lost exactly the segments RFC 6675's IsLost
// names (checked against a slow count), and FACK marks by distance from
// the highest SACK instead.
func TestIsLost(t *testing.T) {
	lost := func(f *flow) []int64 {
		var out []int64
		for q := f.sndUna; q < f.lostEnd; q++ {
			if !f.sacked.has(q, f.sndUna) {
				out = append(out, q)
			}
		}
		return out
	}
	s, f := scripted(t, NS3TCP())
	sendTo(s, f, 10)
	f.onSack(5)
	f.onSack(7)
	require.Empty(t, lost(f))
	f.onSack(9)
	require.Equal(t, []int64{0, 1, 2, 3, 4}, lost(f), "three SACKed segments above")

	fack := NS3TCP()
	fack.Profile, fack.FACK = "ns3-fack", true
	s, f = scripted(t, fack)
	sendTo(s, f, 10)
	f.onSack(5)
	f.onSack(7)
	f.onSack(9)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 6}, lost(f), "FACK: more than three sequence numbers below the highest SACK")

	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 200 {
		s, f = scripted(t, NS3TCP())
		n := int64(5 + rng.IntN(60))
		sendTo(s, f, n)
		for step := 0; step < int(n) && f.sndUna < f.highSent; step++ {
			if rng.IntN(5) == 0 {
				f.advanceUna(min(f.sndUna+int64(1+rng.IntN(3)), f.highSent))
			} else {
				f.onSack(f.sndUna + rng.Int64N(f.highSent-f.sndUna))
			}
			for q := f.sndUna; q < f.highSent; q++ {
				got := q < f.lostEnd && !f.sacked.has(q, f.sndUna)
				require.Equal(t, isLostSlow(f, q), got, "trial %d step %d seq %d", trial, step, q)
			}
		}
	}
}

// lossAt sends n segments, then delivers the SACKs of segments from, from+1,
// … (segments below from are lost) until recovery starts; no new data
// leaves before that.
func lossAt(s *Sim, f *flow, n, from int64) {
	f.size = n
	sendTo(s, f, n)
	for q := from; !f.inRecovery; q++ {
		s.now = s.now.Add(time.Millisecond)
		s.onAck(f, 0, q, 0, s.now.Add(-40*time.Millisecond), false)
	}
	f.size = 0
}

// TestSsthreshBase protects what a Reno loss halves: with cwnd 24 and 20
// segments out, one lost and three SACKed, the pipe is 16 (ns-3: ssthresh
// 8), the window 24 (Linux: 12), the flight 20 (10).
func TestSsthreshBase(t *testing.T) {
	for _, tc := range []struct {
		base SsthreshBase
		want float64
	}{{SsthreshPipe, 8}, {SsthreshCwnd, 12}, {SsthreshFlight, 10}} {
		tcp := NS3TCP()
		tcp.Profile, tcp.Ssthresh = "ns3-ssthresh", tc.base
		s, f := scripted(t, tcp)
		f.size = 20
		sendTo(s, f, 20)
		f.cwnd = 24
		for q := int64(1); !f.inRecovery; q++ {
			s.onAck(f, 0, q, 0, s.now, false)
		}
		require.Equal(t, tc.want, f.ssthresh, "base %d", tc.base)
	}
}

// TestPRR protects Proportional Rate Reduction (RFC 6937, slow-start
// reduction bound): above ssthresh the sender sends ssthresh/RecoverFS of
// what is delivered (one lost of 20, ssthresh 10: one segment per two
// SACKs); far below it, at most one more than delivered per ACK; without
// PRR the window drops to ssthresh at once and the sender bursts.
func TestPRR(t *testing.T) {
	tcp := NS3TCP()
	tcp.Ssthresh = SsthreshCwnd
	tcp.Profile = "ns3-cwnd"
	s, f := scripted(t, tcp)
	lossAt(s, f, 20, 1)
	require.EqualValues(t, 20, f.recoverFS)
	require.Equal(t, 10.0, f.ssthresh)
	require.EqualValues(t, 1, f.prrOut, "the fast retransmit")
	q := int64(4)
	for ; f.pipe() > 11; q++ { // each SACK takes the pipe down by one
		s.onAck(f, 0, q, 0, s.now, false)
		want := max(1, f.prrDelivered*10/20) // floor(prr_delivered·ssthresh/RecoverFS), the retransmit first
		require.Equal(t, want, f.prrOut, "after the SACK of %d", q)
	}
	// At ssthresh the reduction bound keeps the pipe there: one out per
	// one delivered.
	for ; q < 20; q++ {
		s.onAck(f, 0, q, 0, s.now, false)
		require.EqualValues(t, 10, f.pipe(), "after the SACK of %d", q)
	}
	// The retransmission arrives: a full ACK ends recovery at ssthresh.
	s.onAck(f, f.highSent, -1, 0, s.now, false)
	require.False(t, f.inRecovery)
	require.Equal(t, 10.0, f.cwnd)

	// Twelve of twenty lost: the pipe (5 at entry) is far below ssthresh,
	// so each SACK lets out at most delivered + 1 = 2 segments.
	s, f = scripted(t, tcp)
	lossAt(s, f, 20, 12)
	require.EqualValues(t, 7, f.pipe(), "5 in flight, the retransmit and one more")
	for q := int64(15); q < 20 && f.pipe() < 10; q++ {
		before := f.prrOut
		s.onAck(f, 0, q, 0, s.now, false)
		require.LessOrEqual(t, f.prrOut-before, int64(2))
	}
	require.EqualValues(t, 10, f.pipe(), "back at ssthresh")

	noPRR := tcp
	noPRR.Profile, noPRR.PRR = "ns3-noprr", false
	s, f = scripted(t, noPRR)
	lossAt(s, f, 20, 12)
	require.Equal(t, 10.0, f.cwnd)
	require.EqualValues(t, 10, f.pipe(), "without PRR the window fills at once")
}

// TestSackedRetransInPipe protects ns-3's count of retransmissions: with
// segments 0 and 1 of 20 lost and both retransmitted, the SACK of the
// retransmitted 1 (the retransmitted 0 lost again) leaves the pipe as it
// was under the ns3 profile, which forgets the retransmitted mark only on a
// cumulative ACK, and takes one segment out of it under RFC 6675's count;
// the cumulative ACK past both forgets the mark in either case.
func TestSackedRetransInPipe(t *testing.T) {
	rfc := NS3TCP()
	rfc.Profile, rfc.SackedRetransInPipe = "ns3-rfc6675-pipe", false
	for _, tc := range []struct {
		tcp  TCPConfig
		drop int64 // how much the SACK of the retransmission lowers the pipe
	}{{NS3TCP(), 0}, {rfc, 1}} {
		s, f := scripted(t, tc.tcp)
		lossAt(s, f, 20, 2)
		require.True(t, f.retxd.has(0, f.sndUna), "%s: the fast retransmit", tc.tcp)
		if !f.retxd.has(1, f.sndUna) {
			s.sendData(f, 1)
		}
		f.cwnd = 0 // send nothing more: watch the count alone
		before := f.pipe()
		s.onAck(f, 0, 1, 0, s.now, true)
		require.True(t, f.sacked.has(1, f.sndUna))
		require.Equal(t, before-tc.drop, f.pipe(), "%s: the pipe after the SACK of the retransmitted 1", tc.tcp)
		s.onAck(f, 2, -1, 0, s.now, true)
		require.Zero(t, f.retxd.n, "%s: no retransmission left below the cumulative ACK", tc.tcp)
	}
}

// TestRTO protects the retransmission timer: RFC 6298's
// max(srtt + 4·rttvar, MinRTO) with ns-3's 1 s and Linux's
// srtt + max(4·rttvar, 200 ms); Karn's rule (no sample from an ACK of a
// retransmission) under ns-3 only; a deadline moved earlier fires there,
// not at the stale backed-off one; a deadline moved later keeps one event.
func TestRTO(t *testing.T) {
	for _, tc := range []struct {
		tcp  TCPConfig
		want time.Duration
		karn bool
	}{{NS3TCP(), time.Second, true}, {LinuxTCP(), 210 * time.Millisecond, false}} {
		s, f := scripted(t, tc.tcp)
		s.rttSample(f, 10*time.Millisecond) // srtt 10 ms, rttvar 5 ms
		require.Equal(t, tc.want, f.rto, tc.tcp.Profile)
		sendTo(s, f, 4)
		s.now = s.now.Add(100 * time.Millisecond)
		s.onAck(f, 1, -1, 0, s.now.Add(-100*time.Millisecond), true)
		require.Equal(t, tc.karn, f.srtt == 10*time.Millisecond, "%s: Karn's rule", tc.tcp.Profile)
	}

	// The stale-deadline case: a timeout backs the RTO off to 2 s; the ACK
	// of the retransmission, 100 ms later, gives a sample (Linux: through
	// the timestamp) and an RTO of 300 ms, so the next timeout is due at
	// 1.4 s, not at the backed-off 3 s.
	s, f := scripted(t, LinuxTCP())
	var fired []aqm.Time
	runTimers := func(until aqm.Time) {
		for s.ag.len() > 0 && s.ag.ev[0].at <= until {
			e := s.ag.pop()
			if e.kind != evRTO {
				continue
			}
			s.now = e.at
			before := f.timeouts
			s.rtoEvent(f, e.arg)
			if f.timeouts > before {
				fired = append(fired, e.at)
			}
		}
		s.now = until
	}
	sendTo(s, f, 4)
	runTimers(epoch.Add(1100 * time.Millisecond))
	require.Equal(t, []aqm.Time{epoch.Add(time.Second)}, fired, "the initial RTO of 1 s")
	require.Equal(t, 2*time.Second, f.rto, "backed off")
	s.onAck(f, 1, -1, 0, epoch.Add(time.Second), true)
	require.Equal(t, 300*time.Millisecond, f.rto)
	runTimers(epoch.Add(5 * time.Second))
	require.Equal(t, epoch.Add(1400*time.Millisecond), fired[1], "the timer moved earlier")

	// A deadline moved later keeps the pending event, which re-arms itself.
	s, f = scripted(t, NS3TCP())
	sendTo(s, f, 4)
	gen := f.rtoGen
	s.now = s.now.Add(500 * time.Millisecond)
	s.restartRTO(f)
	require.Equal(t, gen, f.rtoGen, "no new event for a later deadline")
	fired = nil
	runTimers(epoch.Add(3 * time.Second))
	require.Equal(t, epoch.Add(1500*time.Millisecond), fired[0], "one RTO after the restart")
}

// TestTCPProfiles protects the two profiles, typed from the references'
// defaults (ns-3 3.37's TcpSocketBase and TcpSocket attributes; Linux 6.x),
// the zero TCPConfig as Linux's, and validation naming the field.
func TestTCPProfiles(t *testing.T) {
	require.Equal(t, TCPConfig{Profile: "ns3", AckEvery: 2, DelayedAckTimeout: 200 * time.Millisecond,
		Growth: GrowPerAck, Ssthresh: SsthreshPipe, SackedRetransInPipe: true, PRR: true, MinRTO: time.Second, Karn: true,
		TimestampBytes: 12, InitialWindow: 10}, NS3TCP())
	require.Equal(t, TCPConfig{Profile: "linux", AckEvery: 2, DelayedAckTimeout: 40 * time.Millisecond, QuickAcks: 16,
		Growth: GrowABC, Ssthresh: SsthreshCwnd, PRR: true, MinRTO: 200 * time.Millisecond, LinuxRTO: true,
		TimestampBytes: 12, InitialWindow: 10, HyStart: true, AckAggregation: true}, LinuxTCP())
	for _, name := range []string{"ns3", "linux"} {
		p, err := TCPProfile(name)
		require.NoError(t, err)
		require.Equal(t, name, p.Profile)
	}
	_, err := TCPProfile("bsd")
	require.ErrorContains(t, err, "bsd")

	cfg := Config{RateBps: 1e6, Duration: time.Second}
	require.NoError(t, cfg.normalize())
	require.Equal(t, LinuxTCP(), cfg.TCP)
	for field, tcp := range map[string]TCPConfig{
		"TCP.Profile":           {AckEvery: 1, MinRTO: time.Second},
		"TCP.AckEvery":          {Profile: "x", MinRTO: time.Second},
		"TCP.DelayedAckTimeout": {Profile: "x", AckEvery: 2, MinRTO: time.Second},
		"TCP.MinRTO":            {Profile: "x", AckEvery: 1, MinRTO: 61 * time.Second},
		"TCP.TimestampBytes":    {Profile: "x", AckEvery: 1, MinRTO: time.Second, TimestampBytes: -1},
		"TCP.Ssthresh":          {Profile: "x", AckEvery: 1, MinRTO: time.Second, Ssthresh: 9},
	} {
		cfg := Config{RateBps: 1e6, Duration: time.Second, TCP: tcp}
		require.ErrorContains(t, cfg.normalize(), field)
	}
}

// TestGrowthCountsDeliveredData protects what an ACK counts as delivered
// (RFC 6937's DeliveredData, Linux's acked_sacked): segments newly
// acknowledged, cumulatively or by SACK, but not those SACKed before. A
// cumulative ACK that jumps over SACKed data opens a slow-start window by
// the one segment it delivers, and PRR counts it once. (The window grows
// on ACKs that move the cumulative point; SACK-only ACKs do not open it.)
func TestGrowthCountsDeliveredData(t *testing.T) {
	s, f := scripted(t, LinuxTCP())
	f.size = 20
	sendTo(s, f, 20)
	f.cwnd = 20
	s.onAck(f, 0, 1, 0, s.now, false)
	s.onAck(f, 0, 2, 0, s.now, false) // two SACKs: no loss yet
	require.False(t, f.inRecovery)
	require.Equal(t, 20.0, f.cwnd)
	s.onAck(f, 3, -1, 0, s.now, false) // segment 0 arrives late: one segment delivered
	require.Equal(t, 21.0, f.cwnd, "not 23: segments 1 and 2 were delivered when SACKed")

	tcp := NS3TCP()
	tcp.Profile, tcp.Ssthresh = "ns3-cwnd", SsthreshCwnd
	s, f = scripted(t, tcp)
	lossAt(s, f, 20, 1) // segment 0 lost; recovery starts on the SACK of 3
	require.EqualValues(t, 1, f.prrDelivered)
	s.onAck(f, 4, -1, 0, s.now, false) // the retransmission arrives: 0..3 acknowledged
	require.True(t, f.inRecovery, "a partial ACK: recovery goes on")
	require.EqualValues(t, 2, f.prrDelivered, "one segment delivered, not four")
}

// TestTCPConfigJSON protects the profile in the JSON output: it reads as
// names and comes back equal.
func TestTCPConfigJSON(t *testing.T) {
	for _, c := range []TCPConfig{NS3TCP(), LinuxTCP()} {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		require.Contains(t, string(b), `"Growth":"`+c.Growth.String()+`"`)
		require.Contains(t, string(b), `"Ssthresh":"`+c.Ssthresh.String()+`"`)
		var back TCPConfig
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, c, back)
	}
	var g Growth
	require.Error(t, g.UnmarshalText([]byte("cubic")))
	var sb SsthreshBase
	require.Error(t, sb.UnmarshalText([]byte("half")))
}
