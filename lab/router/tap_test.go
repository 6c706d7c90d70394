package router

import (
	"encoding/binary"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/iphdr"
)

// TestTap protects the tap: Read sees each valid packet once, when it is
// read and before its queue; Written sees each packet once, when it is
// written, after the delay line; both see the IP packet and the router's
// clock, also behind a virtio-net header; an invalid packet reaches
// neither.
func TestTap(t *testing.T) {
	for _, vnet := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			clk := clock.Since(time.Now())
			var mu sync.Mutex
			read, written := map[uint32]aqm.Time{}, map[uint32]aqm.Time{}
			seq := func(ip []byte) uint32 {
				if ip[0]>>4 != 4 {
					t.Errorf("tap saw %x, not an IPv4 packet", ip[:4])
					return 0
				}
				return binary.BigEndian.Uint32(ip[28:])
			}
			tap := Tap{
				Read:    func(now aqm.Time, ip []byte) { mu.Lock(); read[seq(ip)] = now; mu.Unlock() },
				Written: func(now aqm.Time, ip []byte) { mu.Lock(); written[seq(ip)] = now; mu.Unlock() },
			}
			p := newPipe(64, nil)
			_, stop := startRouter(t, Config{AQM: "fifo", Rate: 10 * aqm.Mbit, Delay: 7 * time.Millisecond, Clock: clk, Tap: tap, VnetHdr: vnet}, p)
			prefix := func(b []byte) []byte {
				if vnet {
					return append(make([]byte, iphdr.VnetHdrLen), b...) // a GSONone virtio-net header
				}
				return b
			}
			start := clk.Now()
			for i := range 5 {
				p.in <- prefix(ipv4("10.201.2.2", "10.201.1.2", 0, 100, uint32(i+1)))
				p.in <- prefix(ipv4("10.201.2.2", "10.201.3.2", 0, 100, uint32(i+101)))
			}
			p.in <- prefix([]byte{0x45, 0, 0, 3}) // not a valid packet
			time.Sleep(50 * time.Millisecond)
			stop()
			mu.Lock()
			defer mu.Unlock()
			if len(read) != 10 || len(written) != 10 {
				t.Fatalf("vnet %v: read %d, written %d, want 10 each", vnet, len(read), len(written))
			}
			for s, r := range read {
				w, ok := written[s]
				if !ok || r != start || w.Sub(r) < 7*time.Millisecond {
					t.Errorf("vnet %v: packet %d read at %v, written at %v (%v)", vnet, s, r.Sub(start), w.Sub(start), ok)
				}
			}
		})
	}
}

// TestTapAllocs protects the packet path with a tap: calling it
// allocates nothing.
func TestTapAllocs(t *testing.T) {
	n := 0
	r, err := New(Config{Tap: Tap{Read: func(aqm.Time, []byte) { n++ }, Written: func(aqm.Time, []byte) { n++ }}}, newPipe(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	ip := ipv4("10.201.2.2", "10.201.1.2", 0, 100, 1)
	ps := [][]byte{ip, ip}
	if a := testing.AllocsPerRun(100, func() { r.tapRead(ip); r.tapWritten(ps) }); a != 0 || n == 0 {
		t.Errorf("%v allocations per call, %d calls", a, n)
	}
}
