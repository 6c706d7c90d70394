package sim

import (
	"encoding/binary"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
)

// packetObserver is a queue that sees the TCP flows' packets as a router
// does: the autorate scenario's shaped path with passive RTT, which feeds
// its controller from the bulk flows' timestamps instead of the pings.
type packetObserver interface {
	// setPacketInfo gives the queue a way to read a packet slot's flow,
	// send time and whether it is TCP data.
	setPacketInfo(info func(slot int32) (flow int32, sent aqm.Time, data bool))
	// observeAck is an ACK of flow arriving at the sender (and so at the
	// router beside it) at now, echoing the timestamp echo.
	observeAck(now aqm.Time, flow int32, echo aqm.Time)
}

// packetInfo reads a packet slot for a packetObserver.
func (s *Sim) packetInfo(slot int32) (int32, aqm.Time, bool) {
	pk := &s.pkts[slot]
	return pk.flow, pk.sent, !pk.ack && s.flows[pk.flow].kind != Ping
}

// passiveFeed is the shaped path's passive RTT: every TCP data packet
// leaving the shaper is written as an IPv4 TCP packet whose TSval is its
// send time in milliseconds (Linux's timestamp clock) and handed to
// PassiveRTT.Outbound; every ACK as one echoing that value to Inbound. The
// controller gets, as reflector 0, the smallest rise of each 50 ms (the
// pings' 20 Hz): a queue beyond the shaper raises every packet's round
// trip, while the wait for a delivery opportunity, which a six-sample
// window fed hundreds of samples a second would read as bufferbloat, does
// not last a whole interval.
type passiveFeed struct {
	rtt  *autorate.PassiveRTT
	info func(slot int32) (int32, aqm.Time, bool)
	buf  [52]byte
	// The smallest rise in the current interval, reported when it ends.
	lowest   time.Duration
	have     bool
	interval aqm.Time // the current interval's end
}

// passiveInterval is how often the feed hands the controller a sample:
// the pings' 20 Hz.
var passiveInterval = 50 * time.Millisecond

// packet writes a 20-byte IPv4 header and a 32-byte TCP header with the
// timestamp option for flow, outbound (LAN host 10.0.0.2 to 10.0.0.9) or
// inbound, into f.buf.
func (f *passiveFeed) packet(flow int32, outbound bool, tsval, tsecr uint32) []byte {
	b := f.buf[:]
	clear(b)
	b[0], b[9] = 0x45, 6
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	lan, wan := 12, 16
	lport, wport := 20, 22
	if !outbound {
		lan, wan, lport, wport = 16, 12, 22, 20
	}
	b[lan], b[lan+3] = 10, 2
	b[wan], b[wan+3] = 10, 9
	binary.BigEndian.PutUint16(b[lport:], uint16(1024+flow))
	binary.BigEndian.PutUint16(b[wport:], 443)
	b[32], b[33] = 8<<4, 0x10 // data offset 32 bytes; ACK
	b[40], b[41], b[42], b[43] = 1, 1, 8, 10
	binary.BigEndian.PutUint32(b[44:], tsval)
	binary.BigEndian.PutUint32(b[48:], tsecr)
	return b
}

func tsMillis(t aqm.Time) uint32 { return uint32(t.Sub(epoch) / time.Millisecond) }

func (p *shapedPath) setPacketInfo(info func(slot int32) (int32, aqm.Time, bool)) {
	if p.passive != nil {
		p.passive.info = info
	}
}

// exited notes a packet leaving the shaper at t.
func (p *shapedPath) exited(slot int32, t aqm.Time) {
	f := p.passive
	if f == nil || f.info == nil {
		return
	}
	if flow, sent, data := f.info(slot); data {
		f.rtt.Outbound(t, f.packet(flow, true, tsMillis(sent), 0))
	}
}

func (p *shapedPath) observeAck(now aqm.Time, flow int32, echo aqm.Time) {
	f := p.passive
	if f == nil || p.ctl == nil {
		return
	}
	p.pump(now)
	s, ok := f.rtt.Inbound(now, f.packet(flow, false, 0, tsMillis(echo)))
	if !ok {
		return
	}
	if f.have && now >= f.interval {
		p.ctl.Sample(now, 0, f.lowest)
		f.have = false
	}
	if !f.have {
		f.have, f.lowest, f.interval = true, s.Rise, now.Add(passiveInterval)
	}
	f.lowest = min(f.lowest, s.Rise)
}
