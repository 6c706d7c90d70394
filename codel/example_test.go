package codel_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
)

// A standing queue: 300 packets arrive at once and leave one per
// millisecond. CoDel waits one interval after the delay first exceeds the
// target, then drops at interval/sqrt(count) spacing.
func Example() {
	start := aqm.Time(time.Second)
	now := start
	q, err := codel.New(codel.Config{Control: codel.Control{DisableECN: true}}, func(p aqm.Packet[int], why aqm.Verdict) {
		fmt.Printf("%v: %s packet %d after %v\n", now.Sub(start), why, p.Payload, p.Enqueued.Since(now))
	})
	if err != nil {
		panic(err)
	}
	for i := range 300 {
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000}}, now)
	}
	for range 280 {
		now = now.Add(time.Millisecond)
		q.Dequeue(now)
	}
	d := q.Detail()
	fmt.Println("count", d.Count, "dropping", d.Dropping)
	// Output:
	// 105ms: dropped-early packet 104 after 105ms
	// 205ms: dropped-early packet 205 after 205ms
	// 276ms: dropped-early packet 277 after 276ms
	// count 3 dropping true
}

// With ECN (the default), ECN-capable packets are marked CE and delivered
// instead of dropped.
func ExampleQueue_Dequeue() {
	start := aqm.Time(time.Second)
	q, _ := codel.New[string](codel.Config{}, nil)
	for range 200 {
		q.Enqueue(aqm.Packet[string]{Payload: "data", Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, start)
	}
	for k := 1; k <= 110; k++ {
		now := start.Add(time.Duration(k) * time.Millisecond)
		if p, ok := q.Dequeue(now); ok && p.ECN == aqm.CE {
			fmt.Println("CE at", now.Sub(start))
		}
	}
	fmt.Println("marks:", q.Stats().Marked.Packets, "drops:", q.Stats().Dropped().Packets)
	// Output:
	// CE at 105ms
	// marks: 1 drops: 0
}

// ConfigForLink sizes a queue for an 8 Mb/s uplink with 100 ms round
// trips: 400 kB, at most 400 ms of queue even for traffic that ignores
// CoDel's drops.
func ExampleConfigForLink() {
	cfg := codel.ConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	q, err := codel.New[int](cfg, nil)
	if err != nil {
		panic(err)
	}
	c := q.Config()
	fmt.Println(c.LimitBytes, c.LimitPackets, c.Target, c.Interval)
	fmt.Println((8 * aqm.Mbit).TxTime(int64(c.LimitBytes)))
	// Output:
	// 400000 1000 5ms 100ms
	// 400ms
}
