package cobalt_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
)

// A flow sent at twice the rate the queue is drained: COBALT's BLUE half
// raises its drop probability on every overflow until the queue holds.
func Example() {
	q, err := cobalt.New[int](cobalt.Config{LimitPackets: 100, Seed: 1}, nil)
	if err != nil {
		panic(err)
	}
	now := aqm.Time(time.Second)
	for i := range 20000 { // 20 s: arrivals every 0.6 ms, departures every 1.2 ms
		now += aqm.Time(600 * time.Microsecond)
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}}, now)
		if i%2 == 0 {
			q.Dequeue(now)
		}
	}
	d := q.Detail()
	fmt.Printf("BLUE probability %.2f, queue %d packets\n", d.BlueProbability, q.Len())
	fmt.Println("refused at the limit:", q.Stats().DroppedOverlimit.Packets > 0, "dropped by BLUE:", d.DroppedBlue > 0)
	// Output:
	// BLUE probability 0.43, queue 4 packets
	// refused at the limit: true dropped by BLUE: true
}
