package router

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/front"
)

// This file is how the router tells that it is the bottleneck: its readers'
// busy time, the packets the kernel dropped in front of the TUN, what it can
// sustain, and what it does about it (keep super-packets whole, cap the
// rate). See LoadConfig.

// Defaults of LoadConfig's zero fields, and the thresholds of the load
// monitor.
const (
	// DefaultLoadPeriod is how often the monitor looks at the readers and
	// the kernel's counters: the length of one window.
	DefaultLoadPeriod = 200 * time.Millisecond
	// SaturatedBusy is the share of a window a reader must have spent
	// outside a read that found the device empty, two windows in a row,
	// for the router to call itself saturated.
	SaturatedBusy = 0.95
	// capHeadroom is the share of what the busiest direction read in a
	// saturated window that the auto cap sets as its rate.
	capHeadroom = 0.9
	// capRaiseBelow is the reader busy share under which the auto cap
	// rises, by capRaise per window, once capQuiet windows in a row were
	// not saturated, until it reaches the configured rate.
	capRaiseBelow = 0.8
	capRaise      = 1.05
	capQuiet      = 5
	// capFloorDiv bounds the cap below: never under the configured rate
	// over capFloorDiv.
	capFloorDiv = 10
	// keepHoldFirst and keepHoldMax bound how long the router keeps every
	// super-packet whole after it found itself saturated while splitting;
	// the hold doubles each time splitting saturates it again.
	keepHoldFirst = 10 * time.Second
	keepHoldMax   = 5 * time.Minute
)

// LoadConfig configures how the router watches its own load. The zero
// value watches the readers, warns once through Config.Logf when the
// router is saturated, and keeps super-packets whole while it is (with
// Config.GSO auto); it does not change the rate.
//
// The router is saturated when, two windows in a row, a reader spent at
// least SaturatedBusy of the window working rather than waiting (a read
// that returns a full batch never waited: the kernel held more), or when
// the kernel dropped packets in front of the device during the window
// (KernelDrops grew). Either way packets wait in the kernel's TUN queue
// (500 packets by default, tx_queue_len), where no AQM sees them, instead
// of in the router's queues.
type LoadConfig struct {
	// Period is the length of one window. Zero means DefaultLoadPeriod.
	Period time.Duration
	// KernelDrops, if set, returns a counter of the packets the kernel
	// dropped because the device's queue toward the router was full: the
	// TUN's tx_dropped (/sys/class/net/NAME/statistics/tx_dropped). The
	// router reports its growth since Run started.
	KernelDrops func() (uint64, error)
	// AutoCap holds each shaped direction's rate just below what the
	// router sustains: in a saturated window the rates are capped at 0.9
	// of what the busiest direction read, or cut to 0.9 of the cap in
	// effect if that is lower, and the cap rises by 5 % per
	// window once five windows in a row were not saturated, while the
	// readers are busy less than 80 % of the time, until it reaches
	// Config.Rate again. The cap never goes below a tenth of
	// Config.Rate. The queues then hold the standing queue, at a rate the
	// router can serve. It needs a rate; do not combine it with another
	// controller of the directions' rates (Queue.SetRate).
	AutoCap bool
	// DisableGSOKeep stops the router from keeping every super-packet
	// whole while it is saturated (with Config.GSO auto and VnetHdr).
	DisableGSOKeep bool
}

// Load is the router's view of its own load, over the last window.
type Load struct {
	// Saturated says the router was the bottleneck in the last window:
	// packets waited (or were dropped) in the kernel's queue in front of
	// the device rather than in the router's queues.
	Saturated bool `json:"saturated"`
	// SaturatedWindows counts the windows in which Saturated was true.
	SaturatedWindows uint64 `json:"saturated_windows"`
	// ReaderBusy is the largest share of the last window a reader spent
	// working rather than waiting for packets, in [0, 1].
	ReaderBusy float64 `json:"reader_busy"`
	// Sustainable estimates the IP bit rate, all directions together, the
	// router can forward: what it read per window while it was saturated,
	// smoothed (gain 1/4). Zero until it has been saturated. (The readers'
	// busy share does not give it: on a machine short of CPU the reader
	// waits to be scheduled, which counts as waiting.)
	Sustainable aqm.Rate `json:"sustainable_rate"`
	// TUNBacklog is the most packets a reader read in the last window
	// without finding the device empty: how many waited in the kernel's
	// queue, at least.
	TUNBacklog int64 `json:"tun_backlog_packets"`
	// KernelDropped counts the packets the kernel dropped in front of the
	// device since Run started (LoadConfig.KernelDrops; zero without it).
	KernelDropped uint64 `json:"kernel_dropped"`
	// RateCap is the rate LoadConfig.AutoCap holds the shaped directions
	// at; zero when no cap applies.
	RateCap aqm.Rate `json:"rate_cap"`
	// GSOKept says every super-packet is being kept whole because the
	// router found itself saturated while splitting.
	GSOKept bool `json:"gso_kept"`
}

// readerLoad is one reader's time, written by the reader around each read
// and read by the monitor.
type readerLoad struct {
	idle  atomic.Int64 // ns spent in reads that found the device empty
	since atomic.Int64 // start of the read in progress, 0 when none
	run   atomic.Int64 // packets read since the device was last found empty; 0: the next read waits first
	peak  atomic.Int64 // the largest run since the monitor last looked
}

// loadMonitor is the router's load watch; its fields below mu belong to
// the monitor (sample) and are read by snapshot.
type loadMonitor struct {
	r       *Router
	cfg     LoadConfig
	readers []readerLoad
	keepAll atomic.Bool // GSOAuto keeps every super-packet

	mu         sync.Mutex
	started    bool
	last       aqm.Time
	lastIdle   []int64
	lastBytes  uint64
	lastSplit  uint64
	lastRead   map[*Queue]uint64
	dropsBase  uint64
	dropsLast  uint64
	busyBefore bool // the previous window's busy share reached SaturatedBusy
	keepUntil  aqm.Time
	keepHold   time.Duration
	warned     bool
	load       Load
	capRate    aqm.Rate
	capDue     bool // saturated in a window in which nothing was read: cap from the next
	quiet      int  // windows in a row that were not saturated
}

func newLoadMonitor(r *Router, cfg LoadConfig, readers int) *loadMonitor {
	if cfg.Period <= 0 {
		cfg.Period = DefaultLoadPeriod
	}
	return &loadMonitor{r: r, cfg: cfg, readers: make([]readerLoad, readers), lastIdle: make([]int64, readers),
		lastRead: make(map[*Queue]uint64), keepHold: keepHoldFirst}
}

// readStart is called by reader i before a device read; it returns the
// instant to give readEnd.
func (m *loadMonitor) readStart(i int) aqm.Time {
	now := m.r.clk.Now()
	m.readers[i].since.Store(int64(now))
	return now
}

// readEnd is called by reader i after a device read that asked for k
// packets and got n. A short read found the device empty, so its time
// counts as idle; so does a read that followed one, since it began by
// waiting for the device, however many packets it then found. A full
// read after a full read never waited.
func (m *loadMonitor) readEnd(i int, start aqm.Time, n, k int) {
	rl := &m.readers[i]
	now := m.r.clk.Now()
	if n < k || rl.run.Load() == 0 {
		rl.idle.Add(int64(now.Sub(start)))
	}
	if n < k {
		rl.run.Store(0)
	} else {
		run := rl.run.Add(int64(n))
		for p := rl.peak.Load(); run > p && !rl.peak.CompareAndSwap(p, run); p = rl.peak.Load() {
		}
	}
	rl.since.Store(0)
}

// run samples every Period until ctx ends.
func (m *loadMonitor) run(ctx context.Context) {
	t := time.NewTicker(m.cfg.Period)
	defer t.Stop()
	m.sample(m.r.clk.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.sample(m.r.clk.Now())
		}
	}
}

// sample closes the window that ends at now: it measures the readers'
// busy share, the bytes read and the kernel's drops, decides whether the
// router is saturated, and applies the GSO hold and the rate cap.
func (m *loadMonitor) sample(now aqm.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	qs := m.r.table.all()
	bytes := m.r.unclassified.readBytes.Load()
	var split uint64
	for _, d := range qs {
		bytes += d.c.readBytes.Load()
		split += d.c.split.Load()
	}
	var drops uint64
	if m.cfg.KernelDrops != nil {
		if v, err := m.cfg.KernelDrops(); err == nil {
			drops = v
		}
	}
	idle := make([]int64, len(m.readers))
	var backlog int64
	for i := range m.readers {
		rl := &m.readers[i]
		idle[i] = rl.idle.Load()
		if s := rl.since.Load(); s != 0 && aqm.Time(s).Before(now) {
			idle[i] += int64(now.Sub(aqm.Time(s))) // a read in progress is waiting so far
		}
		backlog = max(backlog, rl.peak.Swap(0), rl.run.Load())
	}
	if !m.started {
		m.started, m.last, m.lastBytes, m.lastSplit, m.dropsBase, m.dropsLast = true, now, bytes, split, drops, drops
		copy(m.lastIdle, idle)
		for _, d := range qs {
			m.lastRead[d] = d.c.readBytes.Load()
		}
		return
	}
	wall := now.Sub(m.last)
	if wall <= 0 {
		return
	}
	busy := 0.0
	for i := range idle {
		b := 1 - float64(idle[i]-m.lastIdle[i])/float64(wall)
		busy = max(busy, min(max(b, 0), 1))
	}
	read := bytes - m.lastBytes
	kernelDrops := drops > m.dropsLast
	busyNow := busy >= SaturatedBusy
	saturated := kernelDrops || (busyNow && m.busyBefore)
	m.busyBefore = busyNow

	l := &m.load
	l.Saturated, l.ReaderBusy, l.TUNBacklog = saturated, busy, backlog
	if drops >= m.dropsBase {
		l.KernelDropped = drops - m.dropsBase
	}
	if saturated {
		l.SaturatedWindows++
	}
	if saturated && read > 0 {
		est := float64(read) * 8 / wall.Seconds()
		if l.Sustainable == 0 {
			l.Sustainable = aqm.Rate(est)
		} else {
			l.Sustainable = aqm.Rate((3*float64(l.Sustainable) + est) / 4)
		}
	}
	m.holdGSO(now, saturated, split > m.lastSplit)
	m.capRates(qs, wall, saturated, busy)
	l.GSOKept, l.RateCap = m.keepAll.Load(), m.capRate
	if saturated && !m.warned && m.r.cfg.Logf != nil {
		m.warned = true
		sustains := ""
		if l.Sustainable != 0 {
			sustains = fmt.Sprintf(", sustains about %v", l.Sustainable)
		}
		m.r.cfg.Logf("router: saturated: %s (reader busy %.0f%%, %d packets dropped in front of the device%s); "+
			"packets wait in the kernel's queue, where no AQM sees them%s (further saturation is counted, not logged)",
			m.why(kernelDrops), 100*busy, l.KernelDropped, sustains, m.advice())
	}
	m.last, m.lastBytes, m.lastSplit, m.dropsLast = now, bytes, split, drops
	copy(m.lastIdle, idle)
	for _, d := range qs {
		m.lastRead[d] = d.c.readBytes.Load()
	}
}

func (m *loadMonitor) why(kernelDrops bool) string {
	if kernelDrops {
		return "the kernel dropped packets the router did not read in time"
	}
	return "the readers found the device empty less than 5% of the time"
}

func (m *loadMonitor) advice() string {
	switch {
	case m.cfg.AutoCap && aqm.Rate(m.r.rate.Load()) > 0:
		return "; capping the rate below what the router sustains"
	case aqm.Rate(m.r.rate.Load()) > 0:
		return "; lower the rate, or let the router cap it (auto cap)"
	}
	return "; set a rate the router sustains"
}

// holdGSO keeps every super-packet whole (GSOAuto) once the router is
// saturated in a window in which it split some, while it stays saturated
// and for a hold time after, which doubles each time it saturates again
// while splitting.
func (m *loadMonitor) holdGSO(now aqm.Time, saturated, splitting bool) {
	if m.cfg.DisableGSOKeep || !m.r.cfg.VnetHdr || m.r.cfg.GSO != front.GSOAuto {
		return
	}
	switch {
	case saturated && splitting && !m.keepAll.Load():
		m.keepAll.Store(true)
		m.keepUntil = now.Add(m.keepHold)
		m.keepHold = min(2*m.keepHold, keepHoldMax)
		if m.r.cfg.Logf != nil {
			m.r.cfg.Logf("router: saturated while splitting super-packets: keeping them whole for at least %v", m.keepUntil.Sub(now))
		}
	case saturated && m.keepAll.Load():
		m.keepUntil = max(m.keepUntil, now.Add(m.cfg.Period))
	case m.keepAll.Load() && !now.Before(m.keepUntil):
		m.keepAll.Store(false)
	}
}

// capRates moves the auto cap (LoadConfig.AutoCap) and applies it to every
// shaped direction. A saturated window in which nothing was read (the
// router did not run) caps from the next window's reads.
func (m *loadMonitor) capRates(qs []*Queue, wall time.Duration, saturated bool, busy float64) {
	rate := aqm.Rate(m.r.rate.Load())
	if !m.cfg.AutoCap || rate == 0 {
		return
	}
	floor := max(rate/capFloorDiv, 1)
	if saturated {
		m.quiet = 0
	} else {
		m.quiet++
	}
	switch {
	case saturated || m.capDue:
		var most uint64
		for _, d := range qs {
			most = max(most, d.c.readBytes.Load()-m.lastRead[d])
		}
		target := aqm.Rate(capHeadroom * float64(most) * 8 / wall.Seconds())
		if target > 0 {
			cur := rate
			if m.capRate != 0 {
				cur = m.capRate
			}
			// At least a tenth off each time: a burst of drops in a
			// window that also read fast still brings the cap down.
			cut := aqm.Rate(capHeadroom * float64(cur))
			m.capRate = max(min(target, cut), floor)
		}
		// A router stalled for the whole window read nothing in it: what it
		// reads in the next window, its backlog, sets the cap.
		m.capDue = saturated && target == 0
	case m.capRate != 0 && busy < capRaiseBelow && m.quiet >= capQuiet:
		m.capRate = aqm.Rate(float64(m.capRate) * capRaise)
		if m.capRate >= rate {
			m.capRate = 0
		}
	}
	want := rate
	if m.capRate != 0 {
		want = m.capRate
	}
	for _, d := range qs {
		if aqm.Rate(d.rate.Load()) != want {
			d.setLinkRate(want)
		}
	}
}

// snapshot returns the last window's load.
func (m *loadMonitor) snapshot() Load {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.load
}

// Load returns the router's view of its own load over the last window
// (LoadConfig). It is safe to call from any goroutine.
func (r *Router) Load() Load { return r.load.snapshot() }

// Metrics lists the router's load: router_saturated (gauge, 0 or 1),
// router_saturated_windows (counter), router_reader_busy_ratio,
// router_sustainable_bits_per_second, router_tun_backlog_packets and
// router_rate_cap_bits_per_second (gauges; zero when unknown or none),
// router_kernel_dropped_packets (counter) and router_gso_kept (gauge, 0
// or 1). It is safe to call from any goroutine.
func (r *Router) Metrics() iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		l := r.Load()
		b := func(v bool) float64 {
			if v {
				return 1
			}
			return 0
		}
		for _, m := range []aqm.Metric{
			{Name: "router_saturated", Kind: aqm.Gauge, Value: b(l.Saturated)},
			{Name: "router_saturated_windows", Kind: aqm.Counter, Value: float64(l.SaturatedWindows)},
			{Name: "router_reader_busy_ratio", Kind: aqm.Gauge, Value: l.ReaderBusy},
			{Name: "router_sustainable_bits_per_second", Kind: aqm.Gauge, Value: float64(l.Sustainable)},
			{Name: "router_tun_backlog_packets", Kind: aqm.Gauge, Value: float64(l.TUNBacklog)},
			{Name: "router_kernel_dropped_packets", Kind: aqm.Counter, Value: float64(l.KernelDropped)},
			{Name: "router_rate_cap_bits_per_second", Kind: aqm.Gauge, Value: float64(l.RateCap)},
			{Name: "router_gso_kept", Kind: aqm.Gauge, Value: b(l.GSOKept)},
		} {
			if !yield(m) {
				return
			}
		}
	}
}

// splits reports whether the direction cuts a super-packet that puts wire
// bytes on the wire into its segments: by Config.GSO at the direction's
// rate (front.GSOPolicy.Split), except that GSOAuto keeps every
// super-packet while the router is saturated.
func (d *Queue) splits(wire int) bool {
	if !d.split || (d.r.cfg.GSO == front.GSOAuto && d.r.load.keepAll.Load()) {
		return false
	}
	return d.r.cfg.GSO.Split(d.linkRate(), wire)
}

// linkRate returns the direction's rate as the GSO rule sees it: its
// front's, or the queue's own when the queue shapes itself (CAKE).
func (d *Queue) linkRate() aqm.Rate { return aqm.Rate(d.rate.Load()) }

// setLinkRate changes the direction's rate to r (SetRate), logging a
// refusal.
func (d *Queue) setLinkRate(r aqm.Rate) {
	if err := d.SetRate(r); err != nil && d.r.cfg.Logf != nil {
		d.r.cfg.Logf("router: %v: rate cap %v: %v", d.prefix, r, err)
	}
}

// setQueueRate gives a queue that shapes by itself (CAKE) the rate r.
func (d *Queue) setQueueRate(r aqm.Rate) {
	d.front.WithQueue(func(q aqm.Queue[[]byte]) {
		if c, ok := unwrap(q).(*cakeIP); ok {
			c.q.SetRate(r)
		}
	})
}

// String describes the load in one line.
func (l Load) String() string {
	s := fmt.Sprintf("reader busy %.0f%%", 100*l.ReaderBusy)
	if l.Saturated {
		s = "SATURATED, " + s
	}
	if l.Sustainable != 0 {
		s += fmt.Sprintf(", sustains about %v", l.Sustainable)
	}
	if l.KernelDropped != 0 {
		s += fmt.Sprintf(", kernel dropped %d", l.KernelDropped)
	}
	if l.RateCap != 0 {
		s += fmt.Sprintf(", rate capped at %v", l.RateCap)
	}
	if l.GSOKept {
		s += ", super-packets kept"
	}
	return s
}

// start runs the monitor until the returned function is called, which
// waits for it to stop.
func (m *loadMonitor) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// validate reports LoadConfig's bad fields through bad.
func (c LoadConfig) validate(rate aqm.Rate, bad func(field string, v any, rule string)) {
	if c.Period < 0 {
		bad("Load.Period", c.Period, "must not be negative")
	}
	if c.AutoCap && rate == 0 {
		bad("Load.AutoCap", c.AutoCap, "needs a Rate")
	}
}
