package shaper_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/shaper"
	"github.com/aqmkit/aqmkit/clock"
)

// An event loop pulls packets with Next at its own instants. At 8 Mbit/s a
// 1000-byte packet takes 1 ms; the 2000-byte bucket lets three leave at once
// (the third overdraws it), then one per millisecond.
func ExampleShaper_Next() {
	q, _ := aqm.NewFIFO[string](aqm.FIFOConfig{}, nil)
	clk := clock.NewManual(0)
	s, _ := shaper.New(q, clk, shaper.Config{RateBitsPerSec: 8_000_000, BurstBytes: 2000})
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		s.Enqueue(aqm.Packet[string]{Payload: name, Meta: aqm.Meta{Size: 1000}})
	}
	for range 4 {
		now := clk.Now()
		for {
			p, ok, wait := s.Next(now)
			if !ok {
				fmt.Printf("t=%v wait %v\n", now.Sub(clock.Epoch), wait)
				clk.Advance(wait)
				break
			}
			fmt.Printf("t=%v send %s\n", now.Sub(clock.Epoch), p.Payload)
		}
	}
	// Output:
	// t=0s send a
	// t=0s send b
	// t=0s send c
	// t=0s wait 1ms
	// t=1ms send d
	// t=1ms wait 1ms
	// t=2ms send e
	// t=2ms wait 1ms
	// t=3ms wait 0s
}

// Run sends until its context ends; producers and a rate controller may call
// the shaper from other goroutines meanwhile.
func ExampleShaper_Run() {
	q, _ := aqm.NewFIFO[int](aqm.FIFOConfig{}, nil)
	s, _ := shaper.New(q, nil, shaper.Config{RateBitsPerSec: 100_000_000})
	for i := range 3 {
		s.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	sent := 0
	err := s.Run(ctx, func(p aqm.Packet[int]) { sent++ })
	fmt.Println(sent, err)
	// Output:
	// 3 context deadline exceeded
}
