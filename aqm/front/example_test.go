package front_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/front"
)

// Producers enqueue from their own goroutines; one consumer blocks in Dequeue
// until Close, after draining what was queued.
func Example() {
	q, _ := aqm.NewFIFO[string](aqm.FIFOConfig{LimitPackets: 100}, nil)
	f := front.New(q, nil) // nil: a new clock.Mono
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		wg.Go(func() { f.Enqueue(aqm.Packet[string]{Payload: name, Meta: aqm.Meta{Size: 100}}) })
	}
	wg.Wait()
	f.Close()
	n := 0
	for {
		_, err := f.Dequeue(context.Background())
		if err != nil {
			fmt.Println(n, "packets, then:", err)
			break
		}
		n++
	}
	// Output:
	// 3 packets, then: front: closed
}
