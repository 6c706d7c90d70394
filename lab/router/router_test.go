package router

import (
	"context"
	"errors"
	"runtime"
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

// startRouter runs a router over p until the returned stop is called; stop
// returns Run's error.
func startRouter(t *testing.T, cfg Config, p *pipe) (*Router, func() error) {
	t.Helper()
	r, err := New(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return r, func() error { cancel(); return <-done }
}

// waitRead sleeps (in the bubble's time) until the router has read n packets.
func waitRead(r *Router, n uint64) {
	for r.Stats().Read.Packets < n {
		time.Sleep(100 * time.Microsecond)
	}
}

// TestConservation protects the stats: after shutdown every packet read is
// written, dropped for a named reason or still queued, in total and per
// queue, with each reason counted where it happened, the router's queue
// drops equal to the queue's own counters, and every buffer back in the
// pool.
func TestConservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[byte]uint64{} // written packets by the third byte of the destination
		p := newPipe(4096, func(b []byte) bool {
			if b[9] == 253 { // the device refuses these
				return false
			}
			mu.Lock()
			seen[b[18]]++
			mu.Unlock()
			return true
		})
		r, stop := startRouter(t, Config{
			AQM: "fifo", Rate: 10 * aqm.Mbit, Delay: 5 * time.Millisecond,
			MaxQueues: 2, BufferSize: 256, Drain: 50 * time.Millisecond,
			Clock: clock.Since(time.Now()),
		}, p)
		total := 0
		send := func(b []byte) { p.in <- b; total++ }
		for i := range 600 { // a burst the 10 Mb/s FIFO (331 packets) cannot hold
			send(ipv4("10.201.2.2", "10.201.1.2", 0, 200, uint32(i)))
		}
		for i := range 50 {
			send(ipv4("10.201.1.2", "10.201.2.2", 0, 200, uint32(i)))
		}
		for range 4 {
			b := ipv4("10.201.1.2", "10.201.2.2", 0, 200, 0)
			b[9] = 253
			b[10], b[11] = 0, 0
			b[10], b[11] = byte(^fold(sum(b[:20]))>>8), byte(^fold(sum(b[:20])))
			send(b)
		}
		for range 10 { // a third prefix: the table holds two
			send(ipv4("10.201.1.2", "10.201.3.2", 0, 200, 0))
		}
		for range 5 {
			send(make([]byte, 30)) // version 0
		}
		for range 3 {
			send(ipv4("10.201.1.2", "10.201.2.2", 0, 300, 0)) // longer than a buffer
		}
		waitRead(r, uint64(total))
		if err := stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		s := r.Stats()
		if !s.Conserved() {
			t.Fatalf("not conserved: %+v", s)
		}
		if s.Read.Packets != uint64(total) || s.Queued != 0 {
			t.Errorf("read %d queued %d; want %d and 0", s.Read.Packets, s.Queued, total)
		}
		d := s.Dropped
		if d.NotIP != 5 || s.NotIP != 5 || d.Truncated != 3 || d.NoQueue != 10 || d.WriteError != 4 || s.Unclassified.Packets != 18 {
			t.Errorf("drops %+v, unclassified %d; want not_ip 5, truncated 3, no_queue 10, write_error 4, unclassified 18", d, s.Unclassified.Packets)
		}
		if len(s.Queues) != 2 || s.Queues[0].Prefix != "10.201.1.0/24" || s.Queues[1].Prefix != "10.201.2.0/24" {
			t.Fatalf("queues %+v", s.Queues)
		}
		a, b := s.Queues[0], s.Queues[1]
		if a.Read.Packets != 600 || b.Read.Packets != 54 {
			t.Errorf("read per queue %d, %d; want 600, 54", a.Read.Packets, b.Read.Packets)
		}
		if a.Dropped.Overlimit == 0 || a.Dropped.Flushed == 0 || a.Written.Packets == 0 {
			t.Errorf("queue A: %+v; want overlimit drops, flushed packets and written ones", a)
		}
		if b.Written.Packets != 50 || b.Dropped.Total != 4 {
			t.Errorf("queue B: written %d, dropped %+v; want 50 and the 4 write errors", b.Written.Packets, b.Dropped)
		}
		mu.Lock()
		if seen[1] != a.Written.Packets || seen[2] != b.Written.Packets {
			t.Errorf("the device saw %d and %d, the stats say %d and %d", seen[1], seen[2], a.Written.Packets, b.Written.Packets)
		}
		mu.Unlock()
		for _, q := range s.Queues {
			if got, want := q.Dropped.Overlimit+q.Dropped.Early+q.Dropped.Overload, q.Queue.Dropped().Packets; got != want {
				t.Errorf("%s: router counts %d queue drops, the queue %d", q.Prefix, got, want)
			}
		}
		if n := r.pool.inUse(); n != 0 {
			t.Errorf("%d buffers still out of the pool after shutdown", n)
		}
	})
}

// TestCEWritten protects marking: packets CoDel marks leave with CE in their
// header and a valid IPv4 checksum, and the counters agree with the bytes.
func TestCEWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ce, bad, all atomic.Uint64
		p := newPipe(4096, func(b []byte) bool {
			all.Add(1)
			if b[1]&3 == 3 {
				ce.Add(1)
			}
			if !headerOK(b) {
				bad.Add(1)
			}
			return true
		})
		r, stop := startRouter(t, Config{AQM: "codel", Rate: aqm.Mbit, Clock: clock.Since(time.Now())}, p)
		for i := range 500 { // 2 Mb/s of ECT(0) into 1 Mb/s for 2 s
			p.in <- ipv4("10.201.2.2", "10.201.1.2", 2, 1000, uint32(i))
			time.Sleep(4 * time.Millisecond)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		s := r.Stats()
		if s.Marked == 0 || s.CEWritten != s.Marked || ce.Load() != s.CEWritten {
			t.Errorf("marked %d, ce_written %d, CE seen on the device %d; want equal and positive", s.Marked, s.CEWritten, ce.Load())
		}
		if bad.Load() != 0 || all.Load() != s.Written.Packets || !s.Conserved() {
			t.Errorf("%d bad checksums in %d written (stats %d); conserved %v", bad.Load(), all.Load(), s.Written.Packets, s.Conserved())
		}
	})
}

// TestRateShapes protects the rate: over one second a backlogged direction
// sends what the rate allows (the front's token bucket, or CAKE's own
// shaper behind the same bucket), IPv6 directions included, and rate 0
// forwards everything at once.
func TestRateShapes(t *testing.T) {
	for _, name := range []string{"fifo", "fq-codel", "cake", "pie", "sfq", "codel"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var bytes4, bytes6 atomic.Uint64
				p := newPipe(4096, func(b []byte) bool {
					if b[0]>>4 == 6 {
						bytes6.Add(uint64(len(b)))
					} else {
						bytes4.Add(uint64(len(b)))
					}
					return true
				})
				r, stop := startRouter(t, Config{AQM: name, Rate: 2 * aqm.Mbit, Clock: clock.Since(time.Now())}, p)
				// 4 Mb/s each way into 2 Mb/s for 1.5 s; count what leaves
				// in the last second, when the queues are backlogged.
				var base4, base6 uint64
				for i := range 1500 {
					if i == 500 {
						base4, base6 = bytes4.Load(), bytes6.Load()
					}
					p.in <- ipv4("10.201.2.2", "10.201.1.2", 0, 500, uint32(i))
					p.in <- ipv6("fd00::2", "2001:db8:0:1::2", 500)
					time.Sleep(time.Millisecond)
				}
				got4, got6 := bytes4.Load()-base4, bytes6.Load()-base6
				stop()
				const want = 250_000 // 2 Mb/s for 1 s
				for _, got := range []uint64{got4, got6} {
					if got < want*9/10 || got > want*11/10 {
						t.Errorf("sent %d bytes in 1 s at 2 Mb/s, want %d ± 10%%", got, want)
					}
				}
				for _, q := range r.table.all() {
					if got := q.front.Config().Rate; got != 2*aqm.Mbit {
						t.Errorf("%v: front rate %v, want 2mbit", q.prefix, got)
					}
					if name == "cake" { // CAKE shapes by itself, behind the front's bucket
						var cr aqm.Rate
						q.front.WithQueue(func(cq aqm.Queue[[]byte]) { cr = unwrap(cq).(*cakeIP).q.Config().Rate })
						if cr != 2*aqm.Mbit {
							t.Errorf("%v: CAKE's rate %v, want 2mbit", q.prefix, cr)
						}
					}
					if w := q.front.Detail().Wakeups; w > 2*q.c.writtenPackets.Load()+20 {
						t.Errorf("%v: %d consumer wake-ups for %d packets: the consumer spins", q.prefix, w, q.c.writtenPackets.Load())
					}
				}
			})
		})
	}
	t.Run("unshaped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Uint64
			p := newPipe(4096, func([]byte) bool { n.Add(1); return true })
			_, stop := startRouter(t, Config{AQM: "fifo", Clock: clock.Since(time.Now())}, p)
			for range 800 {
				p.in <- ipv4("10.201.2.2", "10.201.1.2", 0, 1500, 0)
			}
			time.Sleep(time.Microsecond) // everything runnable runs before time moves
			if got := n.Load(); got != 800 {
				t.Errorf("rate 0 wrote %d of 800 packets at once", got)
			}
			stop()
		})
	})
}

// TestDelayApplied protects the delay: with no queue to wait in, every packet
// reaches the device exactly the delay after it was read.
func TestDelayApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.Since(time.Now())
		var mu sync.Mutex
		var at []aqm.Time
		p := newPipe(64, func([]byte) bool { mu.Lock(); at = append(at, clk.Now()); mu.Unlock(); return true })
		_, stop := startRouter(t, Config{AQM: "fifo", Delay: 7 * time.Millisecond, Clock: clk}, p)
		var sent []aqm.Time
		for i := range 5 {
			sent = append(sent, clk.Now())
			p.in <- ipv4("10.201.2.2", "10.201.1.2", 0, 100, uint32(i))
			time.Sleep(3 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		stop()
		mu.Lock()
		defer mu.Unlock()
		if len(at) != len(sent) {
			t.Fatalf("wrote %d of %d", len(at), len(sent))
		}
		for i := range at {
			if d := at[i].Sub(sent[i]); d != 7*time.Millisecond {
				t.Errorf("packet %d took %v, want 7ms", i, d)
			}
		}
	})
}

// TestConfigValidate protects the configuration's errors: each bad field is
// named, an unknown queue lists the known ones, and a good one passes.
func TestConfigValidate(t *testing.T) {
	err := Config{AQM: "nope", Delay: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "Delay") {
		t.Errorf("Validate = %v, want Delay named", err)
	}
	err = Config{AQM: "nope"}.Validate()
	var ce *aqm.ConfigError
	if !errors.As(err, &ce) || ce.Field != "AQM" || !strings.Contains(err.Error(), "fq-codel") {
		t.Errorf("unknown AQM: %v", err)
	}
	err = Config{Prefix4: 33, Prefix6: 129, BufferSize: 10, ReadBatch: 5000, MaxQueues: -1}.Validate()
	for _, f := range []string{"Prefix4", "Prefix6", "BufferSize", "ReadBatch", "MaxQueues"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate = %v, want %s named", err, f)
		}
	}
	if err := (Config{AQM: "fq-codel", Params: "disable-flood-guard=true,target=2ms"}).Validate(); err != nil {
		t.Errorf("good Params: %v", err)
	}
	err = Config{AQM: "fq-codel", Params: "targte=2ms"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "Params") || !strings.Contains(err.Error(), "Target") {
		t.Errorf("misspelt Params: %v, want Params named with the fields there are", err)
	}
	for _, name := range queueNames {
		if err := (Config{AQM: name, Rate: 50 * aqm.Mbit}).Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without a device succeeded")
	}
}

// TestZeroAllocs protects the hot path: in steady state the router makes no
// allocation per packet, unshaped, shaped and with a delay line.
func TestZeroAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 60 000 packets")
	}
	for _, c := range []struct {
		name string
		cfg  Config
		segs int // packets written per packet offered
	}{
		{"fifo", Config{AQM: "fifo"}, 1},
		{"fq-codel", Config{AQM: "fq-codel", Rate: 10 * aqm.Gbit, Delay: 50 * time.Microsecond}, 1},
		{"cake", Config{AQM: "cake", Rate: 10 * aqm.Gbit}, 1},
		{"fq-codel-vnet-split", Config{AQM: "fq-codel", Rate: 10 * aqm.Gbit, VnetHdr: true, GSO: front.GSOSplit}, 4},
		{"fq-codel-vnet-keep", Config{AQM: "fq-codel", VnetHdr: true}, 1},
	} {
		cfg := c.cfg
		t.Run(c.name, func(t *testing.T) {
			var written atomic.Uint64
			p := newPipe(256, func([]byte) bool { written.Add(1); return true })
			r, stop := startRouter(t, cfg, p)
			defer stop()
			pkt := ipv4("10.201.2.2", "10.201.1.2", 2, 1000, 0)
			if cfg.VnetHdr {
				pkt = superTCP4("10.201.1.2", "10.201.2.2", 2, 1000, 4, 0)
			}
			p.in <- pkt
			waitRead(r, 1)
			q := r.table.all()[0]
			accounted := func() uint64 {
				n := q.c.writtenPackets.Load()
				for i := range q.c.drops {
					n += q.c.drops[i].Load()
				}
				return n
			}
			// pump offers n packets in chunks of 64, each chunk once the
			// last has left, so that the queue stays short and the pool
			// has no reason to grow: the steady state.
			pump := func(n int) {
				deadline := time.Now().Add(30 * time.Second)
				for sent := 0; sent < n; {
					target := accounted() + 64*uint64(c.segs)
					for range 64 {
						p.in <- pkt
					}
					sent += 64
					for accounted() < target {
						if time.Now().After(deadline) {
							t.Fatalf("only %d packets accounted for", accounted())
						}
						time.Sleep(50 * time.Microsecond)
					}
				}
			}
			pump(10_000) // warm up: buffers, rings, timers
			var before, after runtime.MemStats
			made := r.pool.made.Load()
			runtime.ReadMemStats(&before)
			const n = 50_000
			pump(n)
			runtime.ReadMemStats(&after)
			t.Logf("%d allocations in %d packets, %d new buffers", after.Mallocs-before.Mallocs, n, r.pool.made.Load()-made)
			// A per-packet allocation would show as 1 or more per packet.
			// What remains is the runtime's: a blocking select takes sudogs
			// from a per-P cache, and a timer that moves between Ps grows
			// that P's timer heap, both refilled now and then (a few dozen
			// times in 50 000 packets here, in the front's consumer wait).
			if per := float64(after.Mallocs-before.Mallocs) / n; per > 0.01 {
				t.Errorf("%.3f allocations per packet (%d in %d packets), want 0", per, after.Mallocs-before.Mallocs, n)
			}
		})
	}
}

// BenchmarkForward measures the router's cost per packet over the in-memory
// pipe, reader to writer, unshaped (the reader forwards) and shaped far above
// the offered load (a consumer goroutine per direction), in chunks of 64 so
// that queues stay short.
func BenchmarkForward(b *testing.B) {
	for _, cfg := range []Config{{AQM: "fifo"}, {AQM: "fq-codel"}, {AQM: "fq-codel", Rate: 100 * aqm.Gbit}} {
		name := cfg.AQM
		if cfg.Rate > 0 {
			name += "-shaped"
		}
		b.Run(name, func(b *testing.B) {
			var written atomic.Uint64
			p := newPipe(256, func([]byte) bool { written.Add(1); return true })
			r, err := New(cfg, p)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			defer func() { cancel(); <-done }()
			pkt := ipv4("10.201.2.2", "10.201.1.2", 0, 1000, 0)
			b.SetBytes(int64(len(pkt)))
			b.ResetTimer()
			sent := uint64(0)
			for i := 0; i < b.N; i++ {
				p.in <- pkt
				if sent++; sent%64 == 0 {
					for written.Load() < sent-32 {
						runtime.Gosched()
					}
				}
			}
			for written.Load() < sent {
				runtime.Gosched()
			}
		})
	}
}
