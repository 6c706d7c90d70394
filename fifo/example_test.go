package fifo_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
)

// A FIFO sized for an 8 Mbit/s link with 100 ms round trips: four round
// trips' worth of bytes, and as many full-size packets.
func ExampleConfigForLink() {
	cfg := fifo.ConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	fmt.Println(cfg.LimitPackets, "packets,", cfg.LimitBytes, "bytes")
	q, err := fifo.New[int](cfg, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(q.Detail().MemoryBytes, "bytes of ring")
	// Output:
	// 265 packets, 400000 bytes
	// 16384 bytes of ring
}

// Bursts in and out: one call per burst, one verdict per packet.
func ExampleQueue_EnqueueBatch() {
	q, err := fifo.New[string](fifo.Config{LimitPackets: 3}, nil)
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

// A drop-tail FIFO of three packets: the fourth arrival is refused and stays
// with the caller.
func ExampleNew() {
	q, err := fifo.New[string](fifo.Config{LimitPackets: 3}, nil)
	if err != nil {
		panic(err)
	}
	now := aqm.Time(1_000_000_000)
	for _, name := range []string{"a", "b", "c", "d"} {
		v := q.Enqueue(aqm.Packet[string]{Payload: name, Meta: aqm.Meta{Size: 1500}}, now)
		fmt.Println(name, v)
	}
	p, _ := q.Dequeue(now + 2_000_000)
	fmt.Println("sent", p.Payload, "after", p.Enqueued.Since(now+2_000_000))
	s := q.Stats()
	fmt.Println("offered", s.Offered().Packets, "queued", s.Len, "dropped", s.Dropped().Packets)
	// Output:
	// a enqueued
	// b enqueued
	// c enqueued
	// d dropped-overlimit
	// sent a after 2ms
	// offered 4 queued 2 dropped 1
}
