package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aqmkit/aqmkit/lab"
)

// TestParseOffloadsFlag protects the plumbing of -offloads: every
// configuration runs once per setting, next to each other, with the
// setting in its Config (and so in its JSON and its label), beside -cc and
// -queues; without the flag the veths' offloads are off and the labels
// unchanged; a bad value is a usage error.
func TestParseOffloadsFlag(t *testing.T) {
	inv, code := parse(strings.Fields("-rate 200mbit -cc cubic,bbr -queues fq-codel,cake -offloads off,on:split,on:keep -router-args -report=0 rrul"))
	if code != -1 {
		t.Fatalf("exit code %d", code)
	}
	if len(inv.cfgs) != 2*2*3 {
		t.Fatalf("%d configurations, want 12", len(inv.cfgs))
	}
	want := []lab.Offload{{}, {Veth: true, GSO: "split"}, {Veth: true, GSO: "keep"}}
	names := map[string]bool{}
	for i, c := range inv.cfgs {
		if c.Offload != want[i%3] {
			t.Errorf("config %d (%s %s): offload %+v, want %+v", i, c.Test, c.Name(), c.Offload, want[i%3])
		}
		if c.Queue.Router != []string{"fq-codel", "cake"}[i/3%2] || c.Test != []string{"rrul-cubic", "rrul-bbr"}[i/6] {
			t.Errorf("config %d: %s %s out of order", i, c.Test, c.Queue.Label())
		}
		if len(c.RouterExtra) != 1 || c.RouterExtra[0] != "-report=0" {
			t.Errorf("config %d: router extra %q", i, c.RouterExtra)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("config %d: %v", i, err)
		}
		b, _ := json.Marshal(c)
		var back lab.Config
		if err := json.Unmarshal(b, &back); err != nil || back.Offload != c.Offload {
			t.Errorf("config %d: JSON %s reads back offload %+v (%v)", i, b, back.Offload, err)
		}
		names[c.Test+" "+c.Name()] = true
	}
	if len(names) != len(inv.cfgs) {
		t.Errorf("labels not distinct: %v", names)
	}
	if !names["rrul-cubic fq-codel"] || !names["rrul-bbr cake+offload+gso-keep"] || !names["rrul-cubic cake+offload+gso-split"] {
		t.Errorf("labels %v", names)
	}

	inv, code = parse(strings.Fields("-queues fq-codel rrul"))
	if code != -1 || len(inv.cfgs) != 1 || inv.cfgs[0].Offload != (lab.Offload{}) || inv.cfgs[0].Name() != "fq-codel" {
		t.Errorf("default: code %d, configs %+v", code, inv.cfgs)
	}
	for _, bad := range []string{"-offloads maybe rrul", "-offloads on:fast rrul", "-offloads on,on rrul"} {
		if _, code := parse(strings.Fields(bad)); code != 2 {
			t.Errorf("%q: exit code %d, want 2", bad, code)
		}
	}
}

// TestParseFlent protects the naming of flent's tests on the command
// line: flent-rrul runs flent's rrul with its default queues, -cc and
// -duration reach flent's command line, and an unknown flent test is a
// usage error.
func TestParseFlent(t *testing.T) {
	inv, code := parse(strings.Fields("-rate 500mbit -duration 20s -cc bbr flent-rrul"))
	if code != -1 {
		t.Fatalf("exit code %d", code)
	}
	if len(inv.cfgs) != 3 {
		t.Fatalf("%d configurations, want 3 (fifo:1000, fq-codel, cake)", len(inv.cfgs))
	}
	for _, c := range inv.cfgs {
		if c.Flent != "rrul" || c.FlentCC != "bbr" || c.Load[0].To-c.Load[0].From != 20e9 || c.Rate != 500e6 {
			t.Errorf("%s %s: flent %q cc %q load %v rate %v", c.Test, c.Name(), c.Flent, c.FlentCC, c.Load, c.Rate)
		}
	}
	if _, code := parse([]string{"flent-nope"}); code != 2 {
		t.Errorf("flent-nope: exit code %d, want 2", code)
	}
}
