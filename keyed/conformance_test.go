package keyed_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/keyed"
)

// keyedFactory builds a keyed queue over CoDel queues keyed by the packet's
// Hash, with cfg.
func keyedFactory(cfg keyed.Config) aqmtest.Factory {
	return aqmtest.Factory{
		New: func(_ uint64, onDrop aqm.DropFunc[aqmtest.Payload]) (aqm.Queue[aqmtest.Payload], error) {
			return keyed.New(func(p aqm.Packet[aqmtest.Payload]) uint32 { return p.Hash },
				func(uint32) (aqm.Queue[aqmtest.Payload], error) {
					return codel.New(codel.Config{LimitPackets: 64}, onDrop)
				}, cfg)
		},
	}
}

// TestConformance protects the aqm.Queue contract of a keyed queue:
// conservation, order within a key, bursts equal to the loop, no
// allocation, the time policy. The kit drains queues at one instant, which
// a rate forbids: the rates are held by TestKeyRate and
// TestSharedRateFair. Fewer keys than the kit's flows would rebuild
// queues, which allocates by design: TestChurn covers that.
func TestConformance(t *testing.T) {
	for name, cfg := range map[string]keyed.Config{
		"plain":   {},
		"quantum": {QuantumBytes: 300},
	} {
		if testing.Short() && name != "plain" {
			continue // one configuration is enough for the short suite (it runs under -race in CI)
		}
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, keyedFactory(cfg)) })
	}
}
