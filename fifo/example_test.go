package aqm_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// A FIFO sized for an 8 Mbit/s link with 100 ms round trips: four round
// trips' worth of bytes, and as many full-size packets.
func ExampleFIFOConfigForLink() {
	cfg := aqm.FIFOConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	fmt.Println(cfg.LimitPackets, "packets,", cfg.LimitBytes, "bytes")
	q, err := aqm.NewFIFO[int](cfg, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(q.Detail().MemoryBytes, "bytes of ring")
	// Output:
	// 265 packets, 400000 bytes
	// 16384 bytes of ring
}

// Bursts in and out: one call per burst, one verdict per packet.
func ExampleFIFO_EnqueueBatch() {
	q, err := aqm.NewFIFO[string](aqm.FIFOConfig{LimitPackets: 3}, nil)
	if err != nil {
		panic(err)
	}
	in := []aqm.Packet[string]{
		{Payload: "a", Meta: aqm.Meta{Size: 100}},
		{Payload: "b", Meta: aqm.Meta{Size: 100}},
		{Payload: "c", Meta: aqm.Meta{Size: 100}},
		{Payload: "d", Meta: aqm.Meta{Size: 100}},
	}
	verdicts := make([]aqm.Verdict, len(in))
	now := aqm.Time(time.Second)
	fmt.Println(q.EnqueueBatch(in, verdicts, now), "accepted:", verdicts)

	out := make([]aqm.Packet[string], 8)
	n := q.DequeueBatch(out, now+aqm.Time(time.Millisecond))
	for _, p := range out[:n] {
		fmt.Print(p.Payload, " ")
	}
	fmt.Println()
	// Output:
	// 3 accepted: [enqueued enqueued enqueued dropped-overlimit]
	// a b c
}
