package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
)

func init() {
	// Unshaped: the simulated link is the bottleneck, as for every other
	// queue here; a CAKE rate at or above the link's would only add its
	// shaper's bookkeeping. The simulator's packets carry a flow hash and
	// no DSCP or host hashes, so one best-effort tin and per-flow queues.
	register(AQM{Name: "cake", Desc: "CAKE unshaped, besteffort, flows: 8-way set-associative flow queues, COBALT per flow (target 5 ms), ECN", New: func(e Env) (aqm.Queue[uint64], error) {
		return cake.New(cake.Config{TinMode: cake.BestEffort, FlowMode: cake.Flows, LimitPackets: e.BufferPackets, Seed: e.Seed}, e.OnDrop)
	}})
}
