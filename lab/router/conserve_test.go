package router

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// badPackets are malformed inputs with the reason the router must count
// each under.
var badPackets = []struct {
	name string
	p    func() []byte
	why  reason
}{
	{"empty", func() []byte { return []byte{} }, dropTruncated},
	{"version 5", func() []byte { b := ipv4("10.1.1.2", "10.1.2.2", 0, 60, 0); b[0] = 0x55; return b }, dropNotIP},
	{"version 0", func() []byte { return make([]byte, 40) }, dropNotIP},
	{"IHL 3", func() []byte { b := ipv4("10.1.1.2", "10.1.2.2", 0, 60, 0); b[0] = 0x43; return b }, dropBadHeader},
	{"total below header", func() []byte { b := ipv4("10.1.1.2", "10.1.2.2", 0, 60, 0); b[2], b[3] = 0, 12; return b }, dropBadHeader},
	{"total past the end", func() []byte { b := ipv4("10.1.1.2", "10.1.2.2", 0, 60, 0); b[2], b[3] = 0x05, 0xdc; return b }, dropTruncated},
	{"IHL past the end", func() []byte { b := ipv4("10.1.1.2", "10.1.2.2", 0, 80, 0); b[0] = 0x4f; return b[:24] }, dropTruncated},
	{"short IPv4", func() []byte { return ipv4("10.1.1.2", "10.1.2.2", 0, 60, 0)[:19] }, dropTruncated},
	{"short IPv6", func() []byte { return ipv6("fd00::1", "fd00:1::1", 80)[:39] }, dropTruncated},
	{"IPv6 payload past the end", func() []byte { return ipv6("fd00::1", "fd00:1::1", 80)[:60] }, dropTruncated},
}

// TestMalformedReasons protects the counting of bad input: each kind of
// malformed packet is dropped before it has a queue, under its own reason.
func TestMalformedReasons(t *testing.T) {
	for _, c := range badPackets {
		if why, ok := validate(c.p()); ok || why != c.why {
			t.Errorf("%s: validate = %v, %v; want %v, false", c.name, why, ok, c.why)
		}
	}
	if why, ok := validate(ipv4("10.1.1.2", "10.1.2.2", 0, 60, 0)); !ok {
		t.Errorf("a good packet refused: %v", why)
	}
}

// TestConservedWhileRunning protects the accounting under concurrent load:
// while packets flow through shaped queues with a delay line, write errors
// and malformed input, every Stats snapshot conserves (read = written +
// dropped by reason + queued), in total and per queue, while the queue and
// rate are changed again and again; after shutdown the
// malformed packets are counted by reason and every buffer is back.
func TestConservedWhileRunning(t *testing.T) {
	for _, name := range []string{"fifo", "fq-codel", "cake"} {
		t.Run(name, func(t *testing.T) {
			var writes atomic.Uint64
			p := newPipe(256, func(b []byte) bool {
				return writes.Add(1)%97 != 0 // every 97th write fails
			})
			r, stop := startRouter(t, Config{
				AQM: name, Rate: 20 * aqm.Mbit, Delay: 2 * time.Millisecond,
				LimitPackets: 200, Drain: 20 * time.Millisecond,
			}, p)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var samples, bad atomic.Int64
			var failed atomic.Pointer[string]
			wg.Add(1)
			go func() { // the sampler
				defer wg.Done()
				for ctx.Err() == nil {
					s := r.Stats()
					samples.Add(1)
					if !s.Conserved() {
						msg := fmt.Sprintf("read %d written %d dropped %d queued %d", s.Read.Packets, s.Written.Packets, s.Dropped.Total, s.Queued)
						failed.CompareAndSwap(nil, &msg)
					}
				}
			}()
			var reconfigs atomic.Int64
			wg.Add(1)
			go func() { // the operator: queue and rate changes while packets flow
				defer wg.Done()
				names := []string{name, "fq-codel", "cake", "fifo", "codel"}
				for i := 0; ctx.Err() == nil; i++ {
					cfg := r.Config()
					cfg.AQM, cfg.Rate = names[i%len(names)], aqm.Rate(10+i%20)*aqm.Mbit
					if err := r.Reconfigure(cfg); err != nil {
						msg := err.Error()
						failed.CompareAndSwap(nil, &msg)
						return
					}
					reconfigs.Add(1)
					time.Sleep(200 * time.Microsecond)
				}
			}()
			want := map[reason]uint64{}
			total := 0
			for i := range 20000 {
				switch {
				case i%50 == 7:
					c := badPackets[(i/50)%len(badPackets)]
					want[c.why]++
					bad.Add(1)
					p.in <- c.p()
				case i%3 == 0:
					p.in <- ipv6("fd00::1", fmt.Sprintf("fd00:%x::1", i%4), 400)
				default:
					p.in <- ipv4("10.1.1.2", fmt.Sprintf("10.1.%d.2", 2+i%3), uint8(i%2), 200+i%1200, uint32(i))
				}
				total++
			}
			for r.Stats().Read.Packets < uint64(total) {
				time.Sleep(time.Millisecond)
			}
			cancel()
			wg.Wait()
			if err := stop(); err != nil {
				t.Fatalf("Run = %v", err)
			}
			if m := failed.Load(); m != nil {
				t.Fatalf("a snapshot taken while running did not conserve: %s", *m)
			}
			if samples.Load() < 2 {
				t.Fatalf("only %d snapshots taken", samples.Load())
			}
			s := r.Stats()
			if !s.Conserved() || s.Read.Packets != uint64(total) || s.Queued != 0 {
				t.Fatalf("after shutdown: conserved %v read %d of %d, queued %d", s.Conserved(), s.Read.Packets, total, s.Queued)
			}
			d := s.Dropped
			if d.NotIP != want[dropNotIP] || d.Truncated != want[dropTruncated] || d.BadHeader != want[dropBadHeader] || d.Malformed() != uint64(bad.Load()) {
				t.Errorf("malformed drops not_ip %d truncated %d bad_header %d; want %d %d %d", d.NotIP, d.Truncated, d.BadHeader, want[dropNotIP], want[dropTruncated], want[dropBadHeader])
			}
			if d.WriteError == 0 || s.Written.Packets == 0 {
				t.Errorf("written %d, write errors %d; want both", s.Written.Packets, d.WriteError)
			}
			if s.BuffersInUse != 0 {
				t.Errorf("%d buffers out of the pools after shutdown", s.BuffersInUse)
			}
			// The pools keep what they made: at least the reader's batch.
			if s.BufferBytes < int64(r.cfg.ReadBatch*r.cfg.BufferSize) || s.BufferBytes%int64(r.cfg.BufferSize) != 0 && r.seg == nil {
				t.Errorf("buffer bytes %d; want whole buffers of %d, at least %d of them", s.BufferBytes, r.cfg.BufferSize, r.cfg.ReadBatch)
			}
			if reconfigs.Load() == 0 {
				t.Error("no reconfiguration ran while packets flowed")
			}
			t.Logf("%d snapshots, %d paused the router, %d reconfigurations; %+v", samples.Load(), s.SamplesPaused, reconfigs.Load(), d)
		})
	}
}
