package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestControlNamespaces protects the control file end to end: with TCP
// uploads flowing through the router in namespaces, a SIGHUP applies a
// rewritten control file (a new queue and rate) without a restart, a bad
// file is refused with the running configuration kept, and the counters
// conserve at exit.
func TestControlNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real traffic through namespaces: skipped under -short")
	}
	l := newLab(t)
	dir := t.TempDir()
	stats, control := filepath.Join(dir, "stats.json"), filepath.Join(dir, "control")
	write := func(s string) {
		if err := os.WriteFile(control, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("aqm = fq-codel\nrate = 20mbit\n")
	rt := l.start(l.r, "router", "MTU", "-tun", "tun0", "-rate", "10mbit", "-delay", "5ms",
		"-stats", stats, "-report", "0", "-control", control)
	l.start(l.s, "server", "ready", "10.201.2.2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	load := l.helper(ctx, l.c, "client", "load", "10.201.2.2", "2", "6s")
	var out strings.Builder
	load.Stdout, load.Stderr = &out, &out
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	hup := func() { rt.cmd.Process.Signal(syscall.SIGHUP) }
	time.Sleep(2 * time.Second)
	write("aqm = cake\nrate = 30mbit\n")
	hup()
	time.Sleep(time.Second)
	write("aqm = cake\nrate = fast\n")
	hup()
	if err := load.Wait(); err != nil {
		t.Fatalf("load: %v: %s", err, out.String())
	}
	if err := rt.stop(t); err != nil {
		t.Errorf("router exit: %v\n%s", err, rt.output())
	}
	o := rt.output()
	t.Logf("client: %s\nrouter:\n%s", out.String(), o)
	if !strings.Contains(o, "now cake at 30mbit") || !strings.Contains(o, "configuration unchanged") {
		t.Errorf("router output lacks the applied change or the refused one")
	}
	s := readStats(t, stats)
	if !s.Conserved() || s.AQM != "cake" || s.Rate != 30*aqm.Mbit || s.Written.Packets == 0 {
		t.Errorf("stats: conserved %v, %s at %v, written %d; want conserved, cake at 30mbit, packets written", s.Conserved(), s.AQM, s.Rate, s.Written.Packets)
	}
}
