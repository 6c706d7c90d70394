package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
)

// bottleneck is the demo's link: a shaper sending, backlogged, at the
// controller's rate into a device buffer that drains at a capacity that
// falls from 40 to 10 Mbit/s between 2 s and 5 s. The reflector holds each
// reply for the buffer's delay, and the achieved rate is what the link
// delivered (as a router counts a download arriving from its modem).
type bottleneck struct {
	mu        sync.Mutex
	start     time.Time
	last      time.Time
	rate      float64 // bit/s, the shaper's
	queue     float64 // bytes in the device buffer
	delivered float64 // bytes
}

// The demo's link: capacities, the dip, and the device buffer (600
// packets of 1500 bytes).
const (
	demoHigh     = 40e6
	demoLow      = 10e6
	demoDipFrom  = 2 * time.Second
	demoDipTo    = 5 * time.Second
	demoBufBytes = 600 * 1500
)

func (b *bottleneck) capacity(at time.Time) float64 {
	if d := at.Sub(b.start); d >= demoDipFrom && d < demoDipTo {
		return demoLow
	}
	return demoHigh
}

// advance moves the link to now, in steps of at most a millisecond.
func (b *bottleneck) advance(now time.Time) {
	for b.last.Before(now) {
		dt := min(now.Sub(b.last), time.Millisecond)
		c := b.capacity(b.last)
		in, outMax := b.rate*dt.Seconds()/8, c*dt.Seconds()/8
		out := min(b.queue+in, outMax)
		b.queue = min(b.queue+in-out, demoBufBytes) // beyond the buffer: dropped
		b.delivered += out
		b.last = b.last.Add(dt)
	}
}

// SetRate is the shaper's: the controller drives it.
func (b *bottleneck) SetRate(r aqm.Rate) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(time.Now())
	b.rate = float64(r)
	return nil
}

func (b *bottleneck) hold() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.advance(now)
	return time.Duration(b.queue * 8 / b.capacity(now) * 1e9)
}

func (b *bottleneck) bytes() (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(time.Now())
	return uint64(b.delivered), nil
}

// runDemo runs two reflectors behind the simulated bottleneck on 127.0.0.1
// and a controller probing them, until ctx ends.
func runDemo(ctx context.Context, out io.Writer) error {
	now := time.Now()
	b := &bottleneck{start: now, last: now}
	var addrs []string
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range 2 {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addrs = append(addrs, c.LocalAddr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveEcho(ctx, c, b.hold)
		}()
	}
	fmt.Fprintf(out, "capacity %.0f Mbit/s, %.0f Mbit/s from %v to %v; reflectors %v\n",
		demoHigh/1e6, demoLow/1e6, demoDipFrom, demoDipTo, addrs)
	cfg := autorate.Config{MinRate: 5 * aqm.Mbit, BaseRate: 20 * aqm.Mbit, MaxRate: 45 * aqm.Mbit,
		AchievedCut: autorate.DefaultAchievedCut, MaxIncrease: 0.1, MaxCut: 0.4}
	return probeLoop(ctx, addrs, cfg, b.bytes, b, out)
}
