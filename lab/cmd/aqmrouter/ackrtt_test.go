package main

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
)

// tcpSeg builds an IPv4 TCP segment with the ACK flag, seq, ack, a
// timestamp option and n bytes of payload.
func tcpSeg(src, dst string, sport, dport uint16, seq, ack uint32, n int, tsval, tsecr uint32) []byte {
	p := make([]byte, 20+32+n)
	p[0], p[8], p[9] = 0x45, 64, 6
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	t := p[20:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], ack)
	t[12], t[13] = 8<<4, 0x10
	copy(t[20:], []byte{1, 1, 8, 10})
	binary.BigEndian.PutUint32(t[24:], tsval)
	binary.BigEndian.PutUint32(t[28:], tsecr)
	return p
}

// TestAckRTT protects the acknowledgement-number matcher: a delayed
// acknowledgement times the segment that triggered it, where the
// timestamp echo times the one before and so adds the wait between them;
// a segment sent again gives no sample; an acknowledgement past a
// pending segment's end voids it; sequence numbers wrap; rises are above
// the flow's smallest round trip; nothing is allocated.
func TestAckRTT(t *testing.T) {
	at := func(us int) aqm.Time { return aqm.Time(1e9 + int64(us)*int64(time.Microsecond)) }
	data := func(seq uint32, tsval uint32) []byte {
		return tcpSeg("10.201.1.2", "10.201.2.2", 1000, 5201, seq, 1, 1000, tsval, 0)
	}
	ackOf := func(ack, tsecr uint32) []byte {
		return tcpSeg("10.201.2.2", "10.201.1.2", 5201, 1000, 1, ack, 0, 9, tsecr)
	}

	a := newAckRTT()
	echo, _ := autorate.NewPassiveRTT(autorate.PassiveConfig{Seed: 1})
	both := func(out bool, us int, p []byte) (autorate.PassiveSample, bool, autorate.PassiveSample, bool) {
		if out {
			a.Outbound(at(us), p)
			echo.Outbound(at(us), p)
			return autorate.PassiveSample{}, false, autorate.PassiveSample{}, false
		}
		s, ok := a.Inbound(at(us), p)
		e, eok := echo.Inbound(at(us), p)
		return s, ok, e, eok
	}
	// Two segments 25 ms apart; the receiver acknowledges both 500 µs
	// after the second, echoing the first's timestamp.
	both(true, -1_000, data(0, 99))
	both(true, 0, data(1000, 100))
	both(true, 25_000, data(2000, 125))
	s, ok, e, eok := both(false, 25_500, ackOf(3000, 100))
	if !ok || s.RTT != 500*time.Microsecond || !eok || e.RTT != 25_500*time.Microsecond {
		t.Fatalf("delayed ack: by number %v (%v), by echo %v (%v); want 500µs and 25.5ms", s.RTT, ok, e.RTT, eok)
	}
	// The next pair: 2 ms of queue, a rise of 1.5 ms above the smallest.
	both(true, 40_000, data(3000, 140))
	both(true, 41_000, data(4000, 141))
	if s, ok, _, _ := both(false, 43_000, ackOf(5000, 140)); !ok || s.RTT != 2*time.Millisecond || s.Rise != 1500*time.Microsecond {
		t.Errorf("second pair: %+v (%v)", s, ok)
	}
	// A lone segment, 60 ms after the last, acknowledged on the receiver's
	// delayed-acknowledgement timer: not timed.
	both(true, 101_000, data(5000, 201))
	if s, ok, _, _ := both(false, 141_500, ackOf(6000, 201)); ok {
		t.Errorf("a lone segment gave %+v", s)
	}
	// Sent again before its acknowledgement: no sample.
	both(true, 150_000, data(5000, 150))
	both(true, 170_000, data(6000, 150))
	both(true, 180_000, data(5000, 350))
	if s, ok, _, _ := both(false, 181_000, ackOf(7000, 350)); ok {
		t.Errorf("a retransmitted segment gave %+v", s)
	}
	// An acknowledgement past a pending end, naming none: no sample, and
	// the pending segment is gone.
	both(true, 190_000, data(7000, 400))
	both(true, 190_100, data(8000, 400))
	if s, ok, _, _ := both(false, 191_000, ackOf(8500, 400)); ok {
		t.Errorf("an acknowledgement inside a segment gave %+v", s)
	}
	if s, ok, _, _ := both(false, 192_000, ackOf(8000, 400)); ok {
		t.Errorf("a voided segment gave %+v", s)
	}
	// Wrap-around: a segment ending past 2^32.
	w := newAckRTT()
	w.Outbound(at(-100), data(0xfffffb00, 1))
	w.Outbound(at(0), data(0xffffff00, 1))
	if s, ok := w.Inbound(at(700), ackOf(0xffffff00+1000-1<<32, 1)); !ok || s.RTT != 700*time.Microsecond {
		t.Errorf("wrapped: %+v (%v)", s, ok)
	}
	d, k := data(9000, 500), ackOf(10000, 500)
	if n := testing.AllocsPerRun(100, func() { a.Outbound(at(400_000), d); a.Inbound(at(400_500), k) }); n != 0 {
		t.Errorf("%v allocations per round trip", n)
	}
}
