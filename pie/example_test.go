package pie_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/pie"
)

// Example feeds PIE twice the rate its link drains: after the 150 ms burst
// allowance the probability climbs until about half the arrivals are
// dropped, holding the queueing delay near the 15 ms target.
func Example() {
	q, err := pie.New[int](pie.Config{Seed: 1, LimitPackets: 10000}, nil)
	if err != nil {
		panic(err)
	}
	now := aqm.Time(time.Second)
	var dropped, offered, sent int
	var delay time.Duration
	for i := range 200000 { // 20 s: a packet every 100 µs, one sent every 200 µs
		now = now.Add(100 * time.Microsecond)
		if !q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}}, now).Accepted() && i >= 100000 {
			dropped++
		}
		if i >= 100000 {
			offered++
		}
		if i%2 == 1 {
			if p, ok := q.Dequeue(now); ok && i >= 100000 {
				delay += p.Enqueued.Since(now)
				sent++
			}
		}
	}
	fmt.Printf("dropped %.2f of the second half\n", float64(dropped)/float64(offered))
	fmt.Printf("mean delay %v\n", (delay / time.Duration(sent)).Round(time.Millisecond))
	// Output:
	// dropped 0.50 of the second half
	// mean delay 15ms
}

// ExampleQueue_Enqueue shows ECN. Unresponsive ECN-capable traffic at
// twice the link rate is marked while PIE's probability is below 10%; the
// marks do not slow it, the probability keeps rising, and from 10% on the
// packets PIE picks are dropped as overload instead: in the long run half of
// them, as for Not-ECT traffic.
func ExampleQueue_Enqueue() {
	q, _ := pie.New[int](pie.Config{Seed: 7, LimitPackets: 10000}, nil)
	now := aqm.Time(time.Second)
	verdicts := map[aqm.Verdict]int{}
	for i := range 200000 {
		now = now.Add(100 * time.Microsecond)
		verdicts[q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, now)]++
		if i%2 == 1 {
			q.Dequeue(now)
		}
	}
	fmt.Println("some marked:", verdicts[aqm.Marked] > 0)
	fmt.Println("early drops of ECT packets:", verdicts[aqm.DroppedEarly])
	fmt.Printf("overload drops: %.1f of all\n", float64(verdicts[aqm.DroppedOverload])/200000)
	// Output:
	// some marked: true
	// early drops of ECT packets: 0
	// overload drops: 0.5 of all
}

// ConfigForLink sizes a queue for an 8 Mb/s uplink with 100 ms round
// trips: 400 kB, at most 400 ms of queue even for traffic that ignores
// PIE's drops. The seed is left at zero, as in production: Config reports
// the one drawn.
func ExampleConfigForLink() {
	cfg := pie.ConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	q, err := pie.New[int](cfg, nil)
	if err != nil {
		panic(err)
	}
	c := q.Config()
	fmt.Println(c.LimitBytes, c.LimitPackets, c.Target, c.Seed != 0)
	// Output:
	// 400000 1000 15ms true
}
