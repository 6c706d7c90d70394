package clock_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
)

// A manual clock drives a queue in tests and simulations; the sojourn time
// is exactly the time the clock was advanced.
func ExampleManual() {
	q, _ := fifo.New[string](fifo.Config{}, nil)
	c := clock.NewManual(clock.Epoch)

	q.Enqueue(aqm.Packet[string]{Payload: "hello", Meta: aqm.Meta{Size: 100}}, c.Now())
	c.Advance(3 * time.Millisecond)
	p, _ := q.Dequeue(c.Now())
	fmt.Println(p.Payload, p.Enqueued.Since(c.Now()))
	// Output: hello 3ms
}
