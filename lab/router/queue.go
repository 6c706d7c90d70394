package router

// This file is the router's only knowledge of the algorithms. It is a stand-in
// for the library's registry: once package queues is available, newQueue
// becomes queues.New(name, queues.Options{Rate: rate}, onDrop) and queueNames
// becomes queues.Names(), and nothing else in the router changes.

import (
	"fmt"
	"strings"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/aqmkit/aqmkit/sfq"
)

// queueNames lists the algorithms newQueue builds, in display order.
var queueNames = []string{"fifo", "codel", "pie", "sfq", "fq-codel", "cake"}

// newQueue builds the queue called name for a link of the given rate: the
// algorithm's link preset (ConfigForLink, limits of four 100 ms round trips
// at the rate) when rate is positive, its defaults when rate is zero. CAKE's
// preset shapes to the rate itself; such a queue implements aqm.Paced, and
// the router then runs its front unshaped.
func newQueue(name string, rate aqm.Rate, onDrop aqm.DropFunc[[]byte]) (aqm.Queue[[]byte], error) {
	switch name {
	case "fifo":
		var cfg fifo.Config
		if rate > 0 {
			cfg = fifo.ConfigForLink(rate, 0)
		}
		return fifo.New(cfg, onDrop)
	case "codel":
		var cfg codel.Config
		if rate > 0 {
			cfg = codel.ConfigForLink(rate, 0)
		}
		return codel.New(cfg, onDrop)
	case "pie":
		var cfg pie.Config
		if rate > 0 {
			cfg = pie.ConfigForLink(rate, 0)
		}
		return pie.New(cfg, onDrop)
	case "sfq":
		var cfg sfq.Config
		if rate > 0 {
			cfg = sfq.ConfigForLink(rate, 0)
		}
		return sfq.New(cfg, onDrop)
	case "fq-codel":
		var cfg fq.CoDelConfig
		if rate > 0 {
			cfg = fq.CoDelConfigForLink(rate, 0)
		}
		return fq.NewCoDel(cfg, onDrop)
	case "cake":
		var cfg cake.Config
		if rate > 0 {
			cfg = cake.ConfigForLink(rate, 0)
		}
		return cake.New(cfg, onDrop)
	}
	return nil, fmt.Errorf("router: unknown queue %q (have %s)", name, strings.Join(queueNames, ", "))
}
