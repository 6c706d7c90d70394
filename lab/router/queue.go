package router

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/queues"
)

// queueNames lists the algorithms newQueue builds, in display order.
var queueNames = queues.Names()

// newQueue builds the queue called name for a link of the given rate from
// the registry: the algorithm's link preset (four 100 ms round trips at the
// rate) when rate is positive, its defaults when rate is zero, and limit
// packets if limit is positive. CAKE's preset shapes to the rate itself;
// such a queue implements aqm.Paced, and the router then runs its front
// unshaped.
func newQueue(name string, rate aqm.Rate, limit int, params string, onDrop aqm.DropFunc[[]byte]) (aqm.Queue[[]byte], error) {
	return queues.New(name, queues.Options{Rate: rate, LimitPackets: limit, Params: params}, onDrop)
}
