package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/aqmkit/aqmkit/queues"
)

// simDesc says how the simulator configures each registry queue, where it
// says more than the registry's own description.
var simDesc = map[string]string{
	"fifo":      "drop-tail FIFO (pfifo) with the scenario's buffer",
	"codel":     "CoDel (RFC 8289), target 5 ms, interval 100 ms, ECN",
	"fq-codel":  "FQ-CoDel (RFC 8290), Linux defaults: 1024 flows, quantum 1514, target 5 ms, ECN",
	"sfq":       "SFQ (Linux sch_sfq defaults: 1024 buckets, depth 127), the scenario's buffer",
	"pie":       "PIE (RFC 8033), target 15 ms, ECN below 10% probability",
	"dualpi2":   "DualPI2 (RFC 9332), Linux defaults: target 15 ms, step 1 ms, k=2",
	"cobalt":    "COBALT (CoDel + BLUE, as in CAKE and ns-3), defaults: target 5 ms, interval 100 ms, BLUE above 400 ms or on overflow, ECN",
	"fq-cobalt": "FQ-COBALT (ns-3 FqCobalt): FQ-CoDel's scheduler with COBALT per flow, 1024 flows, quantum 1514, target 5 ms, ECN",
	"fq-pie":    "FQ-PIE (Linux fq_pie): FQ-CoDel's scheduler with PIE per flow, 1024 flows, target 15 ms",
	"cake":      "CAKE unshaped, besteffort, flows: 8-way set-associative flow queues, COBALT per flow (target 5 ms), ECN",
}

// redFamily are the registry's names that aqm_red.go configures itself
// (thresholds from the scenario, an optional device queue).
var redFamily = map[string]bool{"red": true, "gentle-red": true, "ared": true}

// init registers every queue of the library's registry (package queues):
// its defaults (no link preset: the scenario sets the buffer), the
// scenario's buffer and seed, and the tuning tune applies.
func init() {
	for _, s := range queues.List() {
		if redFamily[s.Name] {
			continue
		}
		desc := simDesc[s.Name]
		if desc == "" {
			desc = s.Description
		}
		register(AQM{Name: s.Name, Desc: desc, New: func(e Env) (aqm.Queue[uint64], error) {
			cfg, err := s.Config(queues.Options{LimitPackets: e.BufferPackets, Seed: e.Seed})
			if err != nil {
				return nil, err
			}
			return queues.FromConfig(tune(cfg, e), e.OnDrop)
		}})
	}
}

// tune fits a registry configuration to the simulated path: the MTU (the
// scenario's packet size) where the AQM takes one, the mean packet size
// where PIE estimates with it, and CAKE unshaped with one best-effort tin
// and per-flow queues, since the simulated link is the bottleneck and its
// packets carry a flow hash but no DSCP or host hashes.
func tune(cfg any, e Env) any {
	switch c := cfg.(type) {
	case codel.Config:
		c.MTUBytes = e.MSS
		return c
	case fq.CoDelConfig:
		c.MTUBytes = e.MSS
		return c
	case dualq.Config:
		c.MTUBytes = e.MSS
		return c
	case pie.Config:
		c.MeanPacketBytes = e.MSS
		return c
	case fq.PIEConfig:
		c.MeanPacketBytes = e.MSS
		return c
	case cake.Config:
		c.TinMode, c.FlowMode, c.Rate = cake.BestEffort, cake.Flows, 0
		return c
	}
	return cfg
}
