package pie_test

import (
	"fmt"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/pie"
)

// variants are the configurations the conformance kit checks: packet and
// byte mode, both delay estimators, derandomization, and small limits.
func variants() []struct {
	name string
	cfg  pie.Config
} {
	var vs []struct {
		name string
		cfg  pie.Config
	}
	for _, bm := range []bool{false, true} {
		for _, rate := range []bool{false, true} {
			vs = append(vs, struct {
				name string
				cfg  pie.Config
			}{fmt.Sprintf("bytemode=%v/rate=%v", bm, rate), pie.Config{Control: pie.Control{ByteMode: bm, RateEstimator: rate}, LimitPackets: 200, LimitBytes: 200 * 1500}})
		}
	}
	vs = append(vs,
		struct {
			name string
			cfg  pie.Config
		}{"derandomize", pie.Config{Control: pie.Control{Derandomize: true}, LimitPackets: 100}},
		struct {
			name string
			cfg  pie.Config
		}{"small-limits", pie.Config{LimitPackets: 12, LimitBytes: 8000, Control: pie.Control{MeanPacketBytes: 1000, DequeueThresholdBytes: 2000, MaxBurst: 1, TUpdate: 1000, Target: 1000, HighDelayBoost: true}}},
		struct {
			name string
			cfg  pie.Config
		}{"no-ecn-fast", pie.Config{Control: pie.Control{DisableECN: true, DisableBurstAllowance: true, TUpdate: 1000, Target: 2000}, LimitPackets: 50}},
	)
	return vs
}

func factory(cfg pie.Config) aqmtest.Factory {
	lb := cfg.LimitBytes
	lp := cfg.LimitPackets
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[aqmtest.Payload]) (aqm.Queue[aqmtest.Payload], error) {
			c := cfg
			c.Seed = seed
			return pie.New(c, onDrop)
		},
		LimitPackets: lp,
		LimitBytes:   lb,
		// A cycle of configurations within the declared limits: smaller
		// limits, the other estimator and mode, other timing.
		Reconfigure: func(q aqm.Queue[aqmtest.Payload], i int) error {
			c := cfg
			c.Seed = uint64(i % 2)
			c.LimitPackets = max(1, lp/(1+i%3))
			if lb > 0 {
				c.LimitBytes = max(1, lb/(1+i%2))
			}
			c.RateEstimator = cfg.RateEstimator != (i%2 == 1)
			c.ByteMode = cfg.ByteMode != (i%4 >= 2)
			if i%3 == 2 {
				c.Target, c.TUpdate = 0, 0
			}
			return q.(*pie.Queue[aqmtest.Payload]).Reconfigure(c)
		},
	}
}

// TestConformance protects the aqm.Queue contract (ownership, counters,
// limits, ECN rules, FIFO order, determinism, odd input) for every variant.
func TestConformance(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) { aqmtest.Run(t, factory(v.cfg)) })
	}
}

// FuzzQueue protects the contract on fuzzer-chosen operation sequences
// (timestamps, derandomization and small limits in one configuration).
func FuzzQueue(f *testing.F) {
	aqmtest.Fuzz(f, factory(pie.Config{Control: pie.Control{Derandomize: true, TUpdate: 100000, Target: 200000}, LimitPackets: 64, LimitBytes: 64 * 1500}))
}
