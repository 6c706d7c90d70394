package sim

import (
	"math"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// BBR version 1, written from the IETF draft's description
// (draft-cardwell-iccrg-bbr-congestion-control) and the constants of Linux's
// v1 (gains in 1/256 there): a model of the path (the windowed maximum of
// delivery-rate samples, BtlBw, and the minimum RTT, RTprop) sets a pacing
// rate and a window; four states probe it.

// BBR constants.
const (
	bbrHighGain      = 739.0 / 256 // 2/ln 2, rounded up as Linux does: Startup's pacing and cwnd gain
	bbrDrainGain     = 88.0 / 256  // ≈ 1/2.885: Drain's pacing gain
	bbrCwndGain      = 2.0         // ProbeBW's cwnd gain
	bbrBwWindow      = 10          // rounds in the BtlBw max filter (cycle length + 2)
	bbrMinRTTWindow  = 10 * time.Second
	bbrProbeRTTTime  = 200 * time.Millisecond
	bbrMinCwnd       = 4    // packets: cwnd floor, and ProbeRTT's cwnd
	bbrFullBwThresh  = 1.25 // Startup ends after 3 rounds without 25% growth
	bbrFullBwRounds  = 3
	bbrPacingMargin  = 0.99  // pace 1% below the estimate
	bbrMinTSORateBps = 1.2e6 // below it the send quantum is one packet
	bbrCycleLen      = 8
	bbrCycleRand     = 7 // random start phase: 7 − rand[0, 7) before the first advance

	// ACK aggregation (TCPConfig.AckAggregation), Linux's constants.
	bbrExtraAckedRounds = 5                      // rounds per slot of the two-slot max filter
	bbrExtraAckedMax    = 100 * time.Millisecond // cap: this long at BtlBw
	bbrAckEpochReset    = 1 << 20                // packets: an epoch this long restarts
)

// bbrCycleGains is ProbeBW's pacing-gain cycle.
var bbrCycleGains = [bbrCycleLen]float64{1.25, 0.75, 1, 1, 1, 1, 1, 1}

type bbrMode uint8

const (
	bbrStartup bbrMode = iota
	bbrDrain
	bbrProbeBW
	bbrProbeRTT
)

// sendRec is the delivery-rate snapshot taken when a segment is sent.
type sendRec struct {
	delivered     int64
	deliveredTime aqm.Time
	firstSent     aqm.Time
	sent          aqm.Time
	appLimited    bool
}

// bbrState is a BBR flow's model and state machine.
type bbrState struct {
	mode bbrMode

	// delivery-rate estimation (connection counters and per-segment records)
	delivered     int64
	deliveredTime aqm.Time
	firstSent     aqm.Time
	appLimited    int64     // nonzero: app-limited until delivered passes it
	recs          []sendRec // ring indexed by seq, len a power of two
	lostTotal     int64

	// packet-timed rounds
	nextRoundDelivered int64
	rounds             uint64
	roundStart         bool

	// BtlBw: an exact sliding maximum over the last bbrBwWindow rounds
	bwRound [bbrBwWindow]uint64
	bwVal   [bbrBwWindow]float64 // packets per second
	maxBw   float64

	// RTprop (0: no sample yet)
	minRTT      time.Duration
	seeded      bool // bbrSeed has run
	minRTTStamp aqm.Time

	// Startup exit
	fullBw        float64
	fullBwCount   int
	fullBwReached bool

	pacingGain, cwndGain float64
	pacingRate           float64 // bytes per second

	// ProbeBW
	cycleIdx   int
	cycleStamp aqm.Time

	// ProbeRTT
	probeRTTDone      aqm.Time
	probeRTTRoundDone bool

	// ACK aggregation: the epoch's start and packets ACKed since, and the
	// largest excess in each of two slots that take turns every
	// bbrExtraAckedRounds rounds (a max over the last 5 to 10 rounds)
	ackEpochStart  aqm.Time
	ackEpochAcked  int64
	extraAcked     [2]float64
	extraAckedIdx  int
	extraAckedRnds int

	// recovery
	priorCwnd    float64
	conservation bool
	probeRTTs    uint64 // ProbeRTT episodes entered (for tests)
}

// bbrInit sets up a BBR flow's state before it starts.
func (s *Sim) bbrInit(f *flow, start aqm.Time) {
	f.bbr = &bbrState{}
	b := f.bbr
	b.recs = make([]sendRec, 64)
	b.minRTTStamp = start
	b.mode, b.pacingGain, b.cwndGain = bbrStartup, bbrHighGain, bbrHighGain
	b.deliveredTime = start
	b.ackEpochStart = start
}

// bbrSeed runs when the flow starts: it takes the handshake's RTT, which
// is the base RTT plus the wait of a packet behind the bottleneck's current
// backlog, as srtt, and paces at high gain × initial window / srtt, as
// Linux does after the handshake. min_rtt stays unknown until the first
// RTT sample (seeding it with the base RTT would make a flow that starts
// behind a standing queue underestimate its BDP for 10 s).
func (s *Sim) bbrSeed(f *flow) {
	b := f.bbr
	b.seeded = true
	wait := float64(s.q.Backlog()+f.pktBytes) * 8e9 / s.cfg.BottleneckBps()
	hs := f.rtt + time.Duration(wait)
	f.srtt, f.rttvar = hs, hs/2
	s.setRTOValue(f)
	b.pacingRate = bbrHighGain * initCwnd * float64(f.pktBytes) / hs.Seconds()
}

// bbrRec returns the send record of seq, growing the ring to hold
// [sndUna, highSent].
func (f *flow) bbrRec(seq int64) *sendRec {
	b := f.bbr
	if need := f.highSent - f.sndUna + 1; need > int64(len(b.recs)) || seq-f.sndUna >= int64(len(b.recs)) {
		n := len(b.recs)
		for int64(n) < max(need, seq-f.sndUna+1) {
			n *= 2
		}
		nr := make([]sendRec, n)
		for q := f.sndUna; q < f.highSent; q++ {
			nr[q&int64(n-1)] = b.recs[q&int64(len(b.recs)-1)]
		}
		b.recs = nr
	}
	return &b.recs[seq&int64(len(b.recs)-1)]
}

// bbrOnSend snapshots the delivery state for a segment being sent.
func (s *Sim) bbrOnSend(f *flow, seq int64) {
	b := f.bbr
	if f.pipe() == 0 {
		b.firstSent, b.deliveredTime = s.now, s.now
	}
	*f.bbrRec(seq) = sendRec{delivered: b.delivered, deliveredTime: b.deliveredTime, firstSent: b.firstSent,
		sent: s.now, appLimited: b.appLimited != 0}
}

// rateSample is what one ACK tells about the delivery rate.
type rateSample struct {
	priorDelivered int64
	priorTime      aqm.Time
	sendElapsed    time.Duration
	appLimited     bool
	has            bool
}

// bbrDelivered counts segment seq as delivered and keeps the most recently
// sent segment's snapshot in rs.
func (f *flow) bbrDelivered(seq int64, rs *rateSample) {
	b := f.bbr
	rec := f.bbrRec(seq)
	b.delivered++
	if !rs.has || rec.delivered > rs.priorDelivered {
		rs.has = true
		rs.priorDelivered, rs.priorTime, rs.appLimited = rec.delivered, rec.deliveredTime, rec.appLimited
		rs.sendElapsed = rec.sent.Sub(rec.firstSent)
		b.firstSent = rec.sent
	}
}

// bbrOnAck processes one ACK for a BBR flow: the scoreboard as for the other
// senders, then the model, the state machine, the pacing rate and the
// window. BBR never reduces its window multiplicatively: loss only brings
// packet conservation for one round, and lost packets out of the window.
func (s *Sim) bbrOnAck(f *flow, ack, sack int64, echo aqm.Time, rexmit bool) {
	b := f.bbr
	priorInflight := f.pipe()
	lostBefore := b.lostTotal
	var rs rateSample
	d0 := b.delivered
	advanced := ack > f.sndUna
	if advanced {
		for seq := f.sndUna; seq < min(ack, f.highSent); seq++ {
			if !f.sacked.has(seq, f.sndUna) {
				f.bbrDelivered(seq, &rs)
			}
		}
		if !rexmit || !s.cfg.TCP.Karn {
			s.rttSample(f, s.now.Sub(echo))
		}
		f.advanceUna(ack)
	}
	if sack >= f.sndUna && sack < f.highSent && !f.sacked.has(sack, f.sndUna) {
		f.bbrDelivered(sack, &rs)
		f.onSack(sack)
	}
	acked := b.delivered - d0
	lost := b.lostTotal - lostBefore
	if acked > 0 {
		b.deliveredTime = s.now
		if b.appLimited != 0 && b.delivered > b.appLimited {
			b.appLimited = 0
		}
	}

	// Recovery: BBR saves its window on entry, conserves packets for a
	// round, and restores the saved window on exit.
	switch {
	case f.inRecovery && ack > f.recover:
		f.inRecovery = false
		b.conservation = false
		f.cwnd = max(f.cwnd, b.priorCwnd)
	case !f.inRecovery && f.lostHoles > 0 && ack > f.recover:
		f.reductions++
		f.recover = f.highSent - 1
		f.inRecovery = true
		b.priorCwnd = f.cwnd
		b.conservation = true
		b.nextRoundDelivered = b.delivered
		f.cwnd = float64(f.pipe() + acked)
		if seq := f.nextLost(); seq >= 0 {
			s.sendData(f, seq)
		}
	}

	// The model: rounds, BtlBw, RTprop.
	b.roundStart = false
	if rs.has && rs.priorDelivered >= b.nextRoundDelivered {
		b.nextRoundDelivered = b.delivered
		b.rounds++
		b.roundStart = true
		b.conservation = false
	}
	if rs.has && acked > 0 {
		interval := max(rs.sendElapsed, s.now.Sub(rs.priorTime))
		if interval >= b.minRTT && interval > 0 {
			bw := float64(b.delivered-rs.priorDelivered) / interval.Seconds()
			if !rs.appLimited || bw >= b.maxBw {
				b.updateMaxBw(bw)
			}
			if s.cfg.TCP.AckAggregation {
				b.updateAckAggregation(s.now, acked, f.cwnd)
			}
		}
	}
	if echo > 0 && acked > 0 {
		r := s.now.Sub(echo)
		expired := s.now.Sub(b.minRTTStamp) > bbrMinRTTWindow
		if r > 0 && (b.minRTT == 0 || r <= b.minRTT || expired) {
			b.minRTT, b.minRTTStamp = r, s.now
		}
		if expired && b.mode != bbrProbeRTT {
			b.probeRTTs++
			b.mode = bbrProbeRTT
			b.pacingGain, b.cwndGain = 1, 1
			b.priorCwnd = max(b.priorCwnd, f.cwnd)
			if !f.inRecovery {
				b.priorCwnd = f.cwnd
			}
			b.probeRTTDone = 0
		}
	}

	s.bbrUpdateMode(f, rs, priorInflight, lost)
	s.bbrSetPacing(f)
	s.bbrSetCwnd(f, acked, lost)

	if advanced {
		// Only cumulative progress restarts the timer (as Linux rearms it
		// on data ACKed): SACKs alone must not postpone the timeout that
		// repairs a lost retransmission.
		if f.size > 0 && f.sndUna >= f.size {
			s.finish(f)
			return
		}
		s.restartRTO(f)
	}
	if s.cfg.Trace != nil {
		s.cfg.Trace(s.now.Sub(epoch), int(f.id), f.cwnd)
	}
	s.trySend(f)
}

// updateMaxBw adds a sample to the sliding maximum over the last
// bbrBwWindow rounds (Linux keeps Nichols' three-sample approximation of
// it; the exact maximum differs only in when an old peak expires).
func (b *bbrState) updateMaxBw(bw float64) {
	i := b.rounds % bbrBwWindow
	if b.bwRound[i] != b.rounds {
		b.bwRound[i], b.bwVal[i] = b.rounds, 0
	}
	b.bwVal[i] = max(b.bwVal[i], bw)
	b.maxBw = 0
	for j := range bbrBwWindow {
		if b.bwRound[j]+bbrBwWindow > b.rounds {
			b.maxBw = max(b.maxBw, b.bwVal[j])
		}
	}
}

// updateAckAggregation measures, for an ACK at now that delivered acked
// packets, how far deliveries since the epoch's start run ahead of BtlBw:
// an epoch restarts whenever they fall behind (or after 2^20 packets), and
// the excess, at most cwnd, feeds the windowed maximum. Linux runs it on
// ACKs with a valid rate sample, as here.
func (b *bbrState) updateAckAggregation(now aqm.Time, acked int64, cwnd float64) {
	if b.roundStart {
		if b.extraAckedRnds++; b.extraAckedRnds >= bbrExtraAckedRounds {
			b.extraAckedRnds = 0
			b.extraAckedIdx ^= 1
			b.extraAcked[b.extraAckedIdx] = 0
		}
	}
	expected := math.Floor(b.maxBw * now.Sub(b.ackEpochStart).Seconds())
	if float64(b.ackEpochAcked) <= expected || b.ackEpochAcked+acked >= bbrAckEpochReset {
		b.ackEpochAcked, b.ackEpochStart, expected = 0, now, 0
	}
	b.ackEpochAcked += acked
	extra := min(float64(b.ackEpochAcked)-expected, math.Floor(cwnd))
	b.extraAcked[b.extraAckedIdx] = max(b.extraAcked[b.extraAckedIdx], extra)
}

// aggregationCwnd is the window added for ACK aggregation: the windowed
// maximum excess, at most 100 ms at BtlBw, once the pipe is full.
func (b *bbrState) aggregationCwnd() float64 {
	if !b.fullBwReached {
		return 0
	}
	return min(max(b.extraAcked[0], b.extraAcked[1]), math.Floor(b.maxBw*bbrExtraAckedMax.Seconds()))
}

// bdp is the window for gain g in packets (the initial window before any
// RTT sample).
func (b *bbrState) bdp(g float64) float64 {
	if b.maxBw == 0 || b.minRTT == 0 {
		return initCwnd
	}
	return math.Ceil(b.maxBw * b.minRTT.Seconds() * g)
}

// quantize adds Linux's allowance for send quanta: three TSO-sized bursts,
// rounded up to even, and two more packets in the 1.25 phase.
func (f *flow) bbrQuantize(w float64) float64 {
	b := f.bbr
	goal := 2.0
	if b.pacingRate*8 < bbrMinTSORateBps {
		goal = 1
	}
	// pacing rate × 2^-10 s, at most 64 KB, in packets.
	goal = min(127, max(math.Floor(min(b.pacingRate/1024, 65536)/float64(f.pktBytes)), goal))
	w += 3 * goal
	w = math.Ceil(w/2) * 2
	if b.mode == bbrProbeBW && b.cycleIdx == 0 {
		w += 2
	}
	return w
}

func (f *flow) bbrInflight(g float64) float64 { return f.bbrQuantize(f.bbr.bdp(g)) }

// bbrUpdateMode runs the state machine for one ACK.
func (s *Sim) bbrUpdateMode(f *flow, rs rateSample, priorInflight, lost int64) {
	b := f.bbr
	// Full pipe: on round starts with non-app-limited samples.
	if !b.fullBwReached && b.roundStart && rs.has && !rs.appLimited {
		if b.maxBw >= b.fullBw*bbrFullBwThresh {
			b.fullBw, b.fullBwCount = b.maxBw, 0
		} else if b.fullBwCount++; b.fullBwCount >= bbrFullBwRounds {
			b.fullBwReached = true
		}
	}
	if b.mode == bbrStartup && b.fullBwReached {
		b.mode = bbrDrain
		b.pacingGain, b.cwndGain = bbrDrainGain, bbrHighGain
		f.ssthresh = f.bbrInflight(1)
	}
	if b.mode == bbrDrain && float64(f.pipe()) <= f.bbrInflight(1) {
		s.bbrEnterProbeBW(f)
	}
	if b.mode == bbrProbeBW {
		full := s.now.Sub(b.cycleStamp) > b.minRTT
		adv := false
		switch g := bbrCycleGains[b.cycleIdx]; {
		case g > 1:
			adv = full && (lost > 0 || float64(priorInflight) >= f.bbrInflight(g))
		case g < 1:
			adv = full || float64(priorInflight) <= f.bbrInflight(1)
		default:
			adv = full
		}
		if adv {
			b.cycleIdx = (b.cycleIdx + 1) % bbrCycleLen
			b.cycleStamp = s.now
			b.pacingGain = bbrCycleGains[b.cycleIdx]
		}
	}
	if b.mode == bbrProbeRTT {
		// Samples taken while draining to 4 packets are app-limited.
		b.appLimited = max(b.delivered+f.pipe(), 1)
		if b.probeRTTDone == 0 && f.pipe() <= bbrMinCwnd {
			b.probeRTTDone = s.now.Add(bbrProbeRTTTime)
			b.probeRTTRoundDone = false
			b.nextRoundDelivered = b.delivered
		} else if b.probeRTTDone != 0 {
			if b.roundStart {
				b.probeRTTRoundDone = true
			}
			if b.probeRTTRoundDone && s.now > b.probeRTTDone {
				b.minRTTStamp = s.now
				f.cwnd = max(f.cwnd, b.priorCwnd)
				if b.fullBwReached {
					s.bbrEnterProbeBW(f)
				} else {
					b.mode = bbrStartup
					b.pacingGain, b.cwndGain = bbrHighGain, bbrHighGain
				}
			}
		}
	}
}

// bbrEnterProbeBW starts the gain cycle at a random phase other than the
// 0.75 one, from the run's random stream.
func (s *Sim) bbrEnterProbeBW(f *flow) {
	b := f.bbr
	b.mode = bbrProbeBW
	b.cwndGain = bbrCwndGain
	b.cycleIdx = (bbrCycleLen - 1 - s.rng.IntN(bbrCycleRand) + 1) % bbrCycleLen
	b.cycleStamp = s.now
	b.pacingGain = bbrCycleGains[b.cycleIdx]
}

// bbrSetPacing sets the pacing rate to gain × BtlBw less the margin; until
// the pipe is full it only rises.
func (s *Sim) bbrSetPacing(f *flow) {
	b := f.bbr
	if b.maxBw == 0 {
		return
	}
	r := b.pacingGain * b.maxBw * float64(f.pktBytes) * bbrPacingMargin
	if b.fullBwReached || r > b.pacingRate {
		b.pacingRate = r
	}
}

// bbrSetCwnd moves the window toward gain × BDP plus the ACK-aggregation
// and send-quantum allowances.
func (s *Sim) bbrSetCwnd(f *flow, acked, lost int64) {
	b := f.bbr
	if acked > 0 {
		if lost > 0 {
			f.cwnd = max(f.cwnd-float64(lost), 1)
		}
		target := f.bbrQuantize(b.bdp(b.cwndGain) + b.aggregationCwnd())
		switch {
		case b.conservation:
			f.cwnd = max(f.cwnd, float64(f.pipe()+acked))
		case b.fullBwReached:
			f.cwnd = min(f.cwnd+float64(acked), target)
		case f.cwnd < target || b.delivered < initCwnd:
			f.cwnd += float64(acked)
		}
		f.cwnd = max(f.cwnd, bbrMinCwnd)
	}
	if b.mode == bbrProbeRTT {
		f.cwnd = min(f.cwnd, bbrMinCwnd)
	}
	f.cwnd = min(f.cwnd, maxCwnd)
}

// bbrOnRTO handles a retransmission timeout: the TCP core has set the
// window to one packet; BBR remembers the window it had, restarts its
// full-pipe count and treats the timeout as a round's end.
func (f *flow) bbrOnRTO(prior float64) {
	b := f.bbr
	b.priorCwnd = max(b.priorCwnd, prior)
	b.fullBw, b.fullBwCount = 0, 0
	b.conservation = false
	b.nextRoundDelivered = b.delivered
}
