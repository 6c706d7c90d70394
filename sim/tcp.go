package sim

import (
	"math"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// TCP constants.
const (
	initCwnd  = 10                    // RFC 6928 initial window, segments
	maxRTO    = 60 * time.Second      // RFC 6298 upper bound
	initRTO   = time.Second           // RFC 6298 initial RTO
	renoBeta  = 0.5                   // Reno multiplicative decrease
	cubicBeta = 0.7                   // RFC 9438 §4.6 beta_cubic
	cubicC    = 0.4                   // RFC 9438 §5 C
	pragueG   = 1.0 / 16              // DCTCP/Prague EWMA gain g (RFC 8257 §4.2)
	pragueR0  = 25 * time.Millisecond // TCP Prague's reference (virtual) RTT
	// pragueTransition is how many rounds after slow start Prague waits
	// before RTT independence takes effect (v0.7; v0.6 waited 500), and
	// pragueMaxIndepRTT the srtt above which it is off.
	pragueTransition  = 4
	pragueMaxIndepRTT = 100 * time.Millisecond
	// RFC 9406 §4.3 constants.
	hsMinRTTThresh = 4 * time.Millisecond
	hsMaxRTTThresh = 16 * time.Millisecond
	hsMinSamples   = 8          // N_RTT_SAMPLE
	hsCSSDivisor   = 4          // CSS_GROWTH_DIVISOR
	hsCSSRounds    = 5          // CSS_ROUNDS
	dupThresh      = 3          // RFC 5681/6675 DupThresh
	paceSS         = 2.0        // Linux pacing ratio in slow start
	paceCA         = 1.2        // Linux pacing ratio in congestion avoidance
	hashMul        = 0x9e3779b1 // Knuth's multiplicative hash (2^32/phi), spreads flow ids
	minCwnd        = 2.0        // floor of ssthresh and reduced windows, segments
	maxCwnd        = 1 << 20    // a sanity cap, far above any scenario's BDP
)

// cubicAlphaRenoFriendly is RFC 9438 §4.3's alpha_cubic = 3(1-beta)/(1+beta):
// with beta 0.7 the Reno-friendly estimate grows 0.529 segments per RTT.
var cubicAlphaRenoFriendly = 3 * (1 - cubicBeta) / (1 + cubicBeta)

// flow is one sender and its receiver.
type flow struct {
	id       int32
	kind     Kind
	class    Class
	short    bool
	group    string
	groupIdx int32   // index into the run's group table
	payload  uint64  // payload bytes of one data packet (size minus headers)
	ecn      aqm.ECN // codepoint of the packets it sends
	hash     uint32
	rtt      time.Duration
	pktBytes int
	paced    bool
	start    aqm.Time
	stop     aqm.Time // zero: end of run
	stopped  bool
	done     bool    // a short flow that completed
	size     int64   // segments to send; 0 = unlimited
	cbrRate  float64 // CBR bits per second
	interval time.Duration
	reverse  bool // its data crosses the reverse queue, its ACKs the forward one

	// sender
	nextSeq          int64 // CBR and ping numbering
	sndUna, highSent int64 // first unacknowledged; one past the highest sent
	recover          int64 // end of the current recovery episode (RFC 6582/6675)
	cwrEnd           int64 // no new window reduction until the ACK reaches it
	cwnd, ssthresh   float64
	inRecovery       bool
	// PRR (RFC 6937): data delivered and sent since recovery began, and
	// the data outstanding when it began.
	prrDelivered, prrOut, recoverFS int64
	perAck                          bool // grows once per ACK (TCPConfig.Growth)
	fack                            bool // FACK loss marking (TCPConfig.FACK)
	// keepRetx keeps SACKed retransmissions in retxd, and so in the pipe,
	// until the cumulative ACK passes them (TCPConfig.SackedRetransInPipe).
	keepRetx bool

	// SACK scoreboard (RFC 6675) over [sndUna, highSent)
	sacked, retxd     seqSet   // SACKed segments; retransmitted and not yet SACKed/ACKed
	lostEnd           int64    // segments below it that are not SACKed are presumed lost
	lostHoles         int64    // how many of those there are
	highSack          int64    // one past the highest SACKed segment
	top               [3]int64 // the three highest SACKed segments, highest first (-1: none)
	retxNext          int64    // where the search for the next lost segment resumes
	srtt, rttvar, rto time.Duration
	rtoDeadline       aqm.Time // zero: timer disarmed
	rtoEventAt        aqm.Time // when the newest timer event fires (zero: none pending)
	rtoGen            int64    // the newest timer event's number; older events are stale
	sendScheduled     bool
	nextPace          aqm.Time

	// CUBIC (RFC 9438)
	wmax, k, west, cwndEpoch float64
	epochStart               aqm.Time // zero: no epoch

	// Prague
	alpha               float64
	ackedWin, markedWin int64
	winEnd              int64
	noRTTIndep          bool
	lastAlpha           aqm.Time // last α update
	lastReduce          aqm.Time // last ECN reduction
	caRounds            int      // α rounds since slow start ended

	// HyStart++ (RFC 9406)
	hystart             bool
	hsRoundEnd          int64
	hsLastMin, hsCurMin time.Duration // per-round minimum RTTs (0: none yet)
	hsSamples           int
	hsCSS               bool
	hsCSSBaseline       time.Duration
	hsCSSRounds         int

	// BBR
	bbr *bbrState // nil unless Kind is BBR

	// receiver
	rcvNext int64
	ooo     seqSet
	rcvPkts int64
	// delayed ACKs: in-order segments not yet ACKed, CE marks among the
	// segments the next ACK covers, the timestamp it echoes (and whether
	// that segment was a retransmission), when the held ACK is due (zero:
	// none held) and when the timer event fires (zero: none pending),
	// quick-acks left and the last arrival.
	ackPending  int
	ackCE       int
	ackEcho     aqm.Time
	ackRexmit   bool
	dackAt      aqm.Time
	dackEventAt aqm.Time
	quick       int
	lastRcv     aqm.Time

	// return path
	line deque[lineEntry]

	// statistics (after warmup)
	sent, retx, drops, marks, timeouts, reductions uint64
	goodBytes, payloadBytes                        uint64
	bins                                           []uint64 // payload per GoodputBin after warmup (long-lived flows)
	fct                                            time.Duration
}

func newFlow(id int32, fs FlowSpec, short bool, mss int, tcp *TCPConfig) *flow {
	hystart := (fs.HyStart && fs.Kind == Reno) || ((fs.HyStart || tcp.HyStart) && fs.Kind == CUBIC)
	f := &flow{
		id: id, kind: fs.Kind, short: short, rtt: fs.RTT, pktBytes: fs.PacketBytes,
		size: fs.SizePackets, cbrRate: fs.RateBps, interval: fs.Interval, paced: fs.Paced,
		hystart: hystart, noRTTIndep: fs.PragueNoRTTIndependence,
		hash: uint32(id+1) * hashMul,
		cwnd: float64(tcp.InitialWindow), ssthresh: math.Inf(1), rto: initRTO, recover: -1, alpha: 1,
		perAck: tcp.Growth == GrowPerAck && fs.Kind != Prague, fack: tcp.FACK, keepRetx: tcp.SackedRetransInPipe,
		top: [3]int64{-1, -1, -1}, quick: tcp.QuickAcks,
	}
	if f.rtt == 0 {
		f.rtt = DefaultRTT
	}
	if f.pktBytes == 0 {
		f.pktBytes = mss
		if f.kind == Ping {
			f.pktBytes = pingBytes
		}
	}
	if f.interval == 0 {
		f.interval = defaultPingInterval
	}
	switch f.kind {
	case Prague:
		f.ecn = aqm.ECT1
		f.paced = true
		f.class = ClassL4S
	case BBR:
		f.class = ClassClassic
		f.paced = true
	case CBR:
		f.class = ClassUDP
		if fs.ECN {
			f.ecn = aqm.ECT0
		}
	case Ping:
		f.class = ClassPing
	default:
		f.class = ClassClassic
		if fs.ECN {
			f.ecn = aqm.ECT0
		}
	}
	if short {
		f.class = ClassShort
	}
	return f
}

// seqSet is the receiver's set of out-of-order segments: a bitmap ring over
// [rcvNext, rcvNext+len), grown when a segment lands beyond it.
type seqSet struct {
	bits []uint64
	n    int // set bits
}

// has reports whether seq is in the set; base is the window's start (the
// set only holds [base, base+capacity)).
func (b *seqSet) has(seq, base int64) bool {
	if seq-base >= int64(len(b.bits)*64) || seq < base {
		return false
	}
	i := uint64(seq) & uint64(len(b.bits)*64-1)
	return b.bits[i>>6]&(1<<(i&63)) != 0
}

func (b *seqSet) flip(seq int64) {
	i := uint64(seq) & uint64(len(b.bits)*64-1)
	b.bits[i>>6] ^= 1 << (i & 63)
}

// add inserts seq, known to be above base and not yet present.
func (b *seqSet) add(seq, base int64) {
	for seq-base >= int64(len(b.bits)*64) {
		old := *b
		nb := max(16, 2*len(b.bits))
		for int64(nb*64) <= seq-base {
			nb *= 2
		}
		b.bits = make([]uint64, nb)
		if old.n > 0 {
			for s := base; s < base+int64(len(old.bits)*64); s++ {
				if old.has(s, base) {
					b.flip(s)
				}
			}
		}
	}
	b.flip(seq)
	b.n++
}

// del removes seq, known to be present.
func (b *seqSet) del(seq int64) {
	b.flip(seq)
	b.n--
}

// receive takes data segment seq, advances rcvNext over any segments that
// were waiting, and returns how many segments that delivers in order to the
// application (0 for out-of-order data and duplicates).
func (f *flow) receive(seq int64) (inOrder int64) {
	f.rcvPkts++
	switch {
	case seq == f.rcvNext:
		from := f.rcvNext
		f.rcvNext++
		for f.ooo.n > 0 && f.ooo.has(f.rcvNext, f.rcvNext) {
			f.ooo.del(f.rcvNext)
			f.rcvNext++
		}
		return f.rcvNext - from
	case seq > f.rcvNext && !f.ooo.has(seq, f.rcvNext):
		f.ooo.add(seq, f.rcvNext)
	}
	return 0
}

// pipe is RFC 6675's estimate of the segments in the network: outstanding,
// minus those SACKed or presumed lost, plus retransmissions in flight.
func (f *flow) pipe() int64 {
	return (f.highSent - f.sndUna) - int64(f.sacked.n) - f.lostHoles + int64(f.retxd.n)
}

// raiseLost moves the lost boundary up to `to` (capped at highSent): every
// outstanding segment below it that is not SACKed is presumed lost.
func (f *flow) raiseLost(to int64) {
	to = min(to, f.highSent)
	f.lostEnd = max(f.lostEnd, f.sndUna)
	for ; f.lostEnd < to; f.lostEnd++ {
		if !f.sacked.has(f.lostEnd, f.sndUna) {
			f.lostHoles++
			if f.bbr != nil {
				f.bbr.lostTotal++
			}
		}
	}
}

// advanceUna moves the cumulative ACK point to ack, forgetting the
// scoreboard below it, and returns how many of those segments were not
// SACKed before (the data this ACK newly delivers).
func (f *flow) advanceUna(ack int64) (fresh int64) {
	for seq := f.sndUna; seq < ack; seq++ {
		if f.sacked.has(seq, f.sndUna) {
			f.sacked.del(seq)
			if f.keepRetx && f.retxd.has(seq, f.sndUna) {
				f.retxd.del(seq)
			}
			continue
		}
		fresh++
		if seq < f.lostEnd {
			f.lostHoles--
		}
		if f.retxd.has(seq, f.sndUna) {
			f.retxd.del(seq)
		}
	}
	f.sndUna = ack
	f.lostEnd = max(f.lostEnd, ack)
	f.retxNext = max(f.retxNext, ack)
	return fresh
}

// onSack records that the receiver holds segment seq out of order, reports
// whether that is news, and presumes holes lost: by RFC 6675's IsLost, every
// un-SACKed segment with at least DupThresh SACKed segments above it, which
// (all segments being one MSS) are those below the third-highest SACKed
// segment; with FACK, every hole more than DupThresh sequence numbers below
// the highest SACKed segment.
func (f *flow) onSack(seq int64) bool {
	if seq < f.sndUna || seq >= f.highSent || f.sacked.has(seq, f.sndUna) {
		return false
	}
	f.sacked.add(seq, f.sndUna)
	if seq < f.lostEnd {
		f.lostHoles--
	}
	if !f.keepRetx && f.retxd.has(seq, f.sndUna) {
		f.retxd.del(seq)
	}
	f.highSack = max(f.highSack, seq+1)
	if f.fack {
		f.raiseLost(f.highSack - dupThresh)
		return true
	}
	t := &f.top
	for i := range t {
		if t[i] < f.sndUna {
			t[i] = -1 // acknowledged since: no longer SACKed
		}
	}
	switch {
	case seq > t[0]:
		t[0], t[1], t[2] = seq, t[0], t[1]
	case seq > t[1]:
		t[1], t[2] = seq, t[1]
	case seq > t[2]:
		t[2] = seq
	}
	if t[2] >= 0 {
		f.raiseLost(t[2])
	}
	return true
}

// nextLost returns the lowest lost segment not yet retransmitted, or -1
// (RFC 6675 NextSeg rule 1).
func (f *flow) nextLost() int64 {
	f.retxNext = max(f.retxNext, f.sndUna)
	for ; f.retxNext < f.lostEnd; f.retxNext++ {
		if !f.sacked.has(f.retxNext, f.sndUna) && !f.retxd.has(f.retxNext, f.sndUna) {
			return f.retxNext
		}
	}
	return -1
}

// trySend sends as many segments as the window, the pacing rate and the
// flow's size allow: lost segments first, then new data (RFC 6675 §5).
func (s *Sim) trySend(f *flow) {
	partial := s.cfg.TCP.PartialSegments
	for !f.stopped && !f.done {
		if p := float64(f.pipe()); (partial && p >= f.cwnd) || (!partial && p+1 > f.cwnd+1e-9) {
			return
		}
		seq := f.nextLost()
		if seq < 0 {
			if f.size > 0 && f.highSent >= f.size {
				return
			}
			seq = f.highSent
		}
		if f.paced && s.now < f.nextPace {
			if !f.sendScheduled {
				f.sendScheduled = true
				s.ag.push(event{at: f.nextPace, kind: evSend, flow: f.id})
			}
			return
		}
		s.sendData(f, seq)
		if f.paced {
			f.nextPace = max(f.nextPace, s.now) + aqm.Time(f.paceGap())
		}
	}
}

// paceGap is the time between paced packets: srtt/(ratio·cwnd), or a
// BBR flow's packet size over its pacing rate.
func (f *flow) paceGap() time.Duration {
	if f.kind == BBR {
		return time.Duration(float64(f.pktBytes) / f.bbr.pacingRate * 1e9)
	}
	rtt := f.srtt
	if rtt == 0 {
		rtt = f.rtt
	}
	ratio := paceCA
	if f.cwnd < f.ssthresh {
		ratio = paceSS
	}
	if f.kind == Prague {
		// TCP Prague paces at MTU·cwnd/srtt, doubled below half ssthresh.
		ratio = 1
		if f.cwnd < f.ssthresh/2 {
			ratio = 2
		}
	}
	return time.Duration(float64(rtt) / (ratio * f.cwnd))
}

// armRTO starts the retransmission timer if it is not running.
func (s *Sim) armRTO(f *flow) {
	if f.rtoDeadline == 0 {
		s.setRTO(f, s.now.Add(f.rto))
	}
}

// restartRTO re-arms the timer one RTO from now (RFC 6298 §5.3), or stops
// it when nothing is outstanding.
func (s *Sim) restartRTO(f *flow) {
	if f.sndUna >= f.highSent {
		f.rtoDeadline = 0
		return
	}
	s.setRTO(f, s.now.Add(f.rto))
}

// setRTO moves the deadline. A later deadline keeps the pending event,
// which finds the deadline moved and re-arms itself for it; an earlier one
// schedules a fresh event and makes the pending one stale (rtoGen), so the
// timer fires at the new deadline, not at an old backed-off one.
func (s *Sim) setRTO(f *flow, at aqm.Time) {
	f.rtoDeadline = at
	if f.rtoEventAt == 0 || at < f.rtoEventAt {
		f.rtoGen++
		f.rtoEventAt = at
		s.ag.push(event{at: at, kind: evRTO, flow: f.id, arg: f.rtoGen})
	}
}

func (s *Sim) rtoEvent(f *flow, gen int64) {
	if gen != f.rtoGen {
		return // superseded by an earlier deadline
	}
	f.rtoEventAt = 0
	if f.rtoDeadline == 0 || f.done {
		return
	}
	if s.now < f.rtoDeadline {
		s.setRTO(f, f.rtoDeadline)
		return
	}
	// Timeout (RFC 5681 §3.1, RFC 6298 §5, RFC 6675 §5.1): every
	// outstanding segment not SACKed is presumed lost, retransmissions
	// included; restart from one segment in slow start.
	if s.measuring() {
		f.timeouts++
	}
	prior := f.cwnd
	f.congestionEvent(s.now, s.lossBase(f))
	f.cwnd = 1
	f.inRecovery = false
	f.recover = f.highSent - 1
	f.cwrEnd = f.highSent
	for seq := f.sndUna; seq < f.highSent && f.retxd.n > 0; seq++ {
		if f.retxd.has(seq, f.sndUna) {
			f.retxd.del(seq)
		}
	}
	f.retxNext = f.sndUna
	f.raiseLost(f.highSent)
	f.rto = min(2*f.rto, maxRTO)
	f.rtoDeadline = 0
	f.nextPace = 0
	if f.kind == BBR {
		// Linux's Loss state: BBR restores the saved window when the
		// recovery point is acknowledged.
		f.bbrOnRTO(prior)
		f.inRecovery = true
	}
	s.trySend(f)
	if f.rtoDeadline == 0 && f.sndUna < f.highSent {
		s.armRTO(f)
	}
}

// lossBase is what a Reno loss response halves (TCPConfig.Ssthresh).
func (s *Sim) lossBase(f *flow) float64 {
	switch s.cfg.TCP.Ssthresh {
	case SsthreshCwnd:
		return f.cwnd
	case SsthreshFlight:
		return float64(f.highSent - f.sndUna)
	}
	return float64(f.pipe())
}

// congestionEvent sets ssthresh (and CUBIC's state) for a loss or an ECN
// echo: Reno halves base (see lossBase; the window for an ECN echo).
func (f *flow) congestionEvent(now aqm.Time, base float64) {
	f.reductions++
	f.hsCSS = false
	switch f.kind {
	case CUBIC:
		// RFC 9438 §4.7 fast convergence, §4.6 multiplicative decrease.
		if f.cwnd < f.wmax {
			f.wmax = f.cwnd * (1 + cubicBeta) / 2
		} else {
			f.wmax = f.cwnd
		}
		f.ssthresh = max(f.cwnd*cubicBeta, minCwnd)
		f.epochStart = 0
	default:
		// Reno; Prague's loss fallback is the same halving.
		f.ssthresh = max(base*renoBeta, minCwnd)
	}
}

// onAck processes one ACK: the cumulative ACK, the SACK of the segment
// that triggered it (sack < 0: none), how many of the segments it covers
// arrived CE-marked, the timestamp echo, and whether the echoed segment was
// a retransmission.
func (s *Sim) onAck(f *flow, ack, sack int64, ceN int, echo aqm.Time, rexmit bool) {
	if f.done {
		return
	}
	if f.kind == BBR {
		s.bbrOnAck(f, ack, sack, echo, rexmit)
		return
	}
	// delivered is RFC 6937's DeliveredData: segments newly acknowledged,
	// cumulatively or by SACK, not counting those SACKed before.
	ce := ceN > 0
	delivered := int64(0)
	advanced := ack > f.sndUna
	if advanced {
		if !rexmit || !s.cfg.TCP.Karn {
			s.rttSample(f, s.now.Sub(echo))
		}
		delivered = f.advanceUna(ack)
	}
	if sack >= 0 && f.onSack(sack) {
		delivered++
	}
	newly := delivered
	if f.kind == Prague {
		f.ackedWin += max(delivered, int64(ceN))
		f.markedWin += int64(ceN)
	}
	switch {
	case f.inRecovery && ack > f.recover:
		// Full ACK: leave fast recovery (RFC 6675 §5 step C, RFC 6937).
		f.inRecovery = false
		f.cwnd = f.ssthresh
	case !f.inRecovery && f.lostHoles > 0 && ack > f.recover:
		s.enterRecovery(f, delivered)
	case f.inRecovery:
		if s.cfg.TCP.PRR {
			f.prrAck(delivered)
		}
	case advanced:
		s.ecnResponse(f, ack, ce)
		switch {
		case f.perAck:
			newly = 1 // once per ACK of new data, whatever it covers (RFC 5681, ns-3)
		case f.kind == Prague && f.cwnd >= f.ssthresh:
			newly = max(newly-int64(ceN), 0) // Prague grows on the data delivered unmarked
		}
		s.grow(f, newly)
	default:
		s.ecnResponse(f, ack, ce)
	}
	if f.kind == Prague && ack >= f.winEnd {
		s.pragueWindowEnd(f)
	}
	if advanced {
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

// enterRecovery starts fast recovery on the ACK that revealed a loss
// (RFC 6675 §5 step 4): ssthresh from the loss response, the recovery point
// at the highest segment sent, the window set by PRR (RFC 6937) or to
// ssthresh, and the first lost segment retransmitted at once.
func (s *Sim) enterRecovery(f *flow, delivered int64) {
	f.congestionEvent(s.now, s.lossBase(f))
	f.recover = f.highSent - 1
	f.cwrEnd = f.highSent
	f.inRecovery = true
	if s.cfg.TCP.PRR {
		f.prrDelivered, f.prrOut = 0, 0
		f.recoverFS = f.highSent - f.sndUna
		f.prrAck(delivered)
	} else {
		f.cwnd = f.ssthresh
	}
	if seq := f.nextLost(); seq >= 0 {
		s.sendData(f, seq)
	}
}

// prrAck is RFC 6937's per-ACK step with the slow-start reduction bound:
// while the pipe is above ssthresh, send in proportion ssthresh/RecoverFS
// of the data delivered; below it, grow back towards ssthresh by at most
// one segment more than was delivered. The window becomes pipe + sndcnt.
// Counts are in segments and sndcnt keeps its fraction, as ns-3's byte
// counts do; the whole-segment rule then sends its integer part (Linux
// rounds the proportional part up per packet).
func (f *flow) prrAck(delivered int64) {
	f.prrDelivered += delivered
	pipe := float64(f.pipe())
	var sndcnt float64
	if pipe > f.ssthresh {
		sndcnt = float64(f.prrDelivered)*f.ssthresh/float64(max(f.recoverFS, 1)) - float64(f.prrOut)
	} else {
		limit := float64(max(f.prrDelivered-f.prrOut, delivered) + 1)
		sndcnt = min(f.ssthresh-pipe, limit)
	}
	f.cwnd = pipe + max(sndcnt, 0)
}

// ecnResponse reacts to a CE echo at most once per window of data: a
// Classic ECN sender like a loss (RFC 3168 §6.1.2), a scalable sender by
// alpha/2 (RFC 8257 §3.3).
func (s *Sim) ecnResponse(f *flow, ack int64, ce bool) {
	if !ce || f.inRecovery || ack < f.cwrEnd {
		return
	}
	switch {
	case f.kind == Prague:
		if f.rttIndependent() && f.lastReduce != 0 && s.now.Sub(f.lastReduce) < pragueR0 {
			return // at most one reduction per virtual RTT
		}
		f.lastReduce = s.now
		f.reductions++
		f.cwnd = max(f.cwnd*(1-f.alpha/2), minCwnd)
		f.ssthresh = f.cwnd
	case f.ecn != aqm.NotECT:
		f.congestionEvent(s.now, f.cwnd)
		f.cwnd = f.ssthresh
	default:
		return
	}
	f.cwrEnd = f.highSent
}

// pragueWindowEnd closes an observation window (about one RTT): alpha is
// the EWMA of the fraction of CE-echoing ACKs (RFC 8257 §3.3).
//
// With RTT independence the window lasts at least the virtual RTT
// max(RTT, 25 ms): until then the counts keep accumulating.
func (s *Sim) pragueWindowEnd(f *flow) {
	if f.rttIndependent() && s.now.Sub(f.lastAlpha) < pragueR0 {
		return
	}
	if f.ackedWin > 0 {
		frac := float64(f.markedWin) / float64(f.ackedWin)
		f.alpha += pragueG * (frac - f.alpha)
	}
	f.lastAlpha = s.now
	if f.cwnd >= f.ssthresh {
		f.caRounds++
	}
	f.ackedWin, f.markedWin = 0, 0
	f.winEnd = f.highSent
}

// rttIndependent reports whether a Prague flow's RTT independence is in
// force: on, past slow start and the transition rounds, srtt ≤ 100 ms.
func (f *flow) rttIndependent() bool {
	return f.kind == Prague && !f.noRTTIndep && f.caRounds >= pragueTransition && f.srtt <= pragueMaxIndepRTT
}

// pragueAI is Prague's additive increase per own RTT: (srtt/R0)² below
// the reference RTT once RTT-independent (the rate then grows as for a
// flow at 25 ms), else 1 segment.
func (f *flow) pragueAI() float64 {
	if !f.rttIndependent() || f.srtt >= pragueR0 {
		return 1
	}
	x := float64(f.srtt) / float64(pragueR0)
	return x * x
}

// grow opens the window for an ACK that newly delivers `newly` segments
// (not counting segments SACKed before, as Linux counts them: a cumulative
// ACK that jumps over SACKed data must not open the window by all of it).
func (s *Sim) grow(f *flow, newly int64) {
	if newly <= 0 {
		return
	}
	n := float64(newly)
	if f.perAck {
		n = 1
	}
	if f.cwnd < f.ssthresh {
		// Slow start: n segments, at most ABCLimit (RFC 3465's L) per ACK.
		if l := s.cfg.TCP.ABCLimit; l > 0 {
			n = min(n, float64(l))
		}
		if f.hystart {
			s.hystartGrow(f, n)
			return
		}
		f.cwnd += n
		if f.cwnd > f.ssthresh && !math.IsInf(f.ssthresh, 1) {
			f.cwnd = f.ssthresh
		}
		f.cwnd = min(f.cwnd, maxCwnd)
		return
	}
	switch f.kind {
	case CUBIC:
		s.cubicGrow(f, n)
	case Prague:
		f.cwnd += n * f.pragueAI() / f.cwnd
	default:
		f.cwnd += n / f.cwnd
	}
	f.cwnd = min(f.cwnd, maxCwnd)
}

// hystartGrow is slow start under HyStart++ (RFC 9406 §4.2-4.3) for an ACK
// worth n segments of slow-start growth: rounds
// end when the ACK passes the data outstanding at the round's start; a
// round whose minimum RTT (after 8 samples) exceeds the previous round's by
// clamp(min/8, 4 ms, 16 ms) starts conservative slow start (growth / 4),
// which returns to slow start if the RTT falls back below its baseline and
// ends in congestion avoidance after 5 rounds.
func (s *Sim) hystartGrow(f *flow, n float64) {
	if f.sndUna >= f.hsRoundEnd {
		f.hsRoundEnd = f.highSent
		f.hsLastMin, f.hsCurMin, f.hsSamples = f.hsCurMin, 0, 0
		if f.hsCSS {
			if f.hsCSSRounds++; f.hsCSSRounds >= hsCSSRounds {
				f.hsCSS = false
				f.ssthresh = f.cwnd
				return
			}
		}
	}
	if f.hsCSS {
		f.cwnd += n / hsCSSDivisor
	} else {
		f.cwnd += n
	}
	f.cwnd = min(f.cwnd, maxCwnd)
}

// hystartSample feeds one RTT sample to HyStart++ during slow start.
func (f *flow) hystartSample(r time.Duration) {
	if !f.hystart || f.cwnd >= f.ssthresh {
		return
	}
	if f.hsCurMin == 0 || r < f.hsCurMin {
		f.hsCurMin = r
	}
	f.hsSamples++
	if f.hsSamples < hsMinSamples || f.hsLastMin == 0 {
		return
	}
	if !f.hsCSS {
		thresh := min(max(f.hsLastMin/8, hsMinRTTThresh), hsMaxRTTThresh)
		if f.hsCurMin >= f.hsLastMin+thresh {
			f.hsCSS, f.hsCSSBaseline, f.hsCSSRounds = true, f.hsCurMin, 0
		}
	} else if f.hsCurMin < f.hsCSSBaseline {
		f.hsCSS = false // the delay rise was spurious
	}
}

// cubicGrow is RFC 9438 §4.2-4.4 for one ACK of n segments.
func (s *Sim) cubicGrow(f *flow, n float64) {
	if f.epochStart == 0 {
		f.epochStart = s.now
		f.cwndEpoch = f.cwnd
		if f.cwnd < f.wmax {
			f.k = math.Cbrt((f.wmax - f.cwnd) / cubicC) // RFC 9438 eq. 2
		} else {
			f.k = 0
			f.wmax = f.cwnd
		}
		f.west = f.cwnd
	}
	rtt := f.srtt
	if rtt == 0 {
		rtt = f.rtt
	}
	t := s.now.Sub(f.epochStart).Seconds()
	wcubic := func(t float64) float64 { d := t - f.k; return cubicC*d*d*d + f.wmax } // eq. 1
	// Reno-friendly estimate (§4.3), alpha 1 once it passes Wmax.
	alpha := cubicAlphaRenoFriendly
	if f.west >= f.wmax {
		alpha = 1
	}
	f.west += alpha * n / f.cwnd
	if wcubic(t) < f.west {
		f.cwnd = f.west // Reno-friendly region
		return
	}
	// Concave or convex region: move towards W_cubic(t+RTT), clamped to
	// [cwnd, 1.5·cwnd] (§4.2).
	target := min(max(wcubic(t+rtt.Seconds()), f.cwnd), 1.5*f.cwnd)
	f.cwnd += (target - f.cwnd) / f.cwnd * n
}

// rttSample updates srtt, rttvar and rto (RFC 6298 §2).
func (s *Sim) rttSample(f *flow, r time.Duration) {
	if r <= 0 {
		return
	}
	if h := s.m.groupRTT[f.groupIdx]; h != nil && s.measuring() {
		h.Record(r)
	}
	f.hystartSample(r)
	if f.srtt == 0 {
		f.srtt, f.rttvar = r, r/2
	} else {
		d := f.srtt - r
		if d < 0 {
			d = -d
		}
		f.rttvar = (3*f.rttvar + d) / 4
		f.srtt = (7*f.srtt + r) / 8
	}
	s.setRTOValue(f)
}

// setRTOValue computes the RTO from srtt and rttvar: RFC 6298's
// max(srtt + 4·rttvar, MinRTO), or Linux's srtt + max(4·rttvar, MinRTO)
// (TCPConfig.LinuxRTO); at most 60 s.
func (s *Sim) setRTOValue(f *flow) {
	t := &s.cfg.TCP
	if t.LinuxRTO {
		f.rto = min(f.srtt+max(4*f.rttvar, t.MinRTO), maxRTO)
		return
	}
	f.rto = min(max(f.srtt+4*f.rttvar, t.MinRTO), maxRTO)
}

// finish completes a short flow.
func (s *Sim) finish(f *flow) {
	f.done = true
	f.rtoDeadline = 0
	f.fct = s.now.Sub(f.start)
	if f.start >= s.warm {
		s.m.fct.Record(f.fct)
		s.m.fcts = append(s.m.fcts, FCT{Packets: f.size, Seconds: f.fct.Seconds()})
	}
}
