package router

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
)

// stepClock is a clock the test moves, safe for the router's goroutines to
// read meanwhile.
type stepClock struct{ t atomic.Int64 }

func newStepClock() *stepClock {
	c := new(stepClock)
	c.t.Store(int64(clock.Epoch))
	return c
}

func (c *stepClock) Now() aqm.Time           { return aqm.Time(c.t.Load()) }
func (c *stepClock) advance(d time.Duration) { c.t.Add(int64(d)) }

// loadRig is a router that is never run: the test plays its reader
// (readStart, readEnd) on a clock it moves, sets the bytes each direction
// read and the kernel's drop counter, and closes each window itself
// (sample), so that every decision of the load monitor is deterministic.
type loadRig struct {
	r     *Router
	clk   *stepClock
	drops atomic.Uint64
	mu    sync.Mutex
	logs  []string
}

func newLoadRig(t *testing.T, cfg Config) *loadRig {
	t.Helper()
	g := &loadRig{clk: newStepClock()}
	cfg.Clock = g.clk
	cfg.Load.KernelDrops = func() (uint64, error) { return g.drops.Load(), nil }
	cfg.Logf = func(format string, args ...any) {
		g.mu.Lock()
		g.logs = append(g.logs, fmt.Sprintf(format, args...))
		g.mu.Unlock()
	}
	r, err := New(cfg, newPipe(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	g.r = r
	t.Cleanup(func() {
		r.stopFlow()
		r.consumers.Wait()
		r.lines.Wait()
	})
	return g
}

func (g *loadRig) direction(t *testing.T, p string) *Queue {
	t.Helper()
	d, err := g.r.table.lookup(netip.MustParsePrefix(p))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// window plays one DefaultLoadPeriod: the reader spends busy of it working
// (in full reads, which never wait) and the rest in one read that found
// the device empty; then the window is closed.
func (g *loadRig) window(busy float64) Load {
	work := time.Duration(busy * float64(DefaultLoadPeriod))
	m := g.r.load
	if work > 0 { // the read after one that found the device empty returns at once
		t0 := m.readStart(0)
		m.readEnd(0, t0, 32, 32)
	}
	for done := time.Duration(0); done < work; done += 10 * time.Millisecond {
		t0 := m.readStart(0)
		g.clk.advance(min(10*time.Millisecond, work-done))
		m.readEnd(0, t0, 32, 32)
	}
	if idle := DefaultLoadPeriod - work; idle > 0 {
		t0 := m.readStart(0)
		g.clk.advance(idle)
		m.readEnd(0, t0, 1, 32)
	}
	m.sample(g.clk.Now())
	return g.r.Load()
}

func (g *loadRig) logged(sub string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, l := range g.logs {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// TestLoadSaturation protects the saturation signal: a reader that never
// finds the device empty for two windows in a row, or a kernel that drops
// packets in front of the device, makes the router saturated, reported in
// Load, Stats (and its JSON) and Metrics, and warned about once; a reader
// that waits again clears it.
func TestLoadSaturation(t *testing.T) {
	g := newLoadRig(t, Config{AQM: "fq-codel", Rate: 200 * aqm.Mbit})
	g.drops.Store(1000) // a persistent device's old drops are not the router's
	g.r.load.sample(g.clk.Now())
	steps := []struct {
		busy      float64
		drops     uint64
		saturated bool
	}{
		{0.1, 0, false},
		{1, 0, false}, // one busy window is not enough
		{1, 0, true},
		{1, 0, true},
		{0.5, 0, false},
		{1, 0, false},
		{0.2, 3, true}, // the kernel dropped: saturated at once
		{0.2, 0, false},
	}
	for i, s := range steps {
		g.drops.Add(s.drops)
		l := g.window(s.busy)
		if l.Saturated != s.saturated {
			t.Errorf("window %d (busy %.1f, %d kernel drops): saturated %v, want %v", i, s.busy, s.drops, l.Saturated, s.saturated)
		}
		if l.ReaderBusy < s.busy-0.01 || l.ReaderBusy > s.busy+0.01 {
			t.Errorf("window %d: reader busy %.3f, want %.1f", i, l.ReaderBusy, s.busy)
		}
		if i == 2 {
			if l.TUNBacklog != 2*21*32 { // two windows of full reads
				t.Errorf("window %d: TUN backlog %d, want the %d packets read without finding it empty", i, l.TUNBacklog, 2*21*32)
			}
			st := g.r.Stats()
			b, _ := json.Marshal(st)
			if !st.Load.Saturated || !strings.Contains(string(b), `"saturated":true`) {
				t.Errorf("Stats do not say saturated: %s", b)
			}
			found := false
			for m := range g.r.Metrics() {
				if m.Name == "router_saturated" {
					found = m.Value == 1 && m.Kind == aqm.Gauge
				}
			}
			if !found {
				t.Error("router_saturated is not a gauge at 1")
			}
		}
	}
	l := g.r.Load()
	if l.SaturatedWindows != 3 || l.KernelDropped != 3 {
		t.Errorf("saturated windows %d, kernel dropped %d; want 3 and 3", l.SaturatedWindows, l.KernelDropped)
	}
	if n := g.logged("router: saturated:"); n != 1 {
		t.Errorf("warned %d times, want once", n)
	}
}

// TestLoadReadInProgress protects the busy share of a reader blocked in a
// read when the window closes: waiting so far counts as idle, so a router
// with nothing to read is never called busy.
func TestLoadReadInProgress(t *testing.T) {
	g := newLoadRig(t, Config{AQM: "fifo"})
	m := g.r.load
	m.sample(g.clk.Now())
	t0 := m.readStart(0)
	for i := range 3 {
		g.clk.advance(DefaultLoadPeriod)
		m.sample(g.clk.Now())
		if l := g.r.Load(); l.ReaderBusy != 0 || l.Saturated {
			t.Errorf("window %d with the reader blocked: busy %.2f, saturated %v", i, l.ReaderBusy, l.Saturated)
		}
	}
	m.readEnd(0, t0, 1, 32)
}

// TestLoadSustainable protects the sustainable rate estimate: what the
// router read per window while it was saturated, smoothed; unsaturated
// windows, however busy, leave it alone.
func TestLoadSustainable(t *testing.T) {
	g := newLoadRig(t, Config{AQM: "fifo", Rate: aqm.Gbit})
	d := g.direction(t, "10.201.2.0/24")
	g.r.load.sample(g.clk.Now())
	read := func(bits uint64) { d.c.readBytes.Add(bits / 8) }
	read(40e6) // 200 Mb/s, not saturated
	if l := g.window(0.9); l.Sustainable != 0 {
		t.Errorf("sustainable %v before any saturation, want 0 (unknown)", l.Sustainable)
	}
	read(40e6) // 200 Mb/s while the kernel drops
	g.drops.Add(1)
	if l := g.window(0.2); l.Sustainable != 200*aqm.Mbit {
		t.Errorf("sustainable %v, want 200Mbit", l.Sustainable)
	}
	read(24e6) // 120 Mb/s saturated: smoothed (3·200 + 120)/4
	g.drops.Add(1)
	if l := g.window(0.2); l.Sustainable != 180*aqm.Mbit {
		t.Errorf("sustainable %v, want 180Mbit", l.Sustainable)
	}
	read(1e6)
	if l := g.window(0.25); l.Sustainable != 180*aqm.Mbit {
		t.Errorf("sustainable %v after an unsaturated window, want 180Mbit", l.Sustainable)
	}
}

// TestAutoCap protects the rate cap: in a saturated window every shaped
// direction is capped at 0.9 of what the busiest direction read (or of
// the cap in effect, whichever is lower), the cap
// holds for four unsaturated windows and while the reader is busy 80 to
// 95 % of the time, rises by 5 % a window after that, and is lifted once
// it reaches the configured rate; it never goes below a tenth of the rate.
func TestAutoCap(t *testing.T) {
	const rate = 500 * aqm.Mbit
	g := newLoadRig(t, Config{AQM: "fq-codel", Rate: rate, Load: LoadConfig{AutoCap: true}})
	a, b := g.direction(t, "10.201.2.0/24"), g.direction(t, "10.201.1.0/24")
	g.r.load.sample(g.clk.Now())
	read := func(d *Queue, bits uint64) { d.c.readBytes.Add(bits / 8) }
	near := func(got, want aqm.Rate) bool { return got+2 >= want && got <= want+2 }
	check := func(step string, want aqm.Rate) {
		t.Helper()
		if !near(a.Rate(), want) || !near(b.Rate(), want) || !near(a.linkRate(), want) {
			t.Errorf("%s: rates %v and %v (GSO rule %v), want %v", step, a.Rate(), b.Rate(), a.linkRate(), want)
		}
	}
	read(a, 80e6) // 400 Mb/s
	read(b, 10e6)
	g.window(1)
	check("one busy window", rate)
	read(a, 80e6)
	read(b, 10e6)
	l := g.window(1)
	check("saturated", 360*aqm.Mbit)
	if !near(l.RateCap, 360*aqm.Mbit) {
		t.Errorf("RateCap %v, want 360Mbit", l.RateCap)
	}
	read(a, 80e6)
	read(b, 10e6)
	g.window(1)
	check("saturated again: 0.9 of the cap", 324*aqm.Mbit)
	for i := range 4 {
		g.window(0.5)
		check(fmt.Sprintf("quiet window %d of 4", i+1), 324*aqm.Mbit)
	}
	g.window(0.9)
	check("busy 90 %: hold", 324*aqm.Mbit)
	want := 324e6
	for i := range 8 {
		g.window(0.5)
		want *= 1.05
		check(fmt.Sprintf("quiet window %d", i), aqm.Rate(want))
	}
	g.window(0.5)
	check("the cap reached the rate", rate)
	if l := g.r.Load(); l.RateCap != 0 {
		t.Errorf("RateCap %v after it reached the rate, want 0", l.RateCap)
	}
	g.drops.Add(1)
	read(a, 8e3) // a kernel drop while the router read next to nothing
	g.window(0.1)
	check("floor", rate/10)
	if n := g.logged("capping the rate"); n != 1 {
		t.Errorf("the warning mentions the cap %d times, want once", n)
	}
}

// TestAutoCapCAKE protects the cap on a queue that shapes itself: CAKE's
// own rate is capped, since its front does not shape.
func TestAutoCapCAKE(t *testing.T) {
	g := newLoadRig(t, Config{AQM: "cake", Rate: 100 * aqm.Mbit, Load: LoadConfig{AutoCap: true}})
	d := g.direction(t, "10.201.2.0/24")
	g.r.load.sample(g.clk.Now())
	d.c.readBytes.Add(1e6) // 40 Mb/s
	g.drops.Add(5)
	g.window(1)
	var got aqm.Rate
	d.front.WithQueue(func(q aqm.Queue[[]byte]) { got = unwrap(q).(*cakeIP).q.Config().Rate })
	if got != 36*aqm.Mbit || d.linkRate() != 36*aqm.Mbit {
		t.Errorf("CAKE's rate %v (GSO rule %v), want 36Mbit", got, d.linkRate())
	}
}

// TestGSOKeptWhileSaturated protects the CPU half of the GSO rule: with
// GSOAuto, a router saturated while it splits keeps every super-packet
// whole (one saturated with nothing to split changes nothing), for at least
// 10 s and then as long as it stays saturated, and twice as long after it
// saturates again while splitting; GSOSplit and DisableGSOKeep keep
// splitting.
func TestGSOKeptWhileSaturated(t *testing.T) {
	const big, small = 20 * 1500, 3 * 1500 // 4.8 and 0.72 ms at 50 Mb/s
	g := newLoadRig(t, Config{AQM: "fq-codel", Rate: 50 * aqm.Mbit, VnetHdr: true})
	d := g.direction(t, "10.201.2.0/24")
	g.r.load.sample(g.clk.Now())
	if !d.splits(big) || d.splits(small) {
		t.Fatalf("at 50 Mb/s: splits %d bytes %v, %d bytes %v; want true, false", big, d.splits(big), small, d.splits(small))
	}
	g.drops.Add(1)
	if l := g.window(0.5); !l.Saturated || l.GSOKept {
		t.Fatalf("saturated without splitting: saturated %v, GSO kept %v; want true, false", l.Saturated, l.GSOKept)
	}
	g.drops.Add(1)
	d.c.split.Add(1)
	if l := g.window(0.5); !l.GSOKept || d.splits(big) {
		t.Fatalf("saturated: GSO kept %v, splits %v", l.GSOKept, d.splits(big))
	}
	for range 49 { // 9.8 s more
		g.window(0.5)
	}
	if d.splits(big) {
		t.Error("split again before 10 s")
	}
	if l := g.window(0.5); l.GSOKept || !d.splits(big) {
		t.Errorf("after 10 s unsaturated: GSO kept %v, splits %v", l.GSOKept, d.splits(big))
	}
	g.drops.Add(1)
	d.c.split.Add(1)
	g.window(0.5)
	for range 99 { // 19.8 s
		g.window(0.5)
	}
	if d.splits(big) {
		t.Error("split again before 20 s the second time")
	}
	g.window(0.5)
	if !d.splits(big) {
		t.Error("still kept after 20 s")
	}

	for _, cfg := range []Config{
		{AQM: "fq-codel", Rate: 50 * aqm.Mbit, VnetHdr: true, GSO: front.GSOSplit},
		{AQM: "fq-codel", Rate: 50 * aqm.Mbit, VnetHdr: true, Load: LoadConfig{DisableGSOKeep: true}},
	} {
		g := newLoadRig(t, cfg)
		d := g.direction(t, "10.201.2.0/24")
		g.r.load.sample(g.clk.Now())
		g.drops.Add(1)
		d.c.split.Add(1)
		if l := g.window(1); !l.Saturated || l.GSOKept || !d.splits(big) {
			t.Errorf("%v, DisableGSOKeep %v: saturated %v, GSO kept %v, splits %v; want true, false, true", cfg.GSO, cfg.Load.DisableGSOKeep, l.Saturated, l.GSOKept, d.splits(big))
		}
	}
}

// TestVnetAutoBySize protects GSOAuto on the packet path: at 50 Mb/s a
// super-packet of three 1448-byte segments (0.7 ms) is written whole and
// one of twenty (4.7 ms) as its segments (written one by one here, with
// joining on write off, so that the writes show the split).
func TestVnetAutoBySize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var writes []int
		p := newPipe(64, func(b []byte) bool { mu.Lock(); writes = append(writes, len(b)); mu.Unlock(); return true })
		r, stop := startRouter(t, Config{AQM: "fq-codel", Rate: 50 * aqm.Mbit, VnetHdr: true, DisableCoalesce: true, Clock: clock.Since(time.Now())}, p)
		p.in <- superTCP4("10.201.1.2", "10.201.2.2", 0, 1448, 3, 1)
		time.Sleep(10 * time.Millisecond)
		p.in <- superTCP4("10.201.1.2", "10.201.2.2", 0, 1448, 20, 2)
		waitRead(r, 21)
		time.Sleep(50 * time.Millisecond)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		s := r.Stats()
		mu.Lock()
		defer mu.Unlock()
		if s.Split != 1 || len(writes) != 21 || writes[0] <= 10+1500 {
			t.Errorf("split %d, %d writes (first %d bytes); want 1 split, 21 writes, the first whole", s.Split, len(writes), writes[0])
		}
	})
}

// TestLoadConfigValidate protects LoadConfig's checks: a negative period
// and a cap without a rate are refused, each naming its field.
func TestLoadConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Load: LoadConfig{Period: -1}}, "Load.Period"},
		{Config{Load: LoadConfig{AutoCap: true}}, "Load.AutoCap"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.cfg.Load, err, c.field)
		}
	}
	if err := (Config{Rate: aqm.Mbit, Load: LoadConfig{AutoCap: true}}).Validate(); err != nil {
		t.Errorf("AutoCap with a rate: %v", err)
	}
}

// TestLoadWaitBeforeFullRead protects the busy share of a reader woken
// by a burst: the read that follows one that found the device empty began
// by waiting, so its time counts as idle even when it returns a full
// batch; only full reads after full reads count as busy.
func TestLoadWaitBeforeFullRead(t *testing.T) {
	g := newLoadRig(t, Config{AQM: "fifo"})
	m := g.r.load
	m.sample(g.clk.Now())
	t0 := m.readStart(0) // blocked for 150 ms, then a burst of 32
	g.clk.advance(150 * time.Millisecond)
	m.readEnd(0, t0, 32, 32)
	t0 = m.readStart(0) // the burst goes on for 50 ms
	g.clk.advance(50 * time.Millisecond)
	m.readEnd(0, t0, 32, 32)
	m.sample(g.clk.Now())
	if l := g.r.Load(); l.ReaderBusy < 0.24 || l.ReaderBusy > 0.26 {
		t.Errorf("reader busy %.3f, want 0.25", l.ReaderBusy)
	}
}

// TestAutoCapAfterStall protects the cap after a window in which the
// router was saturated but read nothing (it did not run: the kernel
// dropped meanwhile): the next window's reads set the cap.
func TestAutoCapAfterStall(t *testing.T) {
	g := newLoadRig(t, Config{AQM: "fq-codel", Rate: 100 * aqm.Mbit, Load: LoadConfig{AutoCap: true}})
	d := g.direction(t, "10.201.2.0/24")
	g.r.load.sample(g.clk.Now())
	g.drops.Add(100)
	if l := g.window(0); !l.Saturated || l.RateCap != 0 {
		t.Fatalf("stalled window: saturated %v, cap %v; want true, none yet", l.Saturated, l.RateCap)
	}
	d.c.readBytes.Add(1e6) // 40 Mb/s read in the next window
	if l := g.window(0.5); l.RateCap != 36*aqm.Mbit || d.Rate() != 36*aqm.Mbit {
		t.Errorf("after the stall: cap %v, rate %v; want 36Mbit", l.RateCap, d.Rate())
	}
}
