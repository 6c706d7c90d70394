package main

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// tcpTS builds an IPv4 TCP segment from src:sport to dst:dport with the
// ACK flag and a timestamp option (tsval, tsecr).
func tcpTS(src, dst string, sport, dport uint16, tsval, tsecr uint32) []byte {
	p := make([]byte, 20+32)
	p[0], p[8], p[9] = 0x45, 64, 6
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	t := p[20:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	t[12], t[13] = 8<<4, 0x10
	copy(t[20:], []byte{1, 1, 8, 10})
	binary.BigEndian.PutUint32(t[24:], tsval)
	binary.BigEndian.PutUint32(t[28:], tsecr)
	return p
}

// TestPassiveFlags protects -autorate-passive's command line: it stands
// for the reflectors or is one more beside them, and needs -autorate.
func TestPassiveFlags(t *testing.T) {
	base := "-rate 20mbit -autorate 10.201.2.0/24 -autorate-min 5mbit -autorate-max 40mbit -autorate-passive"
	o, err := parseFlags(strings.Fields(base), nil)
	if err != nil || o.arCfg.Reflectors != 1 || len(o.ar.refl) != 0 {
		t.Errorf("passive alone: reflectors %d (%d probed), %v", o.arCfg.Reflectors, len(o.ar.refl), err)
	}
	o, err = parseFlags(strings.Fields(base+" -reflectors udp:10.201.2.2:7"), nil)
	if err != nil || o.arCfg.Reflectors != 2 || len(o.ar.refl) != 1 {
		t.Errorf("passive beside a reflector: reflectors %d, %v", o.arCfg.Reflectors, err)
	}
	if _, err := parseFlags(strings.Fields("-rate 20mbit -autorate-passive"), nil); err == nil {
		t.Error("-autorate-passive without -autorate was taken")
	}
}

// TestPassiveTap protects the passive feed: a segment written towards
// the autorate prefix opens a round trip that the echo read from it
// closes; packets the other way are not timed; the interval's summary is
// the smallest rise above each flow's minimum and starts afresh; the tap
// allocates nothing per packet.
func TestPassiveTap(t *testing.T) {
	p, err := newPassiveTap(netip.MustParsePrefix("10.201.2.0/24"), "echo")
	if err != nil {
		t.Fatal(err)
	}
	tap := p.tap()
	at := func(ms int) aqm.Time { return aqm.Time(1e9 + int64(ms)*int64(time.Millisecond)) }
	up := func(port uint16, tsval uint32) []byte { return tcpTS("10.201.1.2", "10.201.2.2", port, 5201, tsval, 0) }
	ack := func(port uint16, tsecr uint32) []byte { return tcpTS("10.201.2.2", "10.201.1.2", 5201, port, 9, tsecr) }

	// Flow 1: 30 ms, then 50 ms (rise 20); flow 2: 80 ms (its minimum),
	// then 85 ms (rise 5).
	tap.Written(nil, up(1000, 100), at(0))
	tap.Read(nil, ack(1000, 100), at(30))
	tap.Written(nil, up(1000, 200), at(100))
	tap.Read(nil, ack(1000, 200), at(150))
	tap.Written(nil, up(2000, 7), at(0))
	tap.Read(nil, ack(2000, 7), at(80))
	if rise, n := p.summary(); n != 3 || rise != 0 {
		t.Errorf("first interval: smallest rise %v of %d samples, want 0 of 3", rise, n)
	}
	tap.Written(nil, up(2000, 8), at(200))
	tap.Read(nil, ack(2000, 8), at(285))
	tap.Written(nil, up(1000, 300), at(200))
	tap.Read(nil, ack(1000, 300), at(250))
	if rise, n := p.summary(); n != 2 || rise != 5*time.Millisecond {
		t.Errorf("second interval: smallest rise %v of %d samples, want 5ms of 2", rise, n)
	}
	// The other direction: a download's segment read from the client
	// side and its echo written towards it are not timed.
	tap.Read(nil, tcpTS("10.201.1.2", "10.201.2.2", 3000, 5201, 50, 0), at(300))
	tap.Written(nil, tcpTS("10.201.1.2", "10.201.2.2", 3000, 5201, 50, 0), at(300))
	tap.Written(nil, tcpTS("10.201.2.2", "10.201.1.2", 5201, 3000, 60, 50), at(310))
	if _, n := p.summary(); n != 0 {
		t.Errorf("%d samples from packets the wrong way", n)
	}
	w, r := up(4000, 1), ack(4000, 1)
	if a := testing.AllocsPerRun(100, func() { tap.Written(nil, w, at(400)); tap.Read(nil, r, at(420)) }); a != 0 {
		t.Errorf("%v allocations per round trip", a)
	}
}
