package fq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/frame"
	"github.com/aqmkit/aqmkit/pie"
)

// TestConformance protects the aqm.Queue contract of FQ-CoDel, FQ-COBALT and
// FQ-PIE (ownership, counters, limits, ECN rules, per-flow order, odd
// input, time glitches, bursts, allocations, Reconfigure under traffic),
// checked by the shared kit for each queue's named configurations.
func TestConformance(t *testing.T) {
	t.Run("CoDel", conformanceCoDel)
	t.Run("Cobalt", conformanceCobalt)
	t.Run("PIE", conformancePIE)
}

func coDelFactory(cfg CoDelConfig) aqmtest.Factory {
	c := cfg
	_ = c.Validate()
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			cfg := cfg
			cfg.Seed = seed
			return NewCoDel(cfg, onDrop)
		},
		LimitPackets: c.LimitPackets,
		LimitBytes:   c.MemoryLimitBytes,
		Reconfigure: func(q aqm.Queue[uint64], i int) error {
			next := cfg
			switch i % 4 {
			case 0:
				next.QuantumBytes = 300
				next.Target, next.Interval = time.Microsecond, 30*time.Microsecond
			case 1:
				next.Flows = max(1, c.Flows/2)
			case 2:
				next.Seed = uint64(i)
				next.GlobalBacklogGuard = true
			}
			next.Seed += q.(*CoDel[uint64]).cfg.Seed * uint64(i%4/2) // keep the seed on even steps
			return q.(*CoDel[uint64]).Reconfigure(next)
		},
	}
}

// conformanceCoDel protects the aqm.Queue contract, checked by the
// shared kit, for the defaults, the options and small limits.
func conformanceCoDel(t *testing.T) {
	for name, cfg := range map[string]CoDelConfig{
		"default": {},
		"linux":   {GlobalBacklogGuard: true, Control: codel.Control{StrictDeadline: true, LinuxCount: true, DisableECN: true}, KeepCountOnOverload: true},
		"small":   {Flows: 4, LimitPackets: 8, MemoryLimitBytes: 6000, QuantumBytes: 256, DropBatchPackets: 3, Control: codel.Control{Target: time.Microsecond, Interval: 20 * time.Microsecond}},
		"one":     {Flows: 1, LimitPackets: 3, MemoryLimitBytes: 3000, Control: codel.Control{MTUBytes: 1000, CEThreshold: time.Microsecond, CEThresholdECT1Only: true}},
	} {
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, coDelFactory(cfg)) })
	}
}

// FuzzCoDelQueue runs the shared contract fuzzer on a small, aggressive
// FQ-CoDel.
func FuzzCoDelQueue(f *testing.F) {
	aqmtest.Fuzz(f, coDelFactory(CoDelConfig{Flows: 8, LimitPackets: 32, MemoryLimitBytes: 20000, QuantumBytes: 300, Control: codel.Control{Target: time.Microsecond, Interval: 30 * time.Microsecond}}))
}

func cobaltFactory(cfg CobaltConfig) aqmtest.Factory {
	c := cfg.withDefaults()
	return aqmtest.Factory{
		// The kit's ClockGlitch check compares single packets' fates after
		// a congestion episode that raises the flows' BLUE probabilities
		// in the glitched and the control queue alike (the sojourn passes
		// the 400 ms ceiling); BLUE decays by 1/4096 per Target, so both
		// still drop light traffic at random for seconds, and their
		// random streams differ. TestFQFamilyFarFutureReading checks the
		// time policy instead.
		SkipClockGlitch: !c.DisableBlueThreshold,
		New: func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			cfg := cfg
			cfg.Seed = seed
			return NewCobalt(cfg, onDrop)
		},
		LimitPackets: c.LimitPackets,
		LimitBytes:   c.MemoryLimitBytes,
		Reconfigure: func(q aqm.Queue[uint64], i int) error {
			next := cfg
			switch i % 4 {
			case 0:
				next.QuantumBytes = 300
				next.Target, next.Interval = time.Microsecond, 30*time.Microsecond
			case 1:
				next.Flows = max(1, c.Flows/2)
			case 2:
				next.Seed = uint64(i)
				next.DisableBlueThreshold = true
			}
			return q.(*Cobalt[uint64]).Reconfigure(next)
		},
	}
}

func pieFactory(cfg PIEConfig) aqmtest.Factory {
	c := cfg.withDefaults()
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			cfg := cfg
			cfg.Seed = seed
			return NewPIE(cfg, onDrop)
		},
		LimitPackets: c.LimitPackets,
		LimitBytes:   c.MemoryLimitBytes,
		Reconfigure: func(q aqm.Queue[uint64], i int) error {
			next := cfg
			switch i % 4 {
			case 0:
				next.QuantumBytes = 300
				next.Target, next.TUpdate = 10*time.Microsecond, 20*time.Microsecond
				next.MaxBurst = 5 * time.Microsecond
			case 1:
				next.Flows = max(1, c.Flows/2)
			case 2:
				next.Seed = uint64(i)
				next.RateEstimator = !cfg.RateEstimator
			}
			return q.(*PIE[uint64]).Reconfigure(next)
		},
	}
}

// conformanceCobalt protects the aqm.Queue contract of FQ-COBALT,
// checked by the shared kit, for the defaults, the Linux-like options and
// small, aggressive settings.
func conformanceCobalt(t *testing.T) {
	for name, cfg := range map[string]CobaltConfig{
		"default": {},
		"linux":   {Control: cobalt.Control{DisableBlueThreshold: true, DisableECN: true, MTUTime: time.Microsecond}},
		"small": {Flows: 4, LimitPackets: 8, MemoryLimitBytes: 6000, QuantumBytes: 256, DropBatchPackets: 3,
			Control: cobalt.Control{Target: time.Microsecond, Interval: 20 * time.Microsecond, BlueThreshold: 50 * time.Microsecond, BlueIncrement: 0.25}},
		"one": {Flows: 1, LimitPackets: 2, MemoryLimitBytes: 2 * frame.FullBytes, Control: cobalt.Control{BlueIncrement: 1}},
	} {
		if testing.Short() && name != "default" && name != "small" {
			continue // -short: the defaults and the aggressive settings
		}
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, cobaltFactory(cfg)) })
	}
}

// conformancePIE protects the aqm.Queue contract of FQ-PIE, checked by
// the shared kit, for the defaults, Linux-like options and small,
// aggressive settings.
func conformancePIE(t *testing.T) {
	for name, cfg := range map[string]PIEConfig{
		"default": {},
		"linux":   {Control: pie.Control{DisableECN: true, Derandomize: true, HighDelayBoost: true}},
		"small": {Flows: 4, LimitPackets: 8, MemoryLimitBytes: 6000, QuantumBytes: 256, DropBatchPackets: 3,
			Control: pie.Control{Target: 10 * time.Microsecond, TUpdate: 20 * time.Microsecond, DisableBurstAllowance: true, MeanPacketBytes: 1, DequeueThresholdBytes: 4, Alpha: 16, Beta: 16}},
		"rate": {Flows: 2, LimitPackets: 16, MemoryLimitBytes: 12000, Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 2000, Target: 10 * time.Microsecond, TUpdate: 20 * time.Microsecond, MaxBurst: 40 * time.Microsecond, ByteMode: true}},
	} {
		if testing.Short() && name != "default" && name != "small" {
			continue // -short: the defaults and the aggressive settings
		}
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, pieFactory(cfg)) })
	}
}

// FuzzCobaltQueue runs the shared contract fuzzer on a small, aggressive
// FQ-COBALT.
func FuzzCobaltQueue(f *testing.F) {
	aqmtest.Fuzz(f, cobaltFactory(CobaltConfig{Flows: 8, LimitPackets: 32, MemoryLimitBytes: 20000, QuantumBytes: 300,
		Control: cobalt.Control{Target: time.Microsecond, Interval: 30 * time.Microsecond, BlueThreshold: 100 * time.Microsecond}}))
}

// FuzzPIEQueue runs the shared contract fuzzer on a small, aggressive
// FQ-PIE.
func FuzzPIEQueue(f *testing.F) {
	aqmtest.Fuzz(f, pieFactory(PIEConfig{Flows: 8, LimitPackets: 32, MemoryLimitBytes: 20000, QuantumBytes: 300,
		Control: pie.Control{Target: 10 * time.Microsecond, TUpdate: 20 * time.Microsecond, MaxBurst: 30 * time.Microsecond, MeanPacketBytes: 100}}))
}
