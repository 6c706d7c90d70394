package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Class is a traffic class whose queueing delays are reported separately.
type Class uint8

const (
	ClassClassic Class = iota // long-lived Reno and CUBIC flows
	ClassL4S                  // long-lived Prague flows
	ClassUDP                  // CBR sources
	ClassShort                // Poisson short flows
	ClassPing                 // pings
	numClasses
)

var classNames = [numClasses]string{"classic", "l4s", "udp", "short", "ping"}

// String returns the class's name.
func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", c)
}

// epoch is the virtual time of the run's start: non-zero, as aqm.Time 0
// means "unset".
const epoch = aqm.Time(time.Second)

// pkt is one entry of the simulator's packet table. A data packet's slot is
// reused for the ACK (or ping echo) it triggers, and freed when that reaches
// the sender or the packet is lost. The queue carries only the slot index.
type pkt struct {
	sent   aqm.Time // data: when the sender sent it; ACK: the send time it echoes (the timestamp)
	seq    int64    // data: segment number; ACK: cumulative ACK (next expected)
	sack   int64    // ACK: the out-of-order segment it reports, or -1
	flow   int32
	size   uint32
	ecn    aqm.ECN // current codepoint (CE once marked)
	ceN    uint8   // ACK: how many of the segments it covers arrived with CE
	rexmit bool    // data: a retransmission; ACK: the echoed segment was one
	ack    bool    // an ACK or echo crossing a queue (two-way paths only)
}

// lineEntry is an ACK (or echo) travelling back to its sender.
type lineEntry struct {
	at   aqm.Time
	slot int32
}

// deque is a growable FIFO ring (amortised allocation only while it grows).
type deque[T any] struct {
	buf     []T
	head, n int
}

func (d *deque[T]) push(v T) {
	if d.n == len(d.buf) {
		nb := make([]T, max(16, 2*len(d.buf)))
		for i := range d.n {
			nb[i] = d.buf[(d.head+i)%len(d.buf)]
		}
		d.buf, d.head = nb, 0
	}
	d.buf[(d.head+d.n)&(len(d.buf)-1)] = v
	d.n++
}

func (d *deque[T]) front() T { return d.buf[d.head] }

func (d *deque[T]) pop() T {
	v := d.buf[d.head]
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	return v
}

// Sim is one run of the dumbbell. Build it with [New], run it with [Sim.Run].
type Sim struct {
	cfg  Config
	q    aqm.Queue[uint64]
	now  aqm.Time
	end  aqm.Time
	warm aqm.Time // metrics start
	ag   agenda
	rng  *rand.Rand

	pkts []pkt
	free []int32

	flows []*flow

	// rev is the reverse direction (reverse.go), nil on a one-direction
	// path; fwd counts the forward link's packets and fwdAckDrops the
	// reverse flows' ACKs it lost.
	rev         *revLink
	fwd         linkCount
	fwdAckDrops uint64

	// link
	rate      float64 // bits per second
	nsPerByte float64
	busy      bool
	cur       int32
	htb       *htb // nil: no shaper
	// capLink, paced and pingObs are the hooks of trace.go: a capacity
	// trace, a queue that paces itself, a queue that wants the pings.
	capLink      *traceLink
	paced        aqm.Paced
	pacedPending bool
	pingObs      pingObserver
	pktObs       packetObserver // autorate_passive.go

	// time-weighted queue length
	qLastT       aqm.Time
	qLen, qBytes int
	qAreaPkts    float64 // packet·ns, after warmup
	qAreaBytes   float64

	m metrics
}

// New builds a run. newQueue receives the DropFunc the queue must call for
// packets it drops after accepting them, and returns the bottleneck queue.
func New(cfg Config, newQueue func(onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error)) (*Sim, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg}
	q, err := newQueue(s.queueDrop)
	if err != nil {
		return nil, err
	}
	if q == nil {
		return nil, fmt.Errorf("sim: the queue constructor returned nil")
	}
	s.q = q
	if cfg.Reverse != nil {
		rq, err := newQueue(s.revDrop)
		if err != nil {
			return nil, err
		}
		if rq == nil {
			return nil, fmt.Errorf("sim: the queue constructor returned nil for the reverse queue")
		}
		s.rev = &revLink{q: rq, nsPerByte: 8e9 / cfg.Reverse.RateBps, ackBytes: uint32(cfg.Reverse.AckBytes)}
		s.rev.paced, _ = rq.(aqm.Paced)
	}
	s.now = epoch
	s.end = epoch.Add(cfg.Duration)
	s.warm = epoch.Add(cfg.Warmup)
	s.qLastT = epoch
	// Two PCG words from the seed: the same seed always gives the same run.
	s.rng = rand.New(rand.NewPCG(cfg.Seed, 0x5851f42d4c957f2d))
	s.setRate(cfg.RateBps)
	s.initHooks()
	if cfg.Shaper != nil {
		s.htb = newHTB(*cfg.Shaper)
		s.htb.last = epoch
	}
	s.pkts = make([]pkt, 0, 1024)
	s.m.init(&s.cfg, s.end.Sub(s.warm))

	for _, fs := range cfg.Flows {
		n := max(fs.Count, 1)
		for range n {
			start := epoch.Add(fs.Start)
			if cfg.StartJitter > 0 {
				start += aqm.Time(s.rng.Int64N(int64(cfg.StartJitter)))
			}
			s.addFlow(fs, false, start)
		}
	}
	for i, rc := range cfg.RateChanges {
		s.ag.push(event{at: epoch.Add(rc.At), kind: evRate, arg: int64(i)})
	}
	if cfg.Short.PerSecond > 0 {
		s.ag.push(event{at: epoch.Add(s.expGap(cfg.Short.PerSecond)), kind: evShort})
	}
	s.ag.push(event{at: epoch.Add(cfg.SampleInterval), kind: evSample})
	if cfg.QueueSampleInterval > 0 {
		s.ag.push(event{at: s.warm, kind: evQueueGrid})
	}
	return s, nil
}

func (s *Sim) setRate(r float64) {
	s.rate = r
	s.nsPerByte = 8e9 / r
}

func (s *Sim) expGap(perSecond float64) time.Duration {
	return time.Duration(s.rng.ExpFloat64() / perSecond * 1e9)
}

func (s *Sim) addFlow(fs FlowSpec, short bool, start aqm.Time) *flow {
	f := newFlow(int32(len(s.flows)), fs, short, s.cfg.MSS, &s.cfg.TCP)
	f.group = fs.Group
	f.reverse = fs.Reverse
	f.groupIdx = s.m.groupIndex(fs.Group)
	f.payload = uint64(max(f.pktBytes-s.cfg.HeaderBytes-s.cfg.TCP.TimestampBytes, 0))
	if f.kind == CBR || f.kind == Ping {
		f.payload = uint64(f.pktBytes)
	}
	if !short {
		f.bins = make([]uint64, s.m.nBins)
	}
	if f.kind == BBR {
		s.bbrInit(f, start)
	}
	f.start = start
	if fs.Stop > 0 {
		f.stop = epoch.Add(fs.Stop)
		s.ag.push(event{at: f.stop, kind: evStop, flow: f.id})
	}
	s.flows = append(s.flows, f)
	s.ag.push(event{at: start, kind: evSend, flow: f.id})
	return f
}

// alloc returns a free packet slot.
func (s *Sim) alloc() int32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	s.pkts = append(s.pkts, pkt{})
	return int32(len(s.pkts) - 1)
}

func (s *Sim) release(slot int32) { s.free = append(s.free, slot) }

func (s *Sim) measuring() bool { return s.now >= s.warm }

// Run runs the simulation to its end and returns the metrics.
func (s *Sim) Run() *Result {
	wall := time.Now()
	var events uint64
	for s.ag.len() > 0 {
		e := s.ag.pop()
		if e.at > s.end {
			break
		}
		s.now = e.at
		events++
		switch e.kind {
		case evTxDone:
			s.txDone()
		case evAck:
			s.ackArrives(s.flows[e.flow])
		case evSend:
			s.sendEvent(s.flows[e.flow])
		case evRTO:
			s.rtoEvent(s.flows[e.flow], e.arg)
		case evDelAck:
			s.delAckEvent(s.flows[e.flow])
		case evStop:
			s.flows[e.flow].stopped = true
		case evShort:
			s.shortArrival()
		case evRate:
			s.setRate(s.cfg.RateChanges[e.arg].RateBps)
		case evShaper:
			s.shaperWake()
		case evPaced:
			s.pacedWake()
		case evRevTxDone:
			s.revTxDone()
		case evRevPaced:
			s.revPacedWake()
		case evQueueGrid:
			// Under a device queue, the grid samples the queue disc
			// alone, as ns-3's queue-disc statistics do.
			if d, ok := s.q.(*deviceQueue); ok {
				s.m.queueGrid(d.disc.Len())
			} else {
				s.m.queueGrid(s.q.Len())
			}
			s.ag.push(event{at: s.now.Add(s.cfg.QueueSampleInterval), kind: evQueueGrid})
		case evSample:
			s.sample()
			s.ag.push(event{at: s.now.Add(s.cfg.SampleInterval), kind: evSample})
		}
	}
	s.now = s.end
	s.noteQueue()
	return s.result(events, time.Since(wall))
}

// ---- bottleneck link ----

// enqueue offers a data packet to the bottleneck queue.
func (s *Sim) enqueue(slot int32) {
	pk := &s.pkts[slot]
	f := s.flows[pk.flow]
	s.fwd.offered++
	v := s.q.Enqueue(aqm.Packet[uint64]{Payload: uint64(slot), Meta: aqm.Meta{Size: pk.size, Hash: f.hash, ECN: pk.ecn}}, s.now)
	s.noteQueue()
	if !v.Accepted() {
		s.fwd.refused++
		s.lost(slot)
		return
	}
	if !s.busy {
		s.startTx()
	}
}

// queueDrop is the queue's DropFunc: an accepted packet dropped later.
func (s *Sim) queueDrop(p aqm.Packet[uint64], _ aqm.Verdict) { s.lost(int32(p.Payload)) }

// lost accounts for a packet dropped anywhere and frees its slot: data
// counts as a drop of its flow, an ACK or echo in the ACK drops of the
// queue that lost it.
func (s *Sim) lost(slot int32) {
	pk := &s.pkts[slot]
	f := s.flows[pk.flow]
	if pk.ack {
		s.lostAck(f, slot)
		return
	}
	s.m.dropsAll++
	if s.measuring() {
		f.drops++
		s.m.drops++
	}
	s.release(slot)
}

func (s *Sim) startTx() {
	if s.htb != nil && s.q.Len() > 0 && s.shaperBlocks() {
		s.busy = false
		return
	}
	p, ok := s.q.Dequeue(s.now)
	s.noteQueue()
	if !ok {
		s.busy = false
		s.wakePaced()
		return
	}
	slot := int32(p.Payload)
	pk := &s.pkts[slot]
	f := s.flows[pk.flow]
	soj := p.Enqueued.Since(s.now)
	marked := p.ECN == aqm.CE && pk.ecn != aqm.CE
	if marked {
		pk.ecn = aqm.CE
	}
	if s.measuring() && !pk.ack {
		s.m.delay[f.class].Record(soj)
		s.m.delayAll.Record(soj)
		if marked {
			f.marks++
			s.m.marks++
		}
	}
	s.m.winSoj += float64(soj)
	s.m.winSojN++
	s.busy = true
	s.cur = slot
	if s.htb != nil {
		s.htb.charge(pk.size)
	}
	s.ag.push(event{at: s.txEnd(pk.size), kind: evTxDone})
}

func (s *Sim) txDone() {
	slot := s.cur
	pk := &s.pkts[slot]
	s.fwd.sent++
	if s.measuring() {
		s.m.txBytes += uint64(pk.size)
	}
	s.deliver(slot)
	s.startTx()
}

// noteQueue integrates the queue length over time (for the average queue)
// and takes the new length.
func (s *Sim) noteQueue() {
	if s.now > s.qLastT {
		if s.now > s.warm {
			from := max(s.qLastT, s.warm)
			dt := float64(s.now - from)
			s.qAreaPkts += float64(s.qLen) * dt
			s.qAreaBytes += float64(s.qBytes) * dt
		}
		s.qLastT = s.now
	}
	s.qLen, s.qBytes = s.q.Len(), s.q.Backlog()
}

// deliver hands a packet that left the bottleneck to its receiver.
func (s *Sim) deliver(slot int32) {
	pk := &s.pkts[slot]
	f := s.flows[pk.flow]
	if pk.ack {
		s.toLine(f, slot)
		return
	}
	switch f.kind {
	case CBR:
		f.rcvPkts++
		s.goodput(f, uint64(pk.size), f.payload)
		s.release(slot)
		return
	case Ping:
		s.toReturn(f, slot)
		return
	}
	s.receiveData(f, slot)
}

// receiveData is the TCP receiver: it takes data segment slot, delivers
// what is now in order to the application, and ACKs at once or holds the
// ACK (TCPConfig.AckEvery, DelayedAckTimeout, QuickAcks). Out-of-order
// segments, segments that fill all or part of a gap, and duplicates are
// ACKed at once (RFC 5681 §4.2). The ACK reuses the slot of the segment
// that triggers it; a held segment's slot is freed.
func (s *Sim) receiveData(f *flow, slot int32) {
	pk := &s.pkts[slot]
	t := &s.cfg.TCP
	seq := pk.seq
	hadGap := f.ooo.n > 0
	inOrder := f.receive(seq)
	if inOrder > 0 {
		s.goodput(f, uint64(inOrder)*uint64(f.pktBytes), uint64(inOrder)*f.payload)
	}
	if pk.ecn == aqm.CE {
		f.ackCE++
	}
	f.ackEcho, f.ackRexmit = pk.sent, pk.rexmit
	if t.QuickAcks > 0 && f.lastRcv != 0 && s.now.Sub(f.lastRcv) > t.MinRTO {
		f.quick = t.QuickAcks // data after a silence: ACK quickly again (Linux)
	}
	f.lastRcv = s.now
	if inOrder == 1 && !hadGap && t.AckEvery > 1 && f.quick == 0 {
		f.ackPending++
		if f.ackPending < t.AckEvery {
			if f.ackPending == 1 {
				// One timer event per flow at most: a pending one, which
				// is never later than this deadline, re-arms itself.
				f.dackAt = s.now.Add(t.DelayedAckTimeout)
				if f.dackEventAt == 0 {
					f.dackEventAt = f.dackAt
					s.ag.push(event{at: f.dackAt, kind: evDelAck, flow: f.id})
				}
			}
			s.release(slot)
			return
		}
	}
	if f.quick > 0 {
		f.quick = max(f.quick-f.ackPending-1, 0)
	}
	sack := int64(-1)
	if seq > f.rcvNext {
		sack = seq
	}
	s.sendAck(f, slot, sack)
}

// sendAck turns slot into the ACK of everything received so far: the
// cumulative ACK, a SACK of the segment that triggered it if that is held
// out of order, the count of CE marks since the last ACK, and the
// timestamp echo of the latest segment (as ns-3 echoes it). It cancels a
// pending delayed ACK.
func (s *Sim) sendAck(f *flow, slot int32, sack int64) {
	pk := &s.pkts[slot]
	pk.seq, pk.sack, pk.sent, pk.rexmit = f.rcvNext, sack, f.ackEcho, f.ackRexmit
	pk.ceN = uint8(min(f.ackCE, 255))
	f.ackPending, f.ackCE = 0, 0
	f.dackAt = 0
	s.toReturn(f, slot)
}

// delAckEvent is the delayed-ACK timer: if segments are held and their
// ACK is due, it sends it; if a later hold is pending, it re-arms for it.
func (s *Sim) delAckEvent(f *flow) {
	f.dackEventAt = 0
	if f.dackAt == 0 || f.ackPending == 0 {
		return
	}
	if s.now < f.dackAt {
		f.dackEventAt = f.dackAt
		s.ag.push(event{at: f.dackAt, kind: evDelAck, flow: f.id})
		return
	}
	slot := s.alloc()
	s.pkts[slot] = pkt{flow: f.id}
	s.sendAck(f, slot, -1)
}

// goodput counts new data at a receiver: bytes on the wire and payload.
func (s *Sim) goodput(f *flow, bytes, payload uint64) {
	s.m.winBytes[f.class] += bytes
	if s.measuring() {
		f.goodBytes += bytes
		f.payloadBytes += payload
		if i := int((s.now - s.warm) / aqm.Time(GoodputBin)); i < s.m.nBins {
			s.m.aggBins[i] += payload
			s.m.groupBins[f.groupIdx][i] += payload
			if f.bins != nil {
				f.bins[i] += payload
			}
		}
	}
}

// toLine puts an ACK or echo on the flow's return path. Every packet of a
// flow has the same return delay and leaves the bottleneck in order, so the
// return path is a FIFO per flow and only its head needs an event.
func (s *Sim) toLine(f *flow, slot int32) {
	at := s.now.Add(f.rtt)
	f.line.push(lineEntry{at: at, slot: slot})
	if f.line.n == 1 {
		s.ag.push(event{at: at, kind: evAck, flow: f.id})
	}
}

func (s *Sim) ackArrives(f *flow) {
	le := f.line.pop()
	if f.line.n > 0 {
		s.ag.push(event{at: f.line.front().at, kind: evAck, flow: f.id})
	}
	pk := &s.pkts[le.slot]
	if f.kind == Ping {
		if s.measuring() {
			s.m.ping.Record(s.now.Sub(pk.sent))
		}
		s.observePing(f, le.slot, s.now.Sub(pk.sent))
		s.release(le.slot)
		return
	}
	ack, sack, ceN, echo, rexmit := pk.seq, pk.sack, int(pk.ceN), pk.sent, pk.rexmit
	if s.pktObs != nil {
		s.pktObs.observeAck(s.now, f.id, echo)
	}
	s.release(le.slot)
	s.onAck(f, ack, sack, ceN, echo, rexmit)
}

// ---- senders ----

// sendData sends one TCP segment (new or retransmitted).
func (s *Sim) sendData(f *flow, seq int64) {
	if f.kind == BBR {
		s.bbrOnSend(f, seq)
	}
	rexmit := seq < f.highSent
	if rexmit {
		if s.measuring() {
			f.retx++
		}
		f.retxd.add(seq, f.sndUna)
		f.retxNext = seq + 1
	} else {
		f.highSent = seq + 1
	}
	if f.inRecovery {
		f.prrOut++
	}
	f.sent++
	s.armRTO(f)
	s.emit(f, seq, uint32(f.pktBytes), rexmit)
}

// emit puts a packet on the forward path.
func (s *Sim) emit(f *flow, seq int64, size uint32, rexmit bool) {
	slot := s.alloc()
	s.pkts[slot] = pkt{sent: s.now, seq: seq, flow: f.id, size: size, ecn: f.ecn, rexmit: rexmit}
	if s.measuring() {
		s.m.sentPkts++
	}
	if s.cfg.LossProb > 0 && f.kind != Ping && s.rng.Float64() < s.cfg.LossProb {
		s.lost(slot)
		return
	}
	if s.cfg.MarkProb > 0 && f.ecn != aqm.NotECT && s.rng.Float64() < s.cfg.MarkProb {
		s.pkts[slot].ecn = aqm.CE
	}
	if f.reverse {
		s.revEnqueue(slot)
		return
	}
	s.enqueue(slot)
}

func (s *Sim) sendEvent(f *flow) {
	f.sendScheduled = false
	if f.stopped || f.done {
		return
	}
	switch f.kind {
	case CBR:
		s.emit(f, f.nextSeq, uint32(f.pktBytes), false)
		f.nextSeq++
		s.ag.push(event{at: s.now + aqm.Time(float64(f.pktBytes)*8e9/f.cbrRate+0.5), kind: evSend, flow: f.id})
	case Ping:
		s.emit(f, f.nextSeq, uint32(f.pktBytes), false)
		f.nextSeq++
		s.ag.push(event{at: s.now.Add(f.interval), kind: evSend, flow: f.id})
	default:
		if f.bbr != nil && !f.bbr.seeded {
			s.bbrSeed(f)
		}
		s.trySend(f)
	}
}

func (s *Sim) shortArrival() {
	sh := &s.cfg.Short
	s.ag.push(event{at: s.now.Add(s.expGap(sh.PerSecond)), kind: evShort})
	var size float64
	if sh.ParetoShape > 1 {
		// Pareto with shape a and mean m has scale xm = m(a-1)/a;
		// inverse-CDF sampling: xm / U^(1/a).
		xm := sh.MeanPackets * (sh.ParetoShape - 1) / sh.ParetoShape
		size = xm / math.Pow(1-s.rng.Float64(), 1/sh.ParetoShape)
	} else {
		size = s.rng.ExpFloat64() * sh.MeanPackets
	}
	n := min(max(int64(math.Ceil(size)), 1), sh.MaxPackets)
	f := s.addFlow(FlowSpec{Kind: sh.Kind, ECN: sh.ECN, RTT: sh.RTT, SizePackets: n}, true, s.now)
	f.class = ClassShort
}

func (s *Sim) sample() {
	s.m.sample(s)
}
