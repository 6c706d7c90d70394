package lab

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestParseDeliveryTrace protects the mahimahi reading: 1500 bytes per
// line counted in the 100 ms step it falls in, the last timestamp as the
// period (and counted in the last step), the mean over the period.
func TestParseDeliveryTrace(t *testing.T) {
	tr, err := ParseDeliveryTrace("x.up", strings.NewReader("0\n0\n50\n\n150\n200\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Period != 200*time.Millisecond || len(tr.Bps) != 2 {
		t.Fatalf("period %v, %d steps", tr.Period, len(tr.Bps))
	}
	if tr.Bps[0] != 3*12000/0.1 || tr.Bps[1] != 2*12000/0.1 {
		t.Errorf("steps %v", tr.Bps)
	}
	if !near(tr.MeanBps(), 5*12000/0.2, 1e-9) {
		t.Errorf("mean %v", tr.MeanBps())
	}
	// A period that is not a whole number of steps: the last is shorter.
	tr, err = ParseDeliveryTrace("y.up", strings.NewReader("10\n120\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Bps) != 2 || tr.Bps[1] != 12000/0.02 || !near(tr.MeanBps(), 2*12000/0.12, 1e-9) {
		t.Errorf("steps %v, mean %v", tr.Bps, tr.MeanBps())
	}
}

// TestParseRateTrace protects the .rate reading: piecewise-constant rates
// averaged over each 100 ms, the end line as the period, and one step
// for the last rate without one.
func TestParseRateTrace(t *testing.T) {
	tr, err := ParseRateTrace("x.rate", strings.NewReader("# c\n0s 10mbit\n150ms 20mbit # mid\n\n300ms end\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{10e6, 15e6, 20e6}
	if tr.Period != 300*time.Millisecond || len(tr.Bps) != 3 {
		t.Fatalf("period %v, steps %v", tr.Period, tr.Bps)
	}
	for i := range want {
		if !near(tr.Bps[i], want[i], 1e-9) {
			t.Errorf("step %d: %v, want %v", i, tr.Bps[i], want[i])
		}
	}
	tr, err = ParseRateTrace("y.rate", strings.NewReader("0s 1mbit\n1s 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Period != 1100*time.Millisecond || tr.Bps[10] != 0 || tr.Bps[9] != 1e6 {
		t.Errorf("period %v, steps %v", tr.Period, tr.Bps)
	}
}

// TestParseThroughputCSV protects the CSV reading: timestamps or seq_num,
// the only _mbps column or a named one, each row held until the next and
// the last as long as the gap before it.
func TestParseThroughputCSV(t *testing.T) {
	in := "time,throughput_mbps,retrans\n2024-05-27T11:18:46.0,2,0\n2024-05-27T11:18:46.5,4,0\n2024-05-27T11:18:47.0,6,1\n"
	tr, err := ParseThroughputCSV("s.csv", "", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Period != 1500*time.Millisecond || !near(tr.MeanBps(), 4e6, 1e-9) || tr.Bps[0] != 2e6 || tr.Bps[14] != 6e6 {
		t.Errorf("period %v, mean %v, steps %v", tr.Period, tr.MeanBps(), tr.Bps)
	}
	in = "protocol,seq_num,A_mbps,B_mbps\nTCP,3,10,1\nTCP,4,20,2\nTCP,6,30,3\n"
	if _, err := ParseThroughputCSV("g.csv", "", strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "g.csv line 1") {
		t.Errorf("two _mbps columns and none named: %v", err)
	}
	tr, err = ParseThroughputCSV("g.csv:B_mbps", "B_mbps", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	// Rows at 0, 1 and 3 s; the last holds 2 s: (1 + 2·2 + 3·2) / 5.
	if tr.Period != 5*time.Second || !near(tr.MeanBps(), 11e6/5, 1e-9) {
		t.Errorf("period %v, mean %v", tr.Period, tr.MeanBps())
	}
}

// TestTraceErrors protects the error messages: each bad input is refused
// with the file's name and the line at fault, never a panic.
func TestTraceErrors(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"a.up", "0\n5\nx\n", "a.up line 3"},
		{"a.up", "0\n5\n3\n", "a.up line 3"},
		{"a.up", "-1\n", "a.up line 1"},
		{"a.up", "0\n0\n", "a.up: no timestamp after 0"},
		{"a.up", "", "a.up: no timestamp"},
		{"b.rate", "0s 1mbit\n1s fast\n", "b.rate line 2"},
		{"b.rate", "1s 1mbit\n", "b.rate line 1"},
		{"b.rate", "0s 1mbit\n2s 2mbit\n1s 3mbit\n", "b.rate line 3"},
		{"b.rate", "0s 1mbit\n1s end\n2s 1mbit\n", "b.rate line 3"},
		{"b.rate", "0s 1mbit 3\n", "b.rate line 1"},
		{"b.rate", "0s end\n", "b.rate line 1"},
		{"b.rate", "# nothing\n", "b.rate: no steps"},
		{"c.csv", "seq_num,x_mbps\n0,1\n0,2\n", "c.csv line 3"},
		{"c.csv", "seq_num,x_mbps\n0,1\n1,-2\n", "c.csv line 3"},
		{"c.csv", "seq_num,x_mbps\n0,1\n1\n", "c.csv line 3"},
		{"c.csv", "when,x_mbps\n0,1\n", "c.csv line 1"},
		{"c.csv", "time,x_mbps\nyesterday,1\n", "c.csv line 2"},
		{"c.csv", "time,x_mbps\n1.5,1\n", "c.csv: 1 rows"},
	} {
		var err error
		switch {
		case strings.HasSuffix(c.name, ".up"):
			_, err = ParseDeliveryTrace(c.name, strings.NewReader(c.in))
		case strings.HasSuffix(c.name, ".rate"):
			_, err = ParseRateTrace(c.name, strings.NewReader(c.in))
		default:
			_, err = ParseThroughputCSV(c.name, "", strings.NewReader(c.in))
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want it to contain %q", c.name, c.in, err, c.want)
		}
	}
	if _, err := LoadTrace(filepath.Join(t.TempDir(), "x.txt")); err == nil {
		t.Error("a missing file with an unknown extension was read")
	}
	p := filepath.Join(t.TempDir(), "x.txt")
	os.WriteFile(p, []byte("0s 1mbit\n"), 0o644)
	if _, err := LoadTrace(p); err == nil || !strings.Contains(err.Error(), ".rate") {
		t.Errorf("unknown extension: %v", err)
	}
}

// TestTraceSchedule protects the replay window: the offset into the
// trace, its repetition past the period, the scale, neighbours merged and
// the floor for no capacity.
func TestTraceSchedule(t *testing.T) {
	tr := &Trace{Name: "t", Bps: []float64{10e6, 10e6, 0, 30e6}, Period: 400 * time.Millisecond}
	got := tr.Schedule(200*time.Millisecond, time.Second, 0.5)
	want := []RateStep{{0, MinTraceRate}, {100 * time.Millisecond, 15 * aqm.Mbit}, {200 * time.Millisecond, 5 * aqm.Mbit},
		{400 * time.Millisecond, MinTraceRate}, {500 * time.Millisecond, 15 * aqm.Mbit}, {600 * time.Millisecond, 5 * aqm.Mbit},
		{800 * time.Millisecond, MinTraceRate}, {900 * time.Millisecond, 15 * aqm.Mbit}}
	if len(got) != len(want) {
		t.Fatalf("schedule %v, want %v", got, want)
	}
	if s := (&Trace{}).Schedule(0, time.Second, 1); s != nil || !math.IsNaN((&Trace{}).MeanBps()) {
		t.Errorf("an empty trace gave %v", s)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// TestTraceSuite protects the autorate test on a trace: the five rows
// (probes, passive by echo and by acknowledgement, mean, 10th percentile) with distinct names, the
// schedule holding the window's mean outside the load, the fixed rates
// from the measured span, and the passive row without reflectors.
func TestTraceSuite(t *testing.T) {
	// 1 s at 20 Mbit/s, 1 s at 4 Mbit/s, repeating.
	bps := make([]float64, 20)
	for i := range bps {
		bps[i] = 20e6
		if i >= 10 {
			bps[i] = 4e6
		}
	}
	tr := &Trace{Name: "x.up", Bps: bps, Period: 2 * time.Second}
	cfgs, err := Suite("autorate", Options{Traces: []*Trace{tr}, Duration: 20 * time.Second, Warmup: 4 * time.Second, AutoratePassive: true})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Config{}
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
		if c.Test != "autorate-x.up" {
			t.Errorf("test %q", c.Test)
		}
		names[c.Name()] = c
	}
	for _, n := range []string{"fq-codel+autorate", "fq-codel+autorate-passive", "fq-codel+autorate-passive-ack", "fq-codel@mean", "fq-codel@p10"} {
		if _, ok := names[n]; !ok {
			t.Errorf("no row %s in %d rows", n, len(cfgs))
		}
	}
	mean, p10 := names["fq-codel@mean"], names["fq-codel@p10"]
	if mean.Rate != 12*aqm.Mbit || p10.Rate != 4*aqm.Mbit {
		t.Errorf("fixed rates %v and %v, want 12mbit and 4mbit", mean.Rate, p10.Rate)
	}
	m := mean.Moving
	w := mean.Load[0]
	if m.rateAt(0) != 12*aqm.Mbit || m.rateAt(w.To+time.Second) != 12*aqm.Mbit ||
		m.rateAt(w.From) != 20*aqm.Mbit || m.rateAt(w.From+time.Second) != 4*aqm.Mbit || m.rateAt(w.From+2*time.Second) != 20*aqm.Mbit {
		t.Errorf("schedule %v", m.Steps)
	}
	pass := strings.Join(names["fq-codel+autorate-passive"].RouterExtra, " ")
	ack := strings.Join(names["fq-codel+autorate-passive-ack"].RouterExtra, " ")
	if strings.Contains(ack, "-reflectors") || !strings.Contains(ack, "-autorate-passive-match ack") || !strings.Contains(pass, "-autorate-passive-match echo") {
		t.Errorf("passive rows' flags %q and %q", pass, ack)
	}
	if strings.Contains(pass, "-reflectors") || !strings.Contains(pass, "-autorate-passive") {
		t.Errorf("passive row's flags %q", pass)
	}
	if !strings.Contains(strings.Join(names["fq-codel+autorate"].RouterExtra, " "), "-reflectors") {
		t.Error("the probe row has no reflector")
	}
}

// TestSharedTraces protects the reading of the real traces beside the
// repository: each format loads, and the means match those their README
// states.
func TestSharedTraces(t *testing.T) {
	dir, err := TraceDir()
	if err != nil {
		t.Skipf("no shared traces (set %s or put them in ../shared/traces beside the repository): %v", TraceDirEnv, err)
	}
	for _, c := range []struct {
		file   string
		mean   float64 // Mbit/s, as the README states it
		period time.Duration
	}{
		{"Verizon-LTE-short.up", 5.95, 0},
		{"TMobile-LTE-short.down", 16.7, 0},
		{"starlink-maine-20240527-downlink.rate", 125, 0},
		{"starlink-maine-20240527-tcp-downlink.csv", 125, 0},
		{"5gophers-drive1-tmobile.rate", 113, 0},
		{"5gophers-car-driving-trace-1.csv:TMobile_throughput_mbps", 0, 0},
	} {
		tr, err := LoadTrace(filepath.Join(dir, c.file))
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		got := tr.MeanBps() / 1e6
		t.Logf("%s: %v, mean %.2f Mbit/s, %d steps", tr.Name, tr.Period, got, len(tr.Bps))
		if c.mean > 0 && !near(got, c.mean, 0.03) {
			t.Errorf("%s: mean %.2f Mbit/s, the README says %.2f", c.file, got, c.mean)
		}
		if len(tr.Schedule(0, time.Minute, 1)) < 2 {
			t.Errorf("%s: a minute of it does not move", c.file)
		}
	}
}

// FuzzParseTrace protects the readers against any input: each returns a
// trace with a positive period and one finite, non-negative rate per step,
// or an error, and never panics.
func FuzzParseTrace(f *testing.F) {
	f.Add(uint8(0), "0\n0\n5\n12\n")
	f.Add(uint8(1), "0s 10mbit\n150ms 0\n1s end\n")
	f.Add(uint8(2), "time,x_mbps\n2024-05-27T11:18:46.5,3\n2024-05-27T11:18:47,4\n")
	f.Add(uint8(2), "seq_num,a_mbps\n3,1\n9,2\n")
	f.Fuzz(func(t *testing.T, kind uint8, in string) {
		var tr *Trace
		var err error
		switch kind % 3 {
		case 0:
			tr, err = ParseDeliveryTrace("f.up", strings.NewReader(in))
		case 1:
			tr, err = ParseRateTrace("f.rate", strings.NewReader(in))
		default:
			tr, err = ParseThroughputCSV("f.csv", "", strings.NewReader(in))
		}
		if err != nil {
			return
		}
		if tr.Period <= 0 || len(tr.Bps) != int((tr.Period+TraceStep-1)/TraceStep) {
			t.Fatalf("period %v with %d steps", tr.Period, len(tr.Bps))
		}
		for i, b := range tr.Bps {
			if !(b >= 0) || math.IsInf(b, 0) {
				t.Fatalf("step %d: %v", i, b)
			}
		}
		tr.Schedule(0, 2*time.Second, 1)
	})
}
