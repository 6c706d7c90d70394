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
func ExampleWrap() {
	q, _ := fifo.New[string](fifo.Config{}, nil)
	c := clock.NewManual(0)
	b := clock.Wrap[string](q, c)

	b.Enqueue(aqm.Packet[string]{Payload: "hello", Meta: aqm.Meta{Size: 100}})
	c.Advance(3 * time.Millisecond)
	p, _ := b.Dequeue()
	fmt.Println(p.Payload, p.Enqueued.Since(c.Now()))
	// Output: hello 3ms
}
