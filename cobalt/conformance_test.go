package cobalt

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
)

func factory(cfg Config) aqmtest.Factory {
	d := cfg.withDefaults()
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[aqmtest.Payload]) (aqm.Queue[aqmtest.Payload], error) {
			c := cfg
			c.Seed = seed + 1
			return New(c, onDrop)
		},
		LimitPackets: d.LimitPackets,
		LimitBytes:   d.LimitBytes,
		Reconfigure: func(q aqm.Queue[aqmtest.Payload], i int) error {
			c := cfg
			c.Target = time.Duration(1+i%7) * time.Millisecond
			c.DisableECN = i%2 == 1
			return q.(*Queue[aqmtest.Payload]).Reconfigure(c)
		},
	}
}

// TestConformance protects the shared contract (conservation, Stats, limits,
// order, ECN rules, odd input, time glitches, bursts, zero allocations) for
// COBALT with default, small and byte-limited configurations.
func TestConformance(t *testing.T) {
	for name, cfg := range map[string]Config{
		"default": {},
		"small":   {LimitPackets: 16, Control: Control{Target: time.Millisecond, Interval: 10 * time.Millisecond}},
		"bytes":   {LimitPackets: 64, LimitBytes: 20000, Control: Control{DisableECN: true}},
		"guarded": {Control: Control{MTUTime: 2 * time.Millisecond, DisableBlueThreshold: true}},
	} {
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, factory(cfg)) })
	}
}

// FuzzQueue drives COBALT with fuzzed traces through the kit's checks.
func FuzzQueue(f *testing.F) {
	aqmtest.Fuzz(f, factory(Config{LimitPackets: 32, Control: Control{Target: time.Millisecond, Interval: 20 * time.Millisecond}}))
}
