package main

import (
	"encoding/binary"
	"hash/maphash"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
)

// ackRTT times the TCP flows the router forwards by acknowledgement
// numbers (-autorate-passive=ack): a data segment leaving towards the WAN
// is timed by the acknowledgement whose number is the segment's end, and
// by no other. A receiver that acknowledges every second segment sends
// that acknowledgement when the second arrives, and names the second's
// end, so the sample is the second's round trip; a timestamp echo would
// name the first, and its round trip would include the wait for the
// second, which at a low rate is longer than the queue being judged (see
// docs/design/0145-lab-traces.md). A segment sent again (a sequence not
// past the flow's highest) voids the pending samples it overlaps, since
// its acknowledgement may answer either copy.
//
// A segment sent more than ackLonely after the flow's previous one is not
// timed: a receiver that acknowledges every second segment holds a lone
// segment's acknowledgement until its delayed-acknowledgement timer
// (40 ms at least on Linux, more elsewhere), and that acknowledgement then
// names the lone segment, so its round trip would include the timer. A
// segment that follows its predecessor closely is either the second of a
// pair, acknowledged on arrival, or the first, whose acknowledgement comes
// with the next.
//
// The table is fixed at construction: flowSlots entries, one per keyed
// hash of the flow's addresses and ports, a new flow taking the entry of
// an old one. Nothing is allocated per packet. Not safe for concurrent
// use.
type ackRTT struct {
	seed  maphash.Seed
	flows []ackFlow
	max   time.Duration
}

const (
	ackFlowSlots = 1024
	ackPending   = 4
	ackLonely    = 30 * time.Millisecond
	// ackMaxRTT is how long a segment waits for its ACK before it is
	// forgotten, as autorate.PassiveConfig's default MaxRTT.
	ackMaxRTT = 2 * time.Second
)

type ackKey [36]byte // LAN address, WAN address (16 bytes each, IPv4 mapped), LAN port, WAN port

type ackFlow struct {
	key  ackKey
	used bool
	high uint32   // the highest end of a segment sent
	last aqm.Time // when the flow last sent a segment
	min  time.Duration
	seg  [ackPending]struct {
		end uint32
		at  aqm.Time // zero: free
	}
}

func newAckRTT() *ackRTT {
	return &ackRTT{seed: maphash.MakeSeed(), flows: make([]ackFlow, ackFlowSlots), max: ackMaxRTT}
}

// segment is what ackRTT reads from a TCP packet.
type segment struct {
	key      ackKey
	seq, ack uint32
	len      uint32 // sequence space taken: payload, plus one for SYN and FIN
	hasACK   bool
}

// parseSegment reads an IPv4 or IPv6 TCP packet; outbound says the LAN
// end is the source. It reports false for anything else.
func parseSegment(b []byte, outbound bool, s *segment) bool {
	var src, dst, l4 []byte
	switch {
	case len(b) >= 20 && b[0]>>4 == 4:
		ihl, total := int(b[0]&15)*4, int(binary.BigEndian.Uint16(b[2:]))
		if ihl < 20 || total < ihl || total > len(b) || b[9] != 6 || binary.BigEndian.Uint16(b[6:])&0x3fff != 0 {
			return false
		}
		src, dst, l4 = b[12:16], b[16:20], b[ihl:total]
	case len(b) >= 40 && b[0]>>4 == 6 && b[6] == 6:
		total := 40 + int(binary.BigEndian.Uint16(b[4:]))
		if total > len(b) {
			return false
		}
		src, dst, l4 = b[8:24], b[24:40], b[40:total]
	default:
		return false
	}
	if len(l4) < 20 {
		return false
	}
	off := int(l4[12]>>4) * 4
	if off < 20 || off > len(l4) {
		return false
	}
	lan, wan, lp, wp := src, dst, l4[0:2], l4[2:4]
	if !outbound {
		lan, wan, lp, wp = dst, src, l4[2:4], l4[0:2]
	}
	put := func(d, a []byte) {
		if len(a) == 4 {
			clear(d[:10])
			d[10], d[11] = 0xff, 0xff
			copy(d[12:], a)
			return
		}
		copy(d, a)
	}
	put(s.key[0:16], lan)
	put(s.key[16:32], wan)
	copy(s.key[32:34], lp)
	copy(s.key[34:36], wp)
	s.seq = binary.BigEndian.Uint32(l4[4:])
	s.ack = binary.BigEndian.Uint32(l4[8:])
	flags := l4[13]
	s.hasACK = flags&0x10 != 0
	s.len = uint32(len(l4) - off)
	if flags&0x03 != 0 { // SYN or FIN
		s.len++
	}
	return true
}

func (r *ackRTT) entry(k *ackKey) *ackFlow {
	return &r.flows[maphash.Bytes(r.seed, k[:])&(ackFlowSlots-1)]
}

// after reports whether a is later than b in sequence space.
func after(a, b uint32) bool { return int32(a-b) > 0 }

// Outbound notes a packet leaving towards the WAN at now.
func (r *ackRTT) Outbound(now aqm.Time, ip []byte) {
	var s segment
	if !parseSegment(ip, true, &s) || s.len == 0 {
		return
	}
	f := r.entry(&s.key)
	end := s.seq + s.len
	if !f.used || f.key != s.key {
		*f = ackFlow{key: s.key, used: true, high: s.seq}
	}
	lonely := f.last == 0 || f.last.Since(now) > ackLonely
	f.last = now
	if !after(end, f.high) { // sent again: its acknowledgement is ambiguous
		for i := range f.seg {
			if f.seg[i].at != 0 && after(f.seg[i].end, s.seq) {
				f.seg[i].at = 0
			}
		}
		return
	}
	f.high = end
	if lonely {
		return
	}
	for i := range f.seg {
		p := &f.seg[i]
		if p.at != 0 && p.at.Since(now) > r.max {
			p.at = 0
		}
		if p.at == 0 {
			p.end, p.at = end, now
			return
		}
	}
}

// Inbound notes a packet arriving from the WAN at now and returns the
// round trip it closes, if any, with its rise above the flow's smallest.
func (r *ackRTT) Inbound(now aqm.Time, ip []byte) (autorate.PassiveSample, bool) {
	var s segment
	if !parseSegment(ip, false, &s) || !s.hasACK {
		return autorate.PassiveSample{}, false
	}
	f := r.entry(&s.key)
	if !f.used || f.key != s.key {
		return autorate.PassiveSample{}, false
	}
	rtt, ok := time.Duration(0), false
	for i := range f.seg {
		p := &f.seg[i]
		switch {
		case p.at == 0:
		case p.end == s.ack:
			rtt, ok = p.at.Since(now), true
			p.at = 0
		case after(s.ack, p.end): // acknowledged by a later segment's acknowledgement
			p.at = 0
		}
	}
	if !ok || rtt > r.max {
		return autorate.PassiveSample{}, false
	}
	if f.min == 0 || rtt < f.min {
		f.min = max(rtt, 1)
	}
	return autorate.PassiveSample{RTT: rtt, Rise: rtt - f.min}, true
}
