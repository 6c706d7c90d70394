package fq_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fq"
)

// A bulk flow keeps 50 packets queued while a sparse flow sends a small
// packet now and then: FQ-CoDel serves the sparse packet first (it arrives
// as a new flow), so it does not wait behind the bulk backlog.
func ExampleNewCoDel() {
	start := aqm.Time(time.Second)
	q, err := fq.NewCoDel[string](fq.CoDelConfig{Seed: 1}, nil)
	if err != nil {
		panic(err)
	}
	const bulk, sparse = 1, 2
	for range 50 {
		q.Enqueue(aqm.Packet[string]{Payload: "bulk", Meta: aqm.Meta{Size: 1500, Hash: bulk}}, start)
	}
	q.Dequeue(start) // the bulk flow is served until its quantum is used up
	q.Dequeue(start)
	now := start.Add(time.Millisecond)
	q.Enqueue(aqm.Packet[string]{Payload: "sparse", Meta: aqm.Meta{Size: 100, Hash: sparse}}, now)
	p, _ := q.Dequeue(now)
	fmt.Println(p.Payload, "waited", p.Enqueued.Since(now))
	d := q.Detail()
	fmt.Println("flows seen:", d.NewFlowCount, "queued:", q.Len())
	// Output:
	// sparse waited 0s
	// flows seen: 2 queued: 48
}
