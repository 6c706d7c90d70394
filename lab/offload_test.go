package lab

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"testing"
)

// TestParseOffloads protects -offloads: off and on with an optional router
// policy, labels that keep the default run's name and tell the others
// apart, and errors for anything else.
func TestParseOffloads(t *testing.T) {
	got, err := ParseOffloads(" off, on ,on:keep,on:split,off:auto")
	if err != nil {
		t.Fatal(err)
	}
	want := []Offload{{}, {Veth: true}, {Veth: true, GSO: "keep"}, {Veth: true, GSO: "split"}, {GSO: "auto"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	labels := []string{"", "+offload", "+offload+gso-keep", "+offload+gso-split", "+gso-auto"}
	strs := []string{"off", "on", "on:keep", "on:split", "off:auto"}
	for i, o := range got {
		if o.Label() != labels[i] || o.String() != strs[i] {
			t.Errorf("%+v: label %q string %q, want %q %q", o, o.Label(), o.String(), labels[i], strs[i])
		}
		if back, err := ParseOffloads(o.String()); err != nil || back[0] != o {
			t.Errorf("%q reads back as %+v, %v", o.String(), back, err)
		}
	}
	if d, err := ParseOffloads(""); err != nil || len(d) != 1 || d[0] != (Offload{}) {
		t.Errorf("empty: %+v %v, want offloads off", d, err)
	}
	for _, bad := range []string{"yes", "on:", "on:fast", "off,off", "on,,off", "ON"} {
		if o, err := ParseOffloads(bad); err == nil {
			t.Errorf("%q: no error (got %+v)", bad, o)
		}
	}
	c := Config{Test: "rrul", Queue: Queue{Router: "fq-codel"}, Rate: 1, Flows: []FlowSpec{{Stop: 1}}, Offload: Offload{GSO: "fast"}}
	if err := c.Validate(); err == nil {
		t.Error("Validate took GSO policy \"fast\"")
	}
}

// TestIfOffloadsLine protects the offload agent's protocol: the state
// line written for an interface reads back as the same state, and a
// malformed line is refused rather than read as all off.
func TestIfOffloadsLine(t *testing.T) {
	for _, o := range []IfOffloads{{Name: "c0"}, {Name: "r1", On: [3]bool{true, true, false}}, {Name: "h0", On: [3]bool{false, true, true}}} {
		back, err := ParseIfOffloads(o.String())
		if err != nil || back != o {
			t.Errorf("%q reads back as %+v, %v", o.String(), back, err)
		}
	}
	if s := (IfOffloads{Name: "r0", On: [3]bool{true, false, true}}).String(); s != "r0: tso on, gso off, gro on" {
		t.Errorf("line %q", s)
	}
	for _, bad := range []string{"", "c0", "c0: tso on, gso on", "c0: tso on, gro on, gso on", "c0: tso maybe, gso on, gro on", ": tso on, gso on, gro on"} {
		if o, err := ParseIfOffloads(bad); err == nil {
			t.Errorf("%q: no error (got %+v)", bad, o)
		}
	}
}

// TestOffloadRecorded protects the record of a run's offloads: runs.csv
// has the veths' state and the router's policy in their own columns and
// the configuration JSON, results.json carries both and the state read
// back, and the router gets -gso only when asked and only if it has it.
func TestOffloadRecorded(t *testing.T) {
	cfg, clients, epoch, procs := synthRun()
	off := Analyze(cfg, clients, epoch, procs)
	cfg.Offload = Offload{Veth: true, GSO: "keep"}
	on := Analyze(cfg, clients, epoch, procs)
	on.Offloads = []string{"c/c0: tso on, gso on, gro off"}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, []Result{off, on}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for i, want := range [][3]string{{"off", "", "fq-codel"}, {"on", "keep", "fq-codel+offload+gso-keep"}} {
		row := rows[1+i]
		if row[col["offloads"]] != want[0] || row[col["gso"]] != want[1] || row[col["config"]] != want[2] {
			t.Errorf("row %d: offloads %q gso %q config %q, want %q", i, row[col["offloads"]], row[col["gso"]], row[col["config"]], want)
		}
		var back Config
		if err := json.Unmarshal([]byte(row[col["config_json"]]), &back); err != nil {
			t.Fatal(err)
		}
		if back.Offload.String() != []string{"off", "on:keep"}[i] {
			t.Errorf("row %d: config_json offload %+v", i, back.Offload)
		}
	}
	b, err := json.Marshal(Report{Runs: []Result{on}})
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Runs []struct {
			Config struct {
				Offload map[string]any `json:"offload"`
			} `json:"config"`
			Offloads []string `json:"offloads"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if r := rep.Runs[0]; r.Config.Offload["veth"] != true || r.Config.Offload["gso"] != "keep" || len(r.Offloads) != 1 {
		t.Errorf("results.json run: offload %v, state %q", r.Config.Offload, r.Offloads)
	}

	rc := RouterCommand{Argv: []string{"/r"}, Flags: "  -offload\n  -gso policy\n"}
	argv, err := RouterArgs{AQM: "fq-codel", Rate: "200mbit", GSO: "keep"}.argv(rc, "ns", "tun0", "/s")
	if i := slices.Index(argv, "-gso"); err != nil || i < 0 || i+1 >= len(argv) || argv[i+1] != "keep" {
		t.Errorf("router argv %q (%v) lacks -gso keep", argv, err)
	}
	if argv, _ := (RouterArgs{AQM: "fq-codel", Rate: "200mbit"}).argv(rc, "ns", "tun0", "/s"); slices.Contains(argv, "-gso") {
		t.Errorf("router argv %q has -gso without a policy", argv)
	}
	if _, err := (RouterArgs{AQM: "fq-codel", GSO: "keep"}).argv(RouterCommand{Argv: []string{"/r"}}, "ns", "tun0", "/s"); err == nil {
		t.Error("-gso was passed to a router without it")
	}
}
