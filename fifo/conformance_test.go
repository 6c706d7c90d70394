package fifo_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/fifo"
)

// configs are the configurations the conformance kit checks: packet and
// byte limits, tail and head drop, default and small limits.
var configs = []struct {
	name string
	cfg  fifo.Config
}{
	{"pfifo-default", fifo.Config{}},
	{"pfifo-small", fifo.Config{LimitPackets: 5}},
	{"pfifo-long", fifo.Config{LimitPackets: 300}},
	{"bfifo", fifo.Config{LimitPackets: 100, LimitBytes: 20000}},
	{"head-drop", fifo.Config{LimitPackets: 8, HeadDrop: true}},
	{"head-drop-bytes", fifo.Config{LimitPackets: 50, LimitBytes: 10000, HeadDrop: true}},
}

// factory adapts cfg to the conformance kit. Its Reconfigure cycles through
// smaller limits, the other drop end and back to cfg, within cfg's limits.
func factory(cfg fifo.Config) aqmtest.Factory {
	limit := cfg.LimitPackets
	if limit == 0 {
		limit = fifo.DefaultLimitPackets
	}
	return aqmtest.Factory{
		New: func(_ uint64, onDrop aqm.DropFunc[aqmtest.Payload]) (aqm.Queue[aqmtest.Payload], error) {
			return fifo.New(cfg, onDrop)
		},
		LimitPackets: limit,
		LimitBytes:   cfg.LimitBytes,
		Reconfigure: func(q aqm.Queue[aqmtest.Payload], i int) error {
			c := cfg
			c.LimitPackets = max(1, limit/(1+i%3))
			if cfg.LimitBytes > 0 {
				c.LimitBytes = max(1, cfg.LimitBytes/(1+i%2))
			}
			c.HeadDrop = cfg.HeadDrop != (i%4 >= 2)
			return q.(*fifo.Queue[aqmtest.Payload]).Reconfigure(c)
		},
	}
}

// TestConformance protects the aqm.Queue contract (ownership, counters,
// limits, ECN rules, FIFO order, odd input, bursts, allocations and
// Reconfigure under traffic) in every mode.
func TestConformance(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) { aqmtest.Run(t, factory(c.cfg)) })
	}
}

// FuzzQueue protects the contract on fuzzer-chosen traces, in head-drop
// byte mode (the mode with the most paths).
func FuzzQueue(f *testing.F) { aqmtest.Fuzz(f, factory(configs[5].cfg)) }
