package router

import (
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// recordTap counts what a Tap is shown, by direction and way.
type recordTap struct {
	mu            sync.Mutex
	read, written map[netip.Prefix][]uint32 // the packets' sequence numbers
	after         bool                      // a Written came no earlier than its Read
	readAt        map[uint32]aqm.Time
}

func (t *recordTap) Read(q *Queue, p []byte, now aqm.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seq := uint32(p[28])<<24 | uint32(p[29])<<16 | uint32(p[30])<<8 | uint32(p[31])
	t.read[q.Prefix()] = append(t.read[q.Prefix()], seq)
	t.readAt[seq] = now
}

func (t *recordTap) Written(q *Queue, p []byte, now aqm.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seq := uint32(p[28])<<24 | uint32(p[29])<<16 | uint32(p[30])<<8 | uint32(p[31])
	t.written[q.Prefix()] = append(t.written[q.Prefix()], seq)
	if now.Sub(t.readAt[seq]) < 5*time.Millisecond {
		t.after = false
	}
}

// TestTap protects the Tap hook: every packet is shown once as read, with
// the direction it was queued in, and once as written, after the delay
// line (here 5 ms), as the IP packet.
func TestTap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tap := &recordTap{read: map[netip.Prefix][]uint32{}, written: map[netip.Prefix][]uint32{}, readAt: map[uint32]aqm.Time{}, after: true}
		p := newPipe(64, nil)
		r, stop := startRouter(t, Config{AQM: "fifo", Rate: 10 * aqm.Mbit, Delay: 5 * time.Millisecond, Tap: tap,
			Clock: clock.Since(time.Now())}, p)
		for i := range uint32(6) {
			dst := "10.201.1.2"
			if i%2 == 1 {
				dst = "10.201.2.2"
			}
			p.in <- ipv4("10.201.9.2", dst, 0, 200, i)
		}
		waitRead(r, 6)
		time.Sleep(100 * time.Millisecond)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		tap.mu.Lock()
		defer tap.mu.Unlock()
		a, b := netip.MustParsePrefix("10.201.1.0/24"), netip.MustParsePrefix("10.201.2.0/24")
		for pfx, want := range map[netip.Prefix][]uint32{a: {0, 2, 4}, b: {1, 3, 5}} {
			if got := tap.read[pfx]; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Errorf("read %v: %v, want %v", pfx, got, want)
			}
			if got := tap.written[pfx]; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Errorf("written %v: %v, want %v", pfx, got, want)
			}
		}
		if !tap.after {
			t.Error("a packet was shown as written before its delay")
		}
	})
}
