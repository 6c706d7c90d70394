package bench

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fq"
)

// CoDel and FQ-CoDel with their defaults (target 5 ms): "standing" (1 ms
// sojourn) never drops, "congested" (100 ms) runs the drop path, with a
// limit well above the harness depth. Packets are Not-ECT, so signals are
// drops.
func init() {
	registerPacket(PacketAlgo{Name: "codel", New: func(sc Scenario) (aqm.Queue[uint64], error) {
		return codel.New[uint64](codel.Config{LimitPackets: 10000}, nil)
	}})
	registerPacket(PacketAlgo{Name: "fq-codel", FQ: true, New: func(sc Scenario) (aqm.Queue[uint64], error) {
		return fq.NewCoDel[uint64](fq.CoDelConfig{Seed: 1}, nil)
	}})
}
