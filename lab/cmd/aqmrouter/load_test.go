package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aqmkit/aqmkit/lab/router"
)

// TestAutoCapFlag protects -auto-cap: it sets the router's AutoCap, needs
// -rate, and is refused beside -autorate, which also sets the rate.
func TestAutoCapFlag(t *testing.T) {
	o, err := parseFlags(strings.Fields("-rate 500mbit -auto-cap"), nil)
	if err != nil || !o.cfg.Load.AutoCap {
		t.Errorf("-auto-cap: AutoCap %v, err %v", o.cfg.Load.AutoCap, err)
	}
	for _, bad := range []string{
		"-auto-cap",
		"-rate 50mbit -auto-cap -autorate 10.0.0.1 -autorate-min 1mbit -autorate-max 100mbit -reflectors udp:10.0.0.1:7",
	} {
		if _, err := parseFlags(strings.Fields(bad), nil); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

// TestReadCounter protects the kernel drop counter's reader: a sysfs
// statistic with its newline, and an error for a missing or garbled file.
func TestReadCounter(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tx_dropped")
	if err := os.WriteFile(p, []byte("12345\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := readCounter(p); v != 12345 || err != nil {
		t.Errorf("readCounter = %d, %v; want 12345", v, err)
	}
	if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readCounter(p); err == nil {
		t.Error("a garbled counter read without error")
	}
	if _, err := tunDrops("no-such-device-here")(); err == nil {
		t.Error("a missing device's counter read without error")
	}
}

// TestLineLoad protects the stat line's load part: it says SATURATED and
// what the router sustains when it is the bottleneck.
func TestLineLoad(t *testing.T) {
	s := router.Stats{Load: router.Load{Saturated: true, ReaderBusy: 0.99, Sustainable: 420e6, KernelDropped: 7}}
	got := line(s)
	for _, want := range []string{"SATURATED", "reader busy 99%", "sustains about 420mbit", "kernel dropped 7"} {
		if !strings.Contains(got, want) {
			t.Errorf("line = %q, want it to contain %q", got, want)
		}
	}
}
