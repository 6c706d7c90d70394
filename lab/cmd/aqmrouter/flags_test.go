package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/lab/router"
)

// TestParseFlags protects the command line the lab harness uses: tc syntax
// for rates and durations, the defaults, and the loopback default of
// -metrics.
func TestParseFlags(t *testing.T) {
	o, err := parseFlags(strings.Fields("-tun tun7 -aqm cake -rate 50mbit -delay 10ms -stats /tmp/s.json -metrics :9100"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.tun != "tun7" || o.cfg.AQM != "cake" || o.cfg.Rate != 50*aqm.Mbit || o.cfg.Delay != 10*time.Millisecond ||
		o.stats != "/tmp/s.json" || o.metrics != "127.0.0.1:9100" {
		t.Errorf("parsed %+v", o)
	}
	if o.report != 10*time.Second || o.cfg.Drain != router.DefaultDrain || o.queues != 1 || o.cfg.MaxQueues != router.DefaultMaxQueues {
		t.Errorf("defaults: report %v drain %v queues %d max-queues %d", o.report, o.cfg.Drain, o.queues, o.cfg.MaxQueues)
	}
	o, err = parseFlags(strings.Fields("-rate 0 -delay 1.5msec -report 0 -drain 0 -metrics 0.0.0.0:80 -queues 2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Rate != 0 || o.cfg.Delay != 1500*time.Microsecond || o.report != 0 || o.cfg.Drain >= 0 || o.metrics != "0.0.0.0:80" || o.queues != 2 {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range []string{
		"-rate fast", "-delay -1ms", "-delay 10 ms", "-aqm redd", "-limit -5", "-queues 0", "-mtu -1",
		"-metrics 9100", "-prefix4 40", "extra", "-nosuch", "-params target", "-aqm codel -params flows=5",
	} {
		if _, err := parseFlags(strings.Fields(bad), nil); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

// TestParseDuration protects tc's duration syntax: its unit words, a bare
// number as microseconds, and refusal of anything else.
func TestParseDuration(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"10ms": 10 * time.Millisecond, "10msec": 10 * time.Millisecond, "10msecs": 10 * time.Millisecond,
		"2s": 2 * time.Second, "2sec": 2 * time.Second, "2secs": 2 * time.Second, "1.5s": 1500 * time.Millisecond,
		"500us": 500 * time.Microsecond, "500usec": 500 * time.Microsecond, "250": 250 * time.Microsecond,
		"0": 0, "7ns": 7, "1m": time.Minute, "10MS": 10 * time.Millisecond,
	} {
		if got, err := parseDuration(s); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "ms", "-1ms", "1x", "NaNs", "1e300s"} {
		if got, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", s, got)
		}
	}
}

// TestHelp protects -h: it prints a first line saying what the program does
// and exits 0; bad flags exit 2.
func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 {
		t.Errorf("-h exit %d, want 0", code)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if first != summary || !strings.Contains(out.String(), "-rate") {
		t.Errorf("-h printed %q first; want the summary, then the flags", first)
	}
	if code := run([]string{"-rate", "x"}, &out, &errb); code != 2 {
		t.Errorf("bad flag exit %d, want 2", code)
	}
}
