package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
)

// TestAutorateFlags protects the -autorate command line: the controller's
// configuration from the router's rate and the flags, the reflector list's
// syntax, and refusal of what cannot work (no rate, CAKE, no bounds, no
// reflector, flags without -autorate).
func TestAutorateFlags(t *testing.T) {
	o, err := parseFlags(strings.Fields("-rate 20mbit -autorate 10.201.2.2 -autorate-min 5mbit -autorate-max 40mbit "+
		"-reflectors udp:10.201.2.2:5202,10.201.2.3:7,icmp:10.201.2.4 -autorate-delay 15ms -probe-interval 150ms -autorate-detection 2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := autorate.Config{MinRate: 5 * aqm.Mbit, BaseRate: 20 * aqm.Mbit, MaxRate: 40 * aqm.Mbit, Reflectors: 3,
		DelayThreshold: 15 * time.Millisecond, FullIncreaseBelow: 5 * time.Millisecond, FullCutAbove: 30 * time.Millisecond,
		AchievedCut: autorate.DefaultAchievedCut, MaxIncrease: autorateDefaults.MaxIncrease, DetectionThreshold: 2}
	if o.arCfg != want {
		t.Errorf("config %+v, want %+v", o.arCfg, want)
	}
	if o.ar.prefix != netip.MustParsePrefix("10.201.2.2/32") || o.ar.interval != 150*time.Millisecond {
		t.Errorf("prefix %v interval %v", o.ar.prefix, o.ar.interval)
	}
	if got := []reflector{{addr: "10.201.2.2:5202"}, {addr: "10.201.2.3:7"}, {icmp: true, addr: "10.201.2.4"}}; len(o.ar.refl) != 3 ||
		o.ar.refl[0] != got[0] || o.ar.refl[1] != got[1] || o.ar.refl[2] != got[2] {
		t.Errorf("reflectors %v", o.ar.refl)
	}
	o, err = parseFlags(strings.Fields("-rate 20mbit -autorate 10.201.2.0/24 -autorate-min 5mbit -autorate-max 40mbit -reflectors h:1 -autorate-achieved-cut 0"), nil)
	if err != nil || o.arCfg.AchievedCut != 0 || o.arCfg.DelayThreshold != 30*time.Millisecond || o.ar.interval != defaultProbeInterval {
		t.Errorf("defaults: %+v %v", o.arCfg, err)
	}
	o, err = parseFlags(strings.Fields("-rate 20mbit -autorate 10.201.2.0/24 -autorate-min 5mbit -autorate-max 40mbit -reflectors h:1 -autorate-recovery 1"), nil)
	if err != nil || o.arCfg.Recovery != 1 {
		t.Errorf("-autorate-recovery: %+v %v", o.arCfg, err)
	}
	ok := "-autorate-min 5mbit -autorate-max 40mbit -reflectors h:1 "
	for _, bad := range []string{
		ok + "-autorate 10.201.2.2",                      // no -rate
		ok + "-rate 20mbit -aqm cake -autorate 10.0.0.1", // CAKE shapes by itself
		"-rate 20mbit -autorate 10.0.0.1 -reflectors h:1",
		"-rate 20mbit -autorate 10.0.0.1 -autorate-min 5mbit -autorate-max 40mbit",
		ok + "-rate 20mbit -autorate nowhere",
		"-autorate-min 5mbit -autorate-max 40mbit -autorate 10.0.0.1 -rate 20mbit -reflectors icmp:h:1",
		"-autorate-min 5mbit -autorate-max 40mbit -autorate 10.0.0.1 -rate 20mbit -reflectors justahost",
		ok + "-rate 50mbit -autorate 10.0.0.1", // base above max
		ok + "-rate 20mbit -autorate 10.0.0.1 -autorate-achieved-cut 1",
		ok + "-rate 20mbit -autorate 10.0.0.1 -autorate-max-increase 2",
		ok + "-rate 20mbit -autorate 10.0.0.1 -autorate-detection 7",
		ok + "-rate 20mbit -autorate 10.0.0.1 -autorate-recovery 1.5",
		"-rate 20mbit -reflectors h:1", // no -autorate
	} {
		if _, err := parseFlags(strings.Fields(bad), nil); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

// TestProber protects the probes: over a UDP echo on 127.0.0.1, every
// probe comes back with a round trip no shorter than the delay the echo
// adds, replies that are not ours are skipped, and the ICMP checksum is
// RFC 1071's.
func TestProber(t *testing.T) {
	echo, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	const hold = 2 * time.Millisecond
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			time.Sleep(hold)
			echo.WriteTo([]byte("not a probe"), from)
			echo.WriteTo(buf[:n], from)
		}
	}()
	p, err := newProber(reflector{addr: echo.LocalAddr().String()}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	buf := make([]byte, 1500)
	for range 5 {
		if err := p.send(time.Now()); err != nil {
			t.Fatal(err)
		}
		p.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		rtt, err := p.read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if rtt < hold {
			t.Errorf("round trip %v, below the echo's %v", rtt, hold)
		}
	}
	// RFC 1071's example: the sum of 0001 f203 f4f5 f6f7 is ddf2, so the
	// checksum is its complement 220d.
	if got := checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}); got != 0x220d {
		t.Errorf("checksum %#04x, want 0x220d", got)
	}
	if got := checksum([]byte{0x01}); got != ^uint16(0x0100) {
		t.Errorf("odd-length checksum %#04x", got)
	}
}

// TestAutorateLoop protects the loop without a router: probes to a UDP
// echo reach the controller as samples from their reflector, until the
// context ends, and the loop then returns with its readers stopped.
func TestAutorateLoop(t *testing.T) {
	echo, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			echo.WriteTo(buf[:n], from)
		}
	}()
	o, err := parseFlags(strings.Fields("-rate 20mbit -autorate 10.201.2.0/24 -autorate-min 5mbit -autorate-max 40mbit -probe-interval 10ms -reflectors "+
		echo.LocalAddr().String()+","+echo.LocalAddr().String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newAutorateLoop(o.ar, o.arCfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The loop owns the controller; read it only after it stopped.
		time.Sleep(200 * time.Millisecond)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, ok0 := l.ctl.Reflector(0); ok0 {
			if _, ok1 := l.ctl.Reflector(1); ok1 && l.ctl.Stats().Samples >= 4 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("samples %d after 10 s of probes every 5 ms", l.ctl.Stats().Samples)
		}
		ctx, cancel = context.WithCancel(context.Background())
		go func() { done <- l.run(ctx) }()
	}
	if l.ctl.Rate() != 20*aqm.Mbit {
		t.Errorf("rate %v moved without a load report", l.ctl.Rate())
	}
}

// TestProberICMP protects the ICMP prober: echo requests to 127.0.0.1 come
// back as round trips (the kernel answers them), through a raw socket.
func TestProberICMP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: an ICMP raw socket")
	}
	p, err := newProber(reflector{icmp: true, addr: "127.0.0.1"}, time.Now())
	if err != nil {
		t.Skipf("no raw ICMP socket: %v", err)
	}
	defer p.Close()
	buf := make([]byte, 1500)
	for range 3 {
		if err := p.send(time.Now()); err != nil {
			t.Fatal(err)
		}
		p.raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		rtt, err := p.read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if rtt <= 0 {
			t.Errorf("round trip %v", rtt)
		}
	}
}
