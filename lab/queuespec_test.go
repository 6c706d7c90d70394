package lab

import (
	"slices"
	"strings"
	"testing"
)

// TestParseQueues protects the -queues syntax [label=]name[:limit][[params]]:
// commas inside brackets belong to the params, each part lands in its
// field, the label names the queue in reports, the params reach the
// router as -params, and a bad spec or a field the queue's Config lacks
// fails before any run.
func TestParseQueues(t *testing.T) {
	got, err := ParseQueues("fifo:1000, fq-codel ,no-guard=fq-codel[disable-flood-guard=true,target=4ms],cake[disable-flood-guard=true],big=fifo:2000")
	if err != nil {
		t.Fatal(err)
	}
	want := []Queue{
		{Router: "fifo", Limit: 1000},
		{Router: "fq-codel"},
		{Router: "fq-codel", Params: "disable-flood-guard=true,target=4ms", Name: "no-guard"},
		{Router: "cake", Params: "disable-flood-guard=true"},
		{Router: "fifo", Limit: 2000, Name: "big"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	labels := []string{"fifo1000", "fq-codel", "no-guard", "cake[disable-flood-guard=true]", "big"}
	for i, q := range got {
		if l := q.Label(); l != labels[i] {
			t.Errorf("%+v: label %q, want %q", q, l, labels[i])
		}
	}

	rc := RouterCommand{Argv: []string{"/r"}, Flags: "  -limit packets\n  -params settings\n"}
	argv, err := RouterArgs{AQM: "fq-codel", Rate: "50mbit", Params: got[2].Params}.argv(rc, "ns", "tun0", "/s")
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(argv, "-params"); i < 0 || i+1 >= len(argv) || argv[i+1] != "disable-flood-guard=true,target=4ms" {
		t.Errorf("router argv %q lacks the params", argv)
	}
	if argv, _ := (RouterArgs{AQM: "fq-codel", Rate: "50mbit"}).argv(rc, "ns", "tun0", "/s"); slices.Contains(argv, "-params") {
		t.Errorf("router argv %q has -params without params", argv)
	}
	old := RouterCommand{Argv: []string{"/r"}, Flags: "  -limit packets\n"}
	if _, err := (RouterArgs{AQM: "fq-codel", Params: "target=4ms"}).argv(old, "ns", "tun0", "/s"); err == nil {
		t.Error("params were passed to a router without -params")
	}

	if q, err := ParseQueues("none"); err != nil || q == nil || len(q) != 0 {
		t.Errorf("none: %v %v", q, err)
	}
	if q, err := ParseQueues(""); err != nil || q != nil {
		t.Errorf("empty: %v %v", q, err)
	}
	for _, bad := range []string{
		"fq-codel[target=4ms",      // unclosed
		"fq-codel]",                // no opening bracket
		"fq-codel[a=[b]]",          // nested
		"fq-codel[]",               // empty params
		"fq-codel[target=4ms]x",    // text after the params
		"fifo:0", "fifo:x", ":100", // bad limit, no name
		"=fq-codel", "a b=fq-codel", // bad label
		"fq-codel[no-such-field=1]",   // a field FQ-CoDel's Config lacks
		"fq-codel[target=soon]",       // a value that is no duration
		"fifo[disable-flood-guard=1]", // the FIFO has no flood guard
	} {
		if q, err := ParseQueues(bad); err == nil {
			t.Errorf("%q accepted as %+v", bad, q)
		} else if !strings.Contains(err.Error(), strings.SplitN(bad, ",", 2)[0]) {
			t.Errorf("%q: error %q does not name the spec", bad, err)
		}
	}
	// A name outside the registry (a router variant's) passes untouched.
	if q, err := ParseQueue("variant[knob=3]"); err != nil || q.Router != "variant" || q.Params != "knob=3" {
		t.Errorf("variant: %+v %v", q, err)
	}
}
