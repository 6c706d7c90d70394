package router

import (
	"encoding/binary"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// TestReconfigureRefuses protects the control surface's errors: a change
// the running router cannot make, or a bad value, is refused with the field
// named, and the configuration in effect does not change.
func TestReconfigureRefuses(t *testing.T) {
	p := newPipe(16, nil)
	r, stop := startRouter(t, Config{AQM: "fifo", Rate: 10 * aqm.Mbit, Delay: time.Millisecond}, p)
	defer stop()
	p.in <- ipv4("10.201.1.2", "10.201.2.2", 0, 100, 1)
	waitReadReal(r, 1)
	before := r.Config()
	for _, c := range []struct {
		change func(*Config)
		field  string
	}{
		{func(c *Config) { c.Delay = 2 * time.Millisecond }, "Delay"},
		{func(c *Config) { c.Rate = 0 }, "Rate"},
		{func(c *Config) { c.AQM = "nonesuch" }, "AQM"},
		{func(c *Config) { c.AQM, c.Params = "codel", "target=-1ms" }, "AQM"},
		{func(c *Config) { c.AQM, c.Params = "codel", "nosuchfield=1" }, "AQM"},
		{func(c *Config) { c.LimitPackets = -1 }, "LimitPackets"},
		{func(c *Config) { c.MaxQueues = 3 }, "MaxQueues"},
	} {
		cfg := r.Config()
		c.change(&cfg)
		err := r.Reconfigure(cfg)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("Reconfigure changing %s = %v; want an error naming it", c.field, err)
		}
		if after := r.Config(); after.AQM != before.AQM || after.Rate != before.Rate || after.Params != before.Params || after.LimitPackets != before.LimitPackets {
			t.Fatalf("a refused change changed the configuration: %+v", after)
		}
		if rep, in := r.table.all()[0].Reconfigured(); rep != 0 || in != 0 {
			t.Fatalf("a refused change touched the queue: %d replaced, %d in place", rep, in)
		}
	}
}

func waitReadReal(r *Router, n uint64) {
	for r.Stats().Read.Packets < n {
		time.Sleep(time.Millisecond)
	}
}

// TestReconfigureKeepsPackets protects the end-to-end promise of a change
// under load: with packets queued, the queue is swapped between algorithms,
// reconfigured in place and its rate changed, and every packet is written
// exactly once, in order (one flow), with no drop and the counters
// conserved; the queue's own counters run on across replacements.
func TestReconfigureKeepsPackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []uint32
		p := newPipe(4096, func(b []byte) bool {
			mu.Lock()
			got = append(got, binary.BigEndian.Uint32(b[28:]))
			mu.Unlock()
			return true
		})
		r, stop := startRouter(t, Config{AQM: "fifo", Rate: 2 * aqm.Mbit, LimitPackets: 1000, Drain: 10 * time.Second, Clock: clock.Since(time.Now())}, p)
		const n = 120
		seq := uint32(0)
		send := func(k int) {
			for range k {
				p.in <- ipv4("10.201.1.2", "10.201.2.2", 2, 200, seq) // ECT(0): marked, not dropped
				seq++
			}
		}
		steps := []Config{
			{AQM: "fq-codel", Rate: 2 * aqm.Mbit, LimitPackets: 1000},
			{AQM: "fq-codel", Rate: 3 * aqm.Mbit, LimitPackets: 1000, Params: "target=10ms"},
			{AQM: "cake", Rate: 3 * aqm.Mbit, LimitPackets: 1000},
			{AQM: "cake", Rate: 4 * aqm.Mbit, LimitPackets: 1000},
			{AQM: "codel", Rate: 2 * aqm.Mbit, LimitPackets: 1000},
			{AQM: "fifo", Rate: 5 * aqm.Mbit, LimitPackets: 1000},
		}
		send(100)
		for _, c := range steps {
			waitRead(r, uint64(seq))
			cfg := r.Config()
			cfg.AQM, cfg.Rate, cfg.LimitPackets, cfg.Params = c.AQM, c.Rate, c.LimitPackets, c.Params
			if err := r.Reconfigure(cfg); err != nil {
				t.Fatalf("Reconfigure(%s at %v): %v", c.AQM, c.Rate, err)
			}
			if s := r.Stats(); !s.Conserved() || s.Queued == 0 {
				t.Fatalf("after the change to %s: conserved %v, queued %d (want packets queued at the change)", c.AQM, s.Conserved(), s.Queued)
			}
			send(n / len(steps))
			time.Sleep(20 * time.Millisecond)
		}
		waitRead(r, uint64(seq))
		time.Sleep(5 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		s := r.Stats()
		if !s.Conserved() || s.Dropped.Total != 0 || s.Written.Packets != uint64(seq) {
			t.Fatalf("conserved %v, dropped %+v, written %d of %d", s.Conserved(), s.Dropped, s.Written.Packets, seq)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, v := range got {
			if v != uint32(i) {
				t.Fatalf("packet %d written as the %dth: lost, duplicated or reordered", v, i)
			}
		}
		d := r.table.all()[0]
		rep, in := d.Reconfigured()
		if rep != 4 || in != 2 {
			t.Errorf("%d replacements, %d in place; want 4 and 2", rep, in)
		}
		if q := s.Queues[0].Queue; q.Enqueued.Packets != uint64(seq) || q.Dequeued.Packets != uint64(seq) {
			t.Errorf("queue counters enqueued %d dequeued %d; want %d each across replacements", q.Enqueued.Packets, q.Dequeued.Packets, seq)
		}
		if c := r.Config(); c.AQM != "fifo" || c.Rate != 5*aqm.Mbit || d.Rate() != 5*aqm.Mbit {
			t.Errorf("config in effect %s at %v, front at %v; want fifo at 5Mbit", c.AQM, c.Rate, d.Rate())
		}
	})
}
