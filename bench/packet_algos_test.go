package bench

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/aqmkit/aqmkit/red"
	"github.com/aqmkit/aqmkit/sfq"
)

// The algorithms of the BenchmarkPacket table, each configured so that
// every scenario means the same thing for it (TestScenarioMeaning checks).
func init() {
	registerRed()
	registerCodel()
	registerSfq()
	registerFQFamily()
	registerPie()
	registerDualpi2()
	registerCobalt()
	registerCake()
}

// redConfig sets RED's thresholds for a scenario: above the 100-packet
// standing queue for "idle" and "standing" (no early drops), around it for
// "congested" (min 50, max 150: the average settles near 100, p_b ≈ max_p/2,
// so the signal path runs). w_q = 0.002 (Floyd and Jacobson's value) so the
// average reaches the standing queue within the warm-up.
func redConfig(sc Scenario, gentle, adaptive bool) red.Config {
	c := red.Config{MinThreshold: 150, MaxThreshold: 450, Weight: 0.002, LimitPackets: 10000,
		Gentle: gentle, Adaptive: adaptive, Seed: 1}
	if sc.Name == "congested" {
		c.MinThreshold, c.MaxThreshold = 50, 150
	}
	return c
}

func registerRed() {
	for _, v := range []struct {
		name             string
		gentle, adaptive bool
	}{{"red", false, false}, {"gentle-red", true, false}, {"ared", true, true}} {
		registerPacket(PacketAlgo{Name: v.name, New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			return red.New(redConfig(sc, v.gentle, v.adaptive), onDrop)
		}})
	}
}

// CoDel and FQ-CoDel with their defaults (target 5 ms): "standing" (1 ms
// sojourn) never drops, "congested" (100 ms) runs the drop path, with a
// limit well above the harness depth. Packets are Not-ECT, so signals are
// drops.
func registerCodel() {
	registerPacket(PacketAlgo{Name: "codel", New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return codel.New(codel.Config{LimitPackets: 10000}, onDrop)
	}})
	registerPacket(PacketAlgo{Name: "fq-codel", FQ: true, New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return fq.NewCoDel(fq.CoDelConfig{Seed: 1}, onDrop)
	}})
}

// SFQ has no AQM: it drops only at its limits. "idle" and "standing" use
// Linux's defaults but limits (whole queue and per flow) of 256 packets, above the standing depth of
// 100 plus the longest burst of BenchmarkBurst (128), so nothing is
// dropped. "congested" sets LimitPackets to the harness depth (100) with
// HeadDrop, so every arrival overflows and evicts the longest flow's oldest
// packet: the drop path runs once per packet and the evicted packet is the
// one that leaves. "flows=1024" holds 2048 packets in 1024 flows (default
// 1024 buckets, so some flows share a bucket).
func registerSfq() {
	registerPacket(PacketAlgo{Name: "sfq", FQ: true, New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		cfg := sfq.Config{Seed: 1, LimitPackets: 256, DepthPackets: 256}
		switch sc.Name {
		case "congested":
			cfg.LimitPackets, cfg.HeadDrop = sc.Depth, true
		case "flows=1024":
			cfg.LimitPackets = 2 * sc.Depth
		}
		return sfq.New(cfg, onDrop)
	}})
}

// FQ-COBALT and FQ-PIE with their defaults: "standing" (about 1 ms of
// sojourn per flow) stays under COBALT's 5 ms target and its 400 ms BLUE
// ceiling, and under PIE's half-target safeguard; "congested" (about
// 100 ms) runs COBALT's CoDel drops at dequeue and PIE's early drops at
// enqueue. Packets are Not-ECT, so signals are drops.
func registerFQFamily() {
	registerPacket(PacketAlgo{Name: "fq-cobalt", FQ: true, New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return fq.NewCobalt(fq.CobaltConfig{Seed: 1}, onDrop)
	}})
	registerPacket(PacketAlgo{Name: "fq-pie", FQ: true, New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return fq.NewPIE(fq.PIEConfig{Seed: 1}, onDrop)
	}})
}

// PIE with its RFC 8033 defaults (15 ms target, timestamps): "standing"
// (about 1 ms of delay) stays under the half-target safeguard, so no AQM
// drops; "congested" (about 100 ms) drives the probability up and runs the
// drop path.
func registerPie() {
	registerPacket(PacketAlgo{Name: "pie", New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return pie.New(pie.Config{LimitPackets: 10000, Seed: 1}, onDrop)
	}})
}

// DualPI2 with its defaults (15 ms target): the harness's Not-ECT packets
// all go to the Classic queue, so "standing" (~1 ms sojourn) never drops
// and "congested" (~100 ms) runs the p'^2 drop path at dequeue.
func registerDualpi2() {
	registerPacket(PacketAlgo{Name: "dualpi2", New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return dualq.New(dualq.Config{Seed: 1}, onDrop)
	}})
}

// COBALT with its defaults (CoDel's 5 ms target and 100 ms interval, BLUE
// above 400 ms or on overflow) and a limit well above the harness depth:
// "standing" (~1 ms sojourn) never drops, "congested" (~100 ms) runs
// CoDel's drop path and stays below BLUE's ceiling.
func registerCobalt() {
	registerPacket(PacketAlgo{Name: "cobalt", New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return cobalt.New(cobalt.Config{LimitPackets: 10000, Seed: 1}, onDrop)
	}})
}

// CAKE unshaped (no Rate, so no shaper holds packets back), one best-effort
// tin, a queue per flow keyed by p.Hash (no host fairness, which needs host
// hashes the harness does not have), COBALT per flow with its 5 ms target:
// like FQ-CoDel, "standing" never drops, "congested" runs COBALT's drop
// path, and "flows=1024" spreads 1024 flows over its 8-way set-associative
// table (1024 sets) without collisions worth a drop.
func registerCake() {
	registerPacket(PacketAlgo{Name: "cake", FQ: true, New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return cake.New(cake.Config{TinMode: cake.BestEffort, FlowMode: cake.Flows, Seed: 1}, onDrop)
	}})
}

// TestScenarioMeaning protects the benchmark table's claims: with each
// algorithm's registered configuration, "idle" and "standing" never signal
// (no AQM drop or mark), and "congested" runs the drop or mark path on a
// real share of packets; and the harness's own count of queued packets
// (verdicts, Dequeues and DropFunc calls) stays equal to Len. Without it a
// row could silently measure the wrong path or the wrong depth.
func TestScenarioMeaning(t *testing.T) {
	for _, name := range algoOrder {
		a, ok := packetAlgos[name]
		if !ok {
			t.Fatalf("%s is in the table's order but not registered", name)
		}
		for _, sc := range scenarios {
			if sc.FQOnly && !a.FQ {
				continue
			}
			d, err := newDriver(a, sc)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, sc.Name, err)
			}
			const n = 30000
			s, err := drive(d, n)
			if err != nil {
				t.Errorf("%s/%s: %v", name, sc.Name, err)
			}
			signals := s.Dropped().Packets + s.Marked.Packets
			switch sc.Name {
			case "idle", "standing":
				if signals != 0 {
					t.Errorf("%s/%s: %d of %d packets signalled, want none", name, sc.Name, signals, n)
				}
			case "congested":
				if name != "fifo" && signals < n/200 {
					t.Errorf("%s/%s: %d of %d packets signalled, want the signal path to run (at least 0.5%%)", name, sc.Name, signals, n)
				}
			case "flows=1024":
				if signals > n/100 {
					t.Errorf("%s/%s: %d of %d packets signalled, want at most 1%% (bucket collisions only)", name, sc.Name, signals, n)
				}
			}
		}
	}
}
