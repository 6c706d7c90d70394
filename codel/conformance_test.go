package codel

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
)

// factory adapts cfg to the conformance kit. Its Reconfigure cycles through
// a microsecond target, the other ECN setting with Linux's count, and back
// to cfg.
func factory(cfg Config) aqmtest.Factory {
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[aqmtest.Payload]) (aqm.Queue[aqmtest.Payload], error) {
			return New(cfg, onDrop)
		},
		LimitPackets: max(cfg.LimitPackets, defaultLimitPackets*boolInt(cfg.LimitPackets == 0)),
		LimitBytes:   cfg.LimitBytes,
		Reconfigure: func(q aqm.Queue[aqmtest.Payload], i int) error {
			next := cfg
			switch i % 3 {
			case 0:
				next.Target, next.Interval = time.Microsecond, 10*time.Microsecond
			case 1:
				next.DisableECN = !cfg.DisableECN
				next.LinuxCount = true
			}
			return q.(*Queue[aqmtest.Payload]).Reconfigure(next)
		},
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// configs are the configurations the conformance kit checks: the
// defaults, each option, small limits, intervals of a few nanoseconds, and
// MTU guards of one to three packets.
var configs = []struct {
	name string
	cfg  Config
}{
	{"default", Config{}},
	{"no-ecn", Config{Control: Control{DisableECN: true}}},
	{"linux", Config{Control: Control{StrictDeadline: true, LinuxCount: true}}},
	{"ce", Config{Control: Control{CEThreshold: time.Millisecond, CEThresholdECT1Only: true}}},
	{"ce-linux", Config{Control: Control{CEThreshold: 500 * time.Microsecond, LinuxCount: true, StrictDeadline: true}}},
	{"small", Config{LimitPackets: 4, LimitBytes: 3000, Control: Control{MTUBytes: 1000, Target: time.Microsecond, Interval: 10 * time.Microsecond}}},
	{"limits", Config{LimitPackets: 50, LimitBytes: 30000, Control: Control{Target: time.Millisecond, Interval: 10 * time.Millisecond}}},
	{"tiny-interv", Config{Control: Control{Target: 1, Interval: 2, MTUBytes: 1}}},
	{"tiny-interv-long", Config{Control: Control{Target: 1, Interval: 2, MTUBytes: 1}, LimitPackets: 4000}},
	{"mtu2000-strict", Config{Control: Control{StrictDeadline: true, MTUBytes: 2000, Target: 2 * time.Millisecond, Interval: 10 * time.Millisecond}}},
	{"mtu3000-no-ecn", Config{Control: Control{MTUBytes: 3000, Target: 2 * time.Millisecond, Interval: 10 * time.Millisecond, DisableECN: true}}},
}

// nqbQueue offers every packet through EnqueueDSCP, with DSCP 45 for even
// hashes, so that the kit's checks (stray ECN bits, the ECN rules, drops,
// bursts, Reconfigure) cover the NQB selection bit that travels with
// queued packets. Its burst path is the loop of single calls; DequeueBatch
// is the queue's own.
type nqbQueue struct{ *Queue[aqmtest.Payload] }

func nqbDSCP(hash uint32) uint8 {
	if hash%2 == 0 {
		return aqm.DSCPNQB
	}
	return 0
}

func (q nqbQueue) Enqueue(p aqm.Packet[aqmtest.Payload], now aqm.Time) aqm.Verdict {
	return q.EnqueueDSCP(p, nqbDSCP(p.Hash), now)
}

func (q nqbQueue) EnqueueBatch(ps []aqm.Packet[aqmtest.Payload], vs []aqm.Verdict, now aqm.Time) int {
	return aqm.EnqueueLoop[aqmtest.Payload](q, ps, vs, now)
}

// nqbFactory is factory for a configuration with CEThresholdNQB, through
// nqbQueue. Its Reconfigure cycles through dropping the threshold, the
// option and the selector, and back to cfg, so that queued packets lose
// their selection under traffic.
func nqbFactory(cfg Config) aqmtest.Factory {
	f := factory(cfg)
	f.New = func(seed uint64, onDrop aqm.DropFunc[aqmtest.Payload]) (aqm.Queue[aqmtest.Payload], error) {
		q, err := New(cfg, onDrop)
		if err != nil {
			return nil, err
		}
		return nqbQueue{q}, nil
	}
	f.Reconfigure = func(q aqm.Queue[aqmtest.Payload], i int) error {
		next := cfg
		switch i % 4 {
		case 0:
			next.CEThreshold = 0
		case 1:
			next.CEThresholdNQB = false
		case 2:
			next.CEThresholdECT1Only = false
			next.Target, next.Interval = time.Microsecond, 10*time.Microsecond
		}
		return q.(nqbQueue).Reconfigure(next)
	}
	return f
}

// TestConformanceNQB protects the aqm.Queue contract, checked by the
// shared kit, with CEThresholdNQB and every packet offered through
// EnqueueDSCP: a roomy and a small, aggressive configuration.
func TestConformanceNQB(t *testing.T) {
	for name, cfg := range map[string]Config{
		"nqb":       {Control: Control{CEThreshold: time.Millisecond, CEThresholdECT1Only: true, CEThresholdNQB: true}},
		"nqb-small": {LimitPackets: 4, LimitBytes: 3000, Control: Control{MTUBytes: 1000, Target: time.Microsecond, Interval: 10 * time.Microsecond, CEThreshold: time.Microsecond, CEThresholdECT1Only: true, CEThresholdNQB: true, DisableECN: true}},
	} {
		t.Run(name, func(t *testing.T) { aqmtest.Run(t, nqbFactory(cfg)) })
	}
}

// TestConformance protects the aqm.Queue contract (ownership, counters,
// limits, ECN rules, FIFO order, odd input, time glitches, bursts,
// allocations, Reconfigure under traffic), checked by the shared kit, for
// every configuration.
func TestConformance(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) { aqmtest.Run(t, factory(c.cfg)) })
	}
}

// FuzzQueue runs the shared contract fuzzer on an aggressive CoDel.
func FuzzQueue(f *testing.F) {
	aqmtest.Fuzz(f, factory(Config{LimitPackets: 64, LimitBytes: 50000, Control: Control{Target: time.Microsecond, Interval: 20 * time.Microsecond}}))
}
