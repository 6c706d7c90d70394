package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestParseTraceFlags protects the plumbing of -trace: each file becomes
// its own autorate test whose moving bottleneck replays it from
// -trace-offset, scaled by -trace-scale, with the passive row under
// -autorate-passive; the flags without the autorate test, a bad scale or
// a bad file are usage errors.
func TestParseTraceFlags(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.rate")
	os.WriteFile(a, []byte("0s 10mbit\n1s 2mbit\n2s end\n"), 0o644)
	b := filepath.Join(dir, "b.up")
	os.WriteFile(b, []byte("0\n500\n1000\n"), 0o644)
	bad := filepath.Join(dir, "c.rate")
	os.WriteFile(bad, []byte("0s 10mbit\n1s lots\n"), 0o644)

	inv, code := parse([]string{"-trace", a + "," + b, "-trace-offset", "1s", "-trace-scale", "2", "-autorate-passive", "-duration", "20s", "autorate"})
	if code != -1 {
		t.Fatalf("exit code %d", code)
	}
	if len(inv.cfgs) != 2*5 {
		t.Fatalf("%d configurations, want 10", len(inv.cfgs))
	}
	tests := map[string]int{}
	for _, c := range inv.cfgs {
		tests[c.Test]++
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
	}
	if tests["autorate-a.rate"] != 5 || tests["autorate-b.up"] != 5 {
		t.Errorf("tests %v", tests)
	}
	c := inv.cfgs[0]
	from := c.Load[0].From
	// From 1 s into a.rate: 2 Mbit/s then 10, doubled.
	if m := c.Moving; m.Steps[1].At != from || m.Steps[1].Rate != 4*aqm.Mbit || m.Steps[2].At != from+time.Second || m.Steps[2].Rate != 20*aqm.Mbit {
		t.Errorf("schedule starts %v", m.Steps[:3])
	}
	if c.Name() != "fq-codel+autorate" || inv.cfgs[1].Name() != "fq-codel+autorate-passive" {
		t.Errorf("rows %s, %s", c.Name(), inv.cfgs[1].Name())
	}

	for _, args := range [][]string{
		{"-trace", a, "rrul"},
		{"-trace", a, "-trace-scale", "0", "autorate"},
		{"-trace", a, "-trace-offset", "-1s", "autorate"},
		{"-trace", bad, "autorate"},
		{"-trace", filepath.Join(dir, "none.up"), "autorate"},
	} {
		if _, code := parse(args); code != 2 {
			t.Errorf("%s: exit code %d, want 2", strings.Join(args, " "), code)
		}
	}
}
