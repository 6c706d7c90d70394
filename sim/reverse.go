package sim

import "github.com/aqmkit/aqmkit/aqm"

// The reverse direction (Config.Reverse) is a second bottleneck: its own
// queue, built by the same constructor with its own state, and its own
// link rate. The forward flows' ACKs and the pings' echoes cross it, and
// so does the data of the flows marked FlowSpec.Reverse, whose ACKs cross
// the forward queue in turn. Propagation is unchanged: a packet reaches
// the first queue on its path when it is sent and the next one when it
// leaves the first, and its flow's whole base RTT is spent on the return
// line after the last queue (sim.go's toLine), so the one-direction path
// is the special case in which the return crosses no queue.

// ReversePath is the optional second bottleneck direction: see
// [Config.Reverse].
type ReversePath struct {
	// RateBps is the reverse link's rate in bits per second. Zero means
	// the forward RateBps.
	RateBps float64 `json:",omitempty"`
	// AckBytes is the size on the wire of a pure ACK as the queues count
	// it. Zero means [DefaultAckBytes]. Pings' echoes keep their size.
	AckBytes int `json:",omitempty"`
}

// DefaultAckBytes is a pure ACK on the wire: IPv4 and TCP headers with the
// 12-byte timestamp option.
const DefaultAckBytes = 52

func (r *ReversePath) validate(c *Config, bad func(field string, v any, rule string)) {
	if r.RateBps < 0 {
		bad("Reverse.RateBps", r.RateBps, "must not be negative")
	}
	if r.AckBytes < 0 || r.AckBytes > 1<<16 {
		bad("Reverse.AckBytes", r.AckBytes, "must be in [0, 65536]")
	}
	if c.Shaper != nil || c.Capacity != nil || len(c.RateChanges) > 0 {
		bad("Reverse", "set", "cannot be combined with Shaper, Capacity or RateChanges (the reverse link is a plain link)")
	}
}

func (r *ReversePath) normalize(fwdRate float64) {
	if r.RateBps == 0 {
		r.RateBps = fwdRate
	}
	if r.AckBytes == 0 {
		r.AckBytes = DefaultAckBytes
	}
}

// linkCount counts one link's packets: offered to its queue, refused by
// it, and sent on the wire.
type linkCount struct {
	offered, refused, sent uint64
}

// revLink is the reverse direction's queue and link.
type revLink struct {
	q         aqm.Queue[uint64]
	nsPerByte float64
	ackBytes  uint32
	busy      bool
	cur       int32
	paced     aqm.Paced // the queue, if it holds packets back itself
	pending   bool      // a paced wake-up is scheduled
	n         linkCount
	txBytes   uint64 // after warmup
	ackDrops  uint64 // ACKs and echoes lost in this queue, after warmup
	delay     Histogram
}

// revEnqueue offers a packet to the reverse queue.
func (s *Sim) revEnqueue(slot int32) {
	r := s.rev
	pk := &s.pkts[slot]
	f := s.flows[pk.flow]
	r.n.offered++
	v := r.q.Enqueue(aqm.Packet[uint64]{Payload: uint64(slot), Meta: aqm.Meta{Size: pk.size, Hash: f.hash, ECN: pk.ecn}}, s.now)
	if !v.Accepted() {
		r.n.refused++
		s.lost(slot)
		return
	}
	if !r.busy {
		s.revStartTx()
	}
}

// revDrop is the reverse queue's DropFunc.
func (s *Sim) revDrop(p aqm.Packet[uint64], _ aqm.Verdict) { s.lost(int32(p.Payload)) }

func (s *Sim) revStartTx() {
	r := s.rev
	p, ok := r.q.Dequeue(s.now)
	if !ok {
		r.busy = false
		if r.paced != nil && !r.pending {
			if t := r.paced.NextDeparture(s.now); t > s.now {
				r.pending = true
				s.ag.push(event{at: t, kind: evRevPaced})
			}
		}
		return
	}
	slot := int32(p.Payload)
	pk := &s.pkts[slot]
	if p.ECN == aqm.CE && pk.ecn != aqm.CE {
		pk.ecn = aqm.CE
		if s.measuring() && !pk.ack {
			s.flows[pk.flow].marks++
			s.m.marks++
		}
	}
	if s.measuring() {
		r.delay.Record(p.Enqueued.Since(s.now))
	}
	r.busy = true
	r.cur = slot
	s.ag.push(event{at: s.now + aqm.Time(float64(pk.size)*r.nsPerByte+0.5), kind: evRevTxDone})
}

func (s *Sim) revTxDone() {
	r := s.rev
	slot := r.cur
	r.n.sent++
	if s.measuring() {
		r.txBytes += uint64(s.pkts[slot].size)
	}
	s.deliver(slot)
	s.revStartTx()
}

// revPacedWake is the reverse link's look at a queue that held packets
// back (aqm.Paced), at the instant it named.
func (s *Sim) revPacedWake() {
	s.rev.pending = false
	if !s.rev.busy {
		s.revStartTx()
	}
}

// toReturn sends an ACK or echo back to its flow's sender: onto the return
// line at once on a one-direction path, else into the queue of the
// direction opposite to the flow's data.
func (s *Sim) toReturn(f *flow, slot int32) {
	if s.rev == nil {
		s.toLine(f, slot)
		return
	}
	pk := &s.pkts[slot]
	pk.ack = true
	pk.ecn = aqm.NotECT
	if f.kind != Ping {
		pk.size = s.rev.ackBytes
	}
	if f.reverse {
		s.enqueue(slot)
	} else {
		s.revEnqueue(slot)
	}
}

// ReverseResult is the reverse direction's link and queue.
type ReverseResult struct {
	// RateMbps is the reverse link's rate.
	RateMbps float64
	// Utilization is the bytes it sent over what it could have sent.
	Utilization float64
	// Delay is the sojourn of every packet it sent (data, ACKs, echoes).
	Delay DelayStats
	// AckDrops counts ACKs and echoes lost in the reverse queue;
	// ForwardAckDrops those of the reverse flows lost in the forward one.
	AckDrops, ForwardAckDrops uint64
	// Queue is the reverse queue's own counters at the end.
	Queue aqm.Stats
}

func (s *Sim) reverseResult(meas float64) *ReverseResult {
	r := s.rev
	rr := &ReverseResult{RateMbps: s.cfg.Reverse.RateBps / 1e6, Delay: delayStats(&r.delay),
		AckDrops: r.ackDrops, ForwardAckDrops: s.fwdAckDrops, Queue: r.q.Stats()}
	if meas > 0 {
		rr.Utilization = float64(r.txBytes) * 8 / (s.cfg.Reverse.RateBps * meas)
	}
	return rr
}

// lostAck frees an ACK or echo a queue dropped and counts it against the
// queue: the forward one if its flow's data goes the reverse way.
func (s *Sim) lostAck(f *flow, slot int32) {
	if s.measuring() {
		if f.reverse {
			s.fwdAckDrops++
		} else {
			s.rev.ackDrops++
		}
	}
	s.release(slot)
}
