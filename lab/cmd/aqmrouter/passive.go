package main

import (
	"net/netip"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
	"github.com/aqmkit/aqmkit/lab/router"
)

// passiveEvery is how often the passive round trips reach the controller:
// the smallest rise of the interval, as one sample (the rate of the
// probes cake-autorate sends by default).
const passiveEvery = 50 * time.Millisecond

// passiveTap is the router's Tap for -autorate-passive: the packets the
// driven direction writes leave towards the bottleneck (after the router's
// queue), the packets read from an address in that direction's prefix come
// back from it, and autorate.PassiveRTT times the TCP round trips between
// them. It keeps the smallest rise above each flow's own minimum since
// the loop last took one. The router calls it from its reading and its
// writing goroutines, hence the lock.
type passiveTap struct {
	target netip.Prefix
	mu     sync.Mutex
	rtt    *autorate.PassiveRTT
	lowest time.Duration
	have   bool
}

func newPassiveTap(target netip.Prefix) (*passiveTap, error) {
	rtt, err := autorate.NewPassiveRTT(autorate.PassiveConfig{})
	if err != nil {
		return nil, err
	}
	return &passiveTap{target: target, rtt: rtt}, nil
}

// Written times a packet leaving towards the driven direction.
func (t *passiveTap) Written(q *router.Queue, p []byte, now aqm.Time) { t.written(q.Prefix(), p, now) }

func (t *passiveTap) written(dir netip.Prefix, p []byte, now aqm.Time) {
	if !dir.Overlaps(t.target) {
		return
	}
	t.mu.Lock()
	t.rtt.Outbound(now, p)
	t.mu.Unlock()
}

// Read closes the round trip of a packet coming back from the driven
// direction.
func (t *passiveTap) Read(_ *router.Queue, p []byte, now aqm.Time) {
	if src, ok := source(p); !ok || !t.target.Contains(src) {
		return
	}
	t.mu.Lock()
	if s, ok := t.rtt.Inbound(now, p); ok && (!t.have || s.Rise < t.lowest) {
		t.lowest, t.have = s.Rise, true
	}
	t.mu.Unlock()
}

// take returns the smallest rise since the last call, if there was one.
func (t *passiveTap) take() (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.lowest, t.have
	t.have = false
	return d, ok
}

// stats returns the PassiveRTT's counters.
func (t *passiveTap) stats() autorate.PassiveStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rtt.Stats()
}

// source is an IPv4 or IPv6 packet's source address.
func source(p []byte) (netip.Addr, bool) {
	switch {
	case len(p) >= 20 && p[0]>>4 == 4:
		return netip.AddrFrom4([4]byte(p[12:16])), true
	case len(p) >= 40 && p[0]>>4 == 6:
		return netip.AddrFrom16([16]byte(p[8:24])), true
	}
	return netip.Addr{}, false
}
