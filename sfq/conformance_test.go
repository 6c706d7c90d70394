package sfq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
)

// configs are the configurations the conformance kit checks: Linux's
// defaults, head drop, tiny and single-packet limits, a byte limit,
// perturbation, a quantum far below the packet sizes, and long queues with
// few buckets, where bursts run inline.
var configs = []struct {
	name string
	cfg  Config
}{
	{"default", Config{}},
	{"headdrop", Config{HeadDrop: true}},
	{"small", Config{LimitPackets: 4, DepthPackets: 2, Divisor: 3}},
	{"limit1", Config{LimitPackets: 1}},
	{"bytes", Config{LimitPackets: 64, LimitBytes: 6000, HeadDrop: true}},
	{"perturb", Config{LimitPackets: 32, PerturbPeriod: time.Millisecond}},
	{"tiny-quantum", Config{LimitPackets: 16, QuantumBytes: 1}},
	{"long", Config{LimitPackets: 600, Divisor: 64, QuantumBytes: 300}},
	{"long-bytes", Config{LimitPackets: 300, LimitBytes: 20000, DepthPackets: 20, Divisor: 32, PerturbPeriod: 5 * time.Millisecond}},
}

// factory adapts cfg to the conformance kit. Its Reconfigure cycles within
// cfg's limits: smaller limits and depth, the other drop end, another
// divisor (which re-classifies every queued packet), a perturbation period,
// and back to cfg.
func factory(cfg Config) aqmtest.Factory {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	v := cfg.withDefaults()
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[aqmtest.Payload]) (aqm.Queue[aqmtest.Payload], error) {
			c := cfg
			c.Seed = seed
			return New(c, onDrop)
		},
		LimitPackets: v.LimitPackets,
		LimitBytes:   v.LimitBytes,
		Reconfigure: func(q aqm.Queue[aqmtest.Payload], i int) error {
			c := cfg
			switch i % 4 {
			case 1:
				c.LimitPackets = max(1, v.LimitPackets/2)
				c.DepthPackets = max(1, v.DepthPackets/3)
				c.HeadDrop = !cfg.HeadDrop
			case 2:
				c.Divisor = 1 + (v.Divisor*3)%97
				c.QuantumBytes = 1 + i%1500
			case 3:
				c.PerturbPeriod = time.Duration(1+i%3) * time.Millisecond
				if v.LimitBytes > 0 {
					c.LimitBytes = max(1, v.LimitBytes/2)
				}
			}
			return q.(*Queue[aqmtest.Payload]).Reconfigure(c)
		},
	}
}

// cycle is a factory whose Reconfigure crosses limits, divisors, quanta and
// perturbation in a fixed cycle, the largest packet limit first.
func cycle() aqmtest.Factory {
	cycle := []Config{
		{LimitPackets: 64},
		{LimitPackets: 8, DepthPackets: 3, Divisor: 4, HeadDrop: true},
		{LimitPackets: 32, QuantumBytes: 300, PerturbPeriod: time.Millisecond},
		{LimitPackets: 64, LimitBytes: 20000, Divisor: 16},
	}
	f := factory(cycle[0])
	f.LimitPackets, f.LimitBytes = 64, 0
	f.Reconfigure = func(q aqm.Queue[aqmtest.Payload], i int) error {
		return q.(*Queue[aqmtest.Payload]).Reconfigure(cycle[i%len(cycle)])
	}
	return f
}

// TestConformance protects the aqm.Queue contract (ownership, counters,
// limits, FIFO order within a flow, determinism, odd input, bursts,
// allocations, Reconfigure under traffic) in every mode, and Reconfigure
// across a fixed cycle of configurations.
func TestConformance(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) { aqmtest.Run(t, factory(c.cfg)) })
	}
	t.Run("cycle", func(t *testing.T) { aqmtest.Run(t, cycle()) })
}

// FuzzQueue protects the contract on fuzzer-chosen traces, on a small SFQ
// that exercises every drop path.
func FuzzQueue(f *testing.F) {
	aqmtest.Fuzz(f, factory(Config{LimitPackets: 8, DepthPackets: 3, Divisor: 4, LimitBytes: 9000,
		QuantumBytes: 700, HeadDrop: true, PerturbPeriod: time.Millisecond}))
}
