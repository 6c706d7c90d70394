package dualq_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/dualq"
)

// factory builds an aqmtest factory for cfg with the given declared limits.
func factory(cfg dualq.Config, limitPackets, limitBytes int) aqmtest.Factory {
	cfg.LimitPackets, cfg.LimitBytes = limitPackets, limitBytes
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			c := cfg
			c.Seed = seed
			return dualq.New(c, onDrop)
		},
		LimitPackets: limitPackets,
		LimitBytes:   limitBytes,
	}
}

// conformanceModes are the variants the contract is checked for: defaults,
// every option, and small limits where the shared limit binds.
var conformanceModes = []struct {
	name         string
	cfg          dualq.Config
	pkts, bytes_ int
}{
	{"defaults", dualq.Config{}, dualq.DefaultLimitPackets, dualq.DefaultLimitPackets * 2 * dualq.DefaultMTUBytes},
	{"small", dualq.Config{}, 8, 6000},
	{"small-aggressive", dualq.Config{Target: 100_000, Tupdate: 1_000_000, Alpha: 100, Beta: 100, MTUBytes: 64}, 16, 20000},
	{"ramp-anyect", dualq.Config{Ramp: true, AnyECTToL4S: true, Alpha: 50, Beta: 50, MTUBytes: 100}, 64, 64 * 1500},
	{"tsfifo-overflow", dualq.Config{TimeShiftedFIFO: true, OverflowOnOverload: true, Alpha: 50, Beta: 50}, 32, 32 * 1500},
	{"strict-l4s", dualq.Config{ClassicProtectionPercent: dualq.ClassicProtectionNone, CouplingFactor: 1}, 100, 100 * 1500},
	{"strict-classic", dualq.Config{ClassicProtectionPercent: 100, CouplingFactor: 5}, 100, 0},
	{"drop-enqueue-packet-step", dualq.Config{DropEnqueue: true, StepThresholdPackets: 3, StepMinQueuePackets: 1, Alpha: 50, Beta: 50, MTUBytes: 100}, 16, 20000},
}

// TestConformance protects the aqm.Queue contract in every mode, and
// Reconfigure under traffic across a cycle of limits, schedulers and
// classifications (reconfigure-cycle).
func TestConformance(t *testing.T) {
	for _, m := range conformanceModes {
		t.Run(m.name, func(t *testing.T) {
			lb := m.bytes_
			if lb == 0 {
				lb = m.pkts * 2 * dualq.DefaultMTUBytes // the default memory limit
			}
			aqmtest.Run(t, factory(m.cfg, m.pkts, lb))
		})
	}
	t.Run("reconfigure-cycle", func(t *testing.T) { aqmtest.Run(t, reconfigureCycle()) })
}

// reconfigureCycle is a factory whose Reconfigure changes limits, scheduler
// and classification every few operations of the kit's random traces.
func reconfigureCycle() aqmtest.Factory {
	cycle := []dualq.Config{
		{LimitPackets: 64, LimitBytes: 64 * 1500},
		{LimitPackets: 8, LimitBytes: 6000, Alpha: 100, Beta: 100},
		{LimitPackets: 32, LimitBytes: 32 * 1500, TimeShiftedFIFO: true},
		{LimitPackets: 64, LimitBytes: 64 * 1500, Ramp: true, ClassicProtectionPercent: 50},
	}
	f := factory(cycle[0], 64, 64*1500)
	f.Reconfigure = func(q aqm.Queue[uint64], i int) error {
		return q.(*dualq.Queue[uint64]).Reconfigure(cycle[i%len(cycle)])
	}
	return f
}

// FuzzQueue protects the contract on fuzzer-built traces (small limits,
// aggressive gains so that every AQM path runs).
func FuzzQueue(f *testing.F) {
	aqmtest.Fuzz(f, factory(conformanceModes[2].cfg, 16, 20000))
}
