package router

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// TestSetRate protects the rate a controller sets on a running direction:
// a backlogged direction at 2 Mb/s sends at 1 Mb/s after SetRate(1mbit),
// Rate reports it, and a zero rate and an unshaped router are refused.
func TestSetRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Uint64
		p := newPipe(4096, func(b []byte) bool { n.Add(uint64(len(b))); return true })
		r, stop := startRouter(t, Config{AQM: "fq-codel", Rate: 2 * aqm.Mbit, Clock: clock.Since(time.Now())}, p)
		var q *Queue
		measure := func(ms int) uint64 { // 4 Mb/s offered for ms; bytes sent in the last half
			var base uint64
			for i := range ms {
				if i == ms/2 {
					base = n.Load()
				}
				p.in <- ipv4("10.201.2.2", "10.201.1.2", 0, 500, uint32(i))
				time.Sleep(time.Millisecond)
			}
			return n.Load() - base
		}
		if got := measure(1000); got < 112_500 || got > 137_500 { // 2 Mb/s for 0.5 s
			t.Errorf("sent %d bytes in 0.5 s at 2 Mb/s", got)
		}
		for _, d := range r.table.all() {
			q = d
		}
		if q == nil {
			t.Fatal("no direction")
		}
		if err := q.SetRate(aqm.Mbit); err != nil {
			t.Fatal(err)
		}
		if q.Rate() != aqm.Mbit {
			t.Errorf("Rate %v after SetRate(1mbit)", q.Rate())
		}
		if got := measure(2000); got < 112_500 || got > 137_500 { // 1 Mb/s for 1 s
			t.Errorf("sent %d bytes in 1 s at 1 Mb/s", got)
		}
		if err := q.SetRate(0); err == nil {
			t.Error("SetRate(0) accepted")
		}
		stop()
	})
	synctest.Test(t, func(t *testing.T) {
		p := newPipe(64, func([]byte) bool { return true })
		r, stop := startRouter(t, Config{AQM: "fifo", Clock: clock.Since(time.Now())}, p)
		p.in <- ipv4("10.201.2.2", "10.201.1.2", 0, 500, 0)
		time.Sleep(time.Millisecond)
		all := r.table.all()
		if len(all) != 1 {
			t.Fatalf("%d directions, want 1", len(all))
		}
		if err := all[0].SetRate(aqm.Mbit); err == nil {
			t.Error("SetRate on an unshaped router accepted")
		}
		stop()
	})
}
