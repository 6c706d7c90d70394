package main

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// tcp4 builds an IPv4 TCP ACK from src:sport to dst:dport with the
// timestamp option.
func tcp4(src, dst string, sport, dport uint16, tsval, tsecr uint32) []byte {
	p := make([]byte, 52)
	p[0], p[8], p[9] = 0x45, 64, 6
	binary.BigEndian.PutUint16(p[2:], 52)
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	binary.BigEndian.PutUint16(p[20:], sport)
	binary.BigEndian.PutUint16(p[22:], dport)
	p[32], p[33] = 8<<4, 0x10
	p[40], p[41], p[42], p[43] = 1, 1, 8, 10
	binary.BigEndian.PutUint32(p[44:], tsval)
	binary.BigEndian.PutUint32(p[48:], tsecr)
	return p
}

// TestPassiveTap protects -autorate-passive's tap: a packet written
// towards the driven prefix starts a round trip, the echo read from an
// address in it ends it, packets of other directions are ignored, and
// take returns the smallest rise since the last take, once.
func TestPassiveTap(t *testing.T) {
	tap, err := newPassiveTap(netip.MustParsePrefix("10.201.2.0/24"))
	if err != nil {
		t.Fatal(err)
	}
	wan, lan := netip.MustParsePrefix("10.201.2.0/24"), netip.MustParsePrefix("10.201.1.0/24")
	ms := func(n int) aqm.Time { return aqm.Time(time.Second) + aqm.Time(n)*aqm.Time(time.Millisecond) }
	// Two flows: one with a 20 ms round trip, then 50 ms (a rise of 30);
	// one steady at 40 ms.
	tap.written(wan, tcp4("10.201.1.2", "10.201.2.2", 1000, 443, 1, 0), ms(0))
	tap.written(wan, tcp4("10.201.1.2", "10.201.2.2", 1001, 443, 7, 0), ms(0))
	tap.written(lan, tcp4("10.201.2.2", "10.201.1.2", 443, 1000, 99, 0), ms(0)) // the other direction
	tap.Read(nil, tcp4("10.201.2.2", "10.201.1.2", 443, 1000, 5, 1), ms(20))
	tap.Read(nil, tcp4("10.201.2.2", "10.201.1.2", 443, 1001, 5, 7), ms(40))
	if d, ok := tap.take(); !ok || d != 0 {
		t.Fatalf("take = %v %v, want 0 (both flows at their minimum)", d, ok)
	}
	if _, ok := tap.take(); ok {
		t.Fatal("a second take without a sample")
	}
	tap.written(wan, tcp4("10.201.1.2", "10.201.2.2", 1000, 443, 2, 5), ms(100))
	tap.written(wan, tcp4("10.201.1.2", "10.201.2.2", 1001, 443, 8, 5), ms(100))
	tap.Read(nil, tcp4("10.201.2.2", "10.201.1.2", 443, 1000, 6, 2), ms(150))
	tap.Read(nil, tcp4("10.201.2.2", "10.201.1.2", 443, 1001, 6, 8), ms(150))
	tap.Read(nil, tcp4("10.201.9.9", "10.201.1.2", 443, 1001, 6, 8), ms(150)) // not from the prefix
	if d, ok := tap.take(); !ok || d != 10*time.Millisecond {
		t.Fatalf("take = %v %v, want 10ms (the smaller of 30 and 10 ms)", d, ok)
	}
	if s := tap.stats(); s.Samples != 4 {
		t.Errorf("samples %d, want 4", s.Samples)
	}
}

// TestPassiveFlags protects -autorate-passive: no reflector is needed,
// and the passive samples get a reflector slot of their own after the
// probed ones.
func TestPassiveFlags(t *testing.T) {
	base := "-rate 20mbit -autorate 10.201.2.0/24 -autorate-min 5mbit -autorate-max 40mbit -autorate-passive"
	o, err := parseFlags(strings.Fields(base), nil)
	if err != nil || o.arCfg.Reflectors != 1 || len(o.ar.refl) != 0 {
		t.Fatalf("passive alone: %+v %v", o.arCfg, err)
	}
	o, err = parseFlags(strings.Fields(base+" -reflectors udp:10.201.2.2:7,icmp:10.201.2.3"), nil)
	if err != nil || o.arCfg.Reflectors != 3 || len(o.ar.refl) != 2 {
		t.Fatalf("passive with reflectors: %+v %v", o.arCfg, err)
	}
	if _, err := parseFlags(strings.Fields(base+" -reflectors nonsense"), nil); err == nil {
		t.Fatal("a bad reflector list accepted beside -autorate-passive")
	}
	if _, err := parseFlags(strings.Fields("-rate 20mbit -autorate-passive"), nil); err == nil {
		t.Fatal("-autorate-passive accepted without -autorate")
	}
}
