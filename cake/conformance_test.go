package cake

import (
	"time"

	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
)

// kitConfigs are the unshaped configurations the conformance kit runs on
// (a shaped queue holds packets back, which the kit's contract forbids).
var kitConfigs = map[string]Config{
	"default":                  {LimitPackets: 200, MemoryLimitBytes: 150_000},
	"besteffort":               {TinMode: BestEffort, FlowMode: Flows, LimitPackets: 100},
	"diffserv8-srchost":        {TinMode: DiffServ8, FlowMode: SrcHost, LimitPackets: 300, MemoryLimitBytes: 200_000},
	"flowblind-ingress":        {FlowMode: FlowBlind, Ingress: true, LimitPackets: 64},
	"ackfilter-aggressive-atm": {ACKFilter: ACKFilterAggressive, Overhead: 8, Framing: ATM, TinMode: DiffServ4, LimitPackets: 500},
}

func kitFactory(cfg Config) aqmtest.Factory {
	d := cfg.withDefaults()
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			c := cfg
			c.Seed = seed + 1
			return New(c, onDrop)
		},
		LimitPackets: d.LimitPackets,
		LimitBytes:   d.MemoryLimitBytes,
		Reconfigure: func(q aqm.Queue[uint64], i int) error {
			c := cfg
			c.Target = defaultTarget * time.Duration(1+i%3)
			c.Overhead = i % 40
			c.Ingress = i%2 == 1
			return q.(*Queue[uint64]).Reconfigure(c)
		},
	}
}

// TestConformance runs the aqm.Queue conformance kit on several
// configurations (tin modes, isolation modes, ingress, ACK filter, ATM
// overhead).
func TestConformance(t *testing.T) {
	for name, cfg := range kitConfigs {
		if testing.Short() && (name == "besteffort" || name == "flowblind-ingress") {
			continue // covered by the full run; -short keeps -race within budget
		}
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, kitFactory(cfg)) })
	}
}

// FuzzQueue plays fuzzed operation traces on the default configuration.
func FuzzQueue(f *testing.F) { aqmtest.Fuzz(f, kitFactory(kitConfigs["default"])) }
