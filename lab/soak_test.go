package lab

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMalformedKinds protects the soak's bad input: each of the ten kinds
// is what it says, so that the router meets every class of malformed
// packet, and random bytes never pass for IPv4 or IPv6.
func TestMalformedKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		p, proto := Malformed(rng, i)
		bad := false
		switch i % 10 {
		case 0:
			bad = len(p) < 20
		case 1:
			bad = p[0]>>4 == 4 && p[0]&15 < 5
		case 2:
			bad = binary.BigEndian.Uint16(p[2:]) < 20
		case 3:
			bad = p[0]>>4 != 4 && p[0]>>4 != 6
		case 4:
			bad = p[0]>>4 == 6 && p[6] == 0 && proto == 0x86dd
		case 5:
			bad = binary.BigEndian.Uint16(p[6:])&0x2000 != 0
		case 6:
			bad = len(p) == 0
		case 7:
			bad = int(binary.BigEndian.Uint16(p[2:])) > len(p)
		case 8:
			bad = p[0]>>4 == 6 && int(binary.BigEndian.Uint16(p[4:]))+40 > len(p)
		case 9:
			bad = len(p) > 0 && p[0]>>4 != 4 && p[0]>>4 != 6
		}
		if !bad {
			t.Fatalf("packet %d (kind %d) is not what it claims: % x", i, i%10, p)
		}
	}
}

// TestSoakLine protects the soak's last line, which scripts read.
func TestSoakLine(t *testing.T) {
	r := SoakResult{Conserved: true, RSSStartMB: 12.34, RSSEndMB: 13, GoroutineStart: 15, GoroutineEnd: 16, Malformed: 60000, Reconfigs: 900, ProbeP99Ms: 27.26, Panics: 0}
	want := "SOAK conserved=true rss_start_mb=12.3 rss_end_mb=13.0 goroutines_start=15 goroutines_end=16 malformed=60000 reconfigs=900 probe_p99_ms=27.3 panics=0"
	if got := r.Line(); got != want {
		t.Errorf("Line() =\n%s\nwant\n%s", got, want)
	}
}

// TestWriteSoak protects the soak's files: one CSV row per sample under a
// header, the JSON and the plot.
func TestWriteSoak(t *testing.T) {
	dir := t.TempDir()
	r := SoakResult{Samples: []SoakSample{{T: 1, RSSMB: 10, Goroutines: 15, Conserved: true, AQM: "cake"}, {T: 3, RSSMB: 11, Goroutines: 15, Conserved: true, AQM: "fifo"}}}
	if err := writeSoak(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "soak.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "t_s,rss_mb,heap_mb,buffer_mb,goroutines") || !strings.Contains(lines[2], ",fifo,") {
		t.Errorf("soak.csv:\n%s", b)
	}
	for _, f := range []string{"soak.json", "soak.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestSoakBound protects the soak's own bound: an hour of load with a
// flood a minute validates with MaxRun, the same run without it is refused
// by the 10-minute bound, and MaxRun cannot lift the bound past MaxSoakRun.
func TestSoakBound(t *testing.T) {
	cfgs, err := Suite("rrul", Options{Duration: time.Hour, Queues: []Queue{{Router: "fq-codel"}}, Kernel: []KernelQdisc{}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cfgs[0]
	for at := cfg.Load[0].From; at < cfg.Load[0].To; at += time.Minute {
		cfg.Floods = append(cfg.Floods, FloodSpec{Rate: 1e8, Size: 1000, RandomPorts: true, Start: at, Stop: at + 4*time.Second})
	}
	if err := cfg.Validate(); err == nil {
		t.Error("an hour-long run validated without MaxRun")
	}
	cfg.MaxRun = cfg.End() + time.Minute
	if err := cfg.Validate(); err != nil {
		t.Errorf("with MaxRun: %v", err)
	}
	long := cfg
	long.Load = []Window{{From: cfg.Idle, To: MaxSoakRun + time.Minute}}
	long.Flows = nil
	long.Floods = cfg.Floods[:1]
	long.MaxRun = 10 * MaxSoakRun
	if err := long.Validate(); err == nil {
		t.Errorf("a run of %v validated past MaxSoakRun", long.End())
	}
}
