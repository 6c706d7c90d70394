package bench

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fq"
)

// SFQ has no AQM: it drops only at its limits. "idle" and "standing" use
// Linux's defaults (limit 127 > the standing depth of 100, so nothing is
// dropped). "congested" sets LimitPackets to the harness depth (100) with
// HeadDrop, so every arrival overflows and evicts the longest flow's oldest
// packet: the drop path runs once per packet and the evicted packet is the
// one that leaves. "flows=1024" holds 2048 packets in 1024 flows (default
// 1024 buckets, so some flows share a bucket).
func init() {
	registerPacket(PacketAlgo{Name: "sfq", FQ: true, New: func(sc Scenario) (aqm.Queue[uint64], error) {
		cfg := fq.SFQConfig{Seed: 1}
		switch sc.Name {
		case "congested":
			cfg.LimitPackets, cfg.HeadDrop = sc.Depth, true
		case "flows=1024":
			cfg.LimitPackets = 2 * sc.Depth
		}
		return fq.NewSFQ[uint64](cfg, nil)
	}})
}
