package red_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/red"
)

// With w_q = 1 the average is the queue each arrival finds, so the verdicts
// follow from the thresholds alone: below min_th accept; at min_th enter
// the band (p_b = 0, no signal); at max_th every arrival is signalled, and
// an ECN-capable packet is dropped there (hard drop) rather than marked.
func ExampleNew() {
	q, err := red.New[string](red.Config{MinThreshold: 3, MaxThreshold: 4, Weight: 1, Seed: 1}, nil)
	if err != nil {
		panic(err)
	}
	now := aqm.Time(time.Second)
	for i, ecn := range []aqm.ECN{aqm.ECT0, aqm.ECT0, aqm.ECT0, aqm.ECT0, aqm.ECT0, aqm.NotECT} {
		v := q.Enqueue(aqm.Packet[string]{Payload: fmt.Sprint("p", i), Meta: aqm.Meta{Size: 1500, ECN: ecn}}, now)
		fmt.Printf("p%d %-7v %-17v avg %.0f\n", i, ecn, v, q.Detail().Avg)
	}
	var order []string
	for {
		p, ok := q.Dequeue(now)
		if !ok {
			break
		}
		order = append(order, p.Payload)
	}
	fmt.Println(strings.Join(order, " "))
	s := q.Stats()
	fmt.Println("early:", s.DroppedEarly.Packets, "overload:", s.DroppedOverload.Packets)
	// Output:
	// p0 ECT(0)  enqueued          avg 0
	// p1 ECT(0)  enqueued          avg 1
	// p2 ECT(0)  enqueued          avg 2
	// p3 ECT(0)  enqueued          avg 3
	// p4 ECT(0)  dropped-overload  avg 4
	// p5 Not-ECT dropped-early     avg 4
	// p0 p1 p2 p3
	// early: 1 overload: 1
}

// Adaptive RED raises max_p while the average stays above its target band,
// one step per 0.5 s: min(0.01, max_p/4) added each time, so from 0.02:
// 0.025, 0.03125, 0.0390625, 0.048828125.
func ExampleQueue_Detail() {
	q, _ := red.New[int](red.Config{Gentle: true, Adaptive: true, MinThreshold: 10, MaxThreshold: 30,
		Weight: 1, DisableECN: true, Seed: 1}, nil)
	now := aqm.Time(time.Second)
	for range 25 { // a standing queue of 25: above the band [18, 22]
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now)
	}
	for range 4 {
		now += aqm.Time(500 * time.Millisecond)
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now) // dropped or not, at random
		for q.Len() > 25 {
			q.Dequeue(now) // the link keeps the queue at 25
		}
		d := q.Detail()
		fmt.Printf("avg %.0f band [%.0f, %.0f] max_p %.4f\n", d.Avg, d.TargetLow, d.TargetHigh, d.MaxP)
	}
	// Output:
	// avg 25 band [18, 22] max_p 0.0250
	// avg 25 band [18, 22] max_p 0.0312
	// avg 25 band [18, 22] max_p 0.0391
	// avg 25 band [18, 22] max_p 0.0488
}
