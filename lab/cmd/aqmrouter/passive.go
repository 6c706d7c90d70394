package main

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
	"github.com/aqmkit/aqmkit/lab/router"
)

// passiveTap times the TCP flows the router forwards towards the autorate
// direction, with no probe of its own (-autorate-passive): a packet
// written towards the direction's prefix leaves towards the WAN, after
// the router's queue (autorate.PassiveRTT.Outbound); a packet read from
// the prefix arrives from the WAN, before it (Inbound). The round trip so
// measured leaves the router's own queue out and holds the queue beyond
// it, which the controller judges.
//
// Samples come as fast as the flows' acknowledgements, and some carry a
// receiver's delayed acknowledgement; the loop feeds the controller the
// smallest rise of each probe interval instead (summary), one sample per
// interval as a reflector would give, free of that noise. The smallest
// is taken, not a mean, because a queue beyond the router delays every
// flow: when even the least delayed packet waited, the queue is real.
type passiveTap struct {
	prefix netip.Prefix

	mu   sync.Mutex
	echo *autorate.PassiveRTT // -autorate-passive-match echo
	ack  *ackRTT              // -autorate-passive-match ack
	// The interval's summary, under mu: samples and the smallest rise.
	n       int
	minRise time.Duration
	total   atomic.Uint64
}

func newPassiveTap(prefix netip.Prefix, match string) (*passiveTap, error) {
	if match == "ack" {
		return &passiveTap{prefix: prefix, ack: newAckRTT()}, nil
	}
	rtt, err := autorate.NewPassiveRTT(autorate.PassiveConfig{})
	if err != nil {
		return nil, err
	}
	return &passiveTap{prefix: prefix, echo: rtt}, nil
}

// tap is the router's Tap.
func (p *passiveTap) tap() router.Tap { return p }

// addrs returns ip's source and destination addresses; ok is false for a
// packet too short to hold them.
func addrs(ip []byte) (src, dst netip.Addr, ok bool) {
	switch {
	case len(ip) >= 20 && ip[0]>>4 == 4:
		return netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20])), true
	case len(ip) >= 40 && ip[0]>>4 == 6:
		return netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40])), true
	}
	return netip.Addr{}, netip.Addr{}, false
}

// Read is router.Tap's: a packet from the direction's prefix closes a
// round trip.
func (p *passiveTap) Read(_ *router.Queue, ip []byte, now aqm.Time) {
	src, _, ok := addrs(ip)
	if !ok || !p.prefix.Contains(src) {
		return
	}
	p.mu.Lock()
	var s autorate.PassiveSample
	if p.ack != nil {
		s, ok = p.ack.Inbound(now, ip)
	} else {
		s, ok = p.echo.Inbound(now, ip)
	}
	if ok {
		if p.n == 0 || s.Rise < p.minRise {
			p.minRise = s.Rise
		}
		p.n++
	}
	p.mu.Unlock()
}

// Written is router.Tap's: a packet towards the direction's prefix opens
// one.
func (p *passiveTap) Written(_ *router.Queue, ip []byte, now aqm.Time) {
	_, dst, ok := addrs(ip)
	if !ok || !p.prefix.Contains(dst) {
		return
	}
	p.mu.Lock()
	if p.ack != nil {
		p.ack.Outbound(now, ip)
	} else {
		p.echo.Outbound(now, ip)
	}
	p.mu.Unlock()
}

// summary returns the smallest rise since the last call and how many
// samples it was taken from, and starts a new interval.
func (p *passiveTap) summary() (rise time.Duration, n int) {
	p.mu.Lock()
	rise, n = p.minRise, p.n
	p.n, p.minRise = 0, 0
	p.mu.Unlock()
	p.total.Add(uint64(n))
	return rise, n
}

// stats returns the echo estimator's counters (zero for ack).
func (p *passiveTap) stats() autorate.PassiveStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.echo == nil {
		return autorate.PassiveStats{}
	}
	return p.echo.Stats()
}

// passiveIndex is 1 with -autorate-passive and 0 without: the passive
// summary is the controller's last reflector.
func (a *autorateOptions) passiveIndex() int {
	if a.passive {
		return 1
	}
	return 0
}

// passiveSample feeds the controller the interval's passive summary, if
// the interval had a sample.
func (l *autorateLoop) passiveSample() {
	rise, n := l.opt.tap.summary()
	if n == 0 {
		return
	}
	now := l.clk.Now()
	d := l.ctl.Sample(now, len(l.opt.refl), rise)
	l.log(now, "passive", len(l.opt.refl), rise, 0, d)
}

// describe is the passive counters, for the exit line.
func (p *passiveTap) describe() string {
	if p.ack != nil {
		return fmt.Sprintf("passive round trips by acknowledgement number %d", p.total.Load())
	}
	s := p.stats()
	return fmt.Sprintf("passive round trips %d (%d from handshakes), packets skipped %d, flows evicted %d, timestamps expired %d",
		s.Samples, s.Handshakes, s.Skipped, s.Evicted, s.Expired)
}
