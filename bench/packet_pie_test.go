package bench

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/pie"
)

// PIE with its RFC 8033 defaults (15 ms target, timestamps): "standing"
// (about 1 ms of delay) stays under the half-target safeguard, so no AQM
// drops; "congested" (about 100 ms) drives the probability up and runs the
// drop path.
func init() {
	registerPacket(PacketAlgo{Name: "pie", New: func(sc Scenario) (aqm.Queue[uint64], error) {
		return pie.New[uint64](pie.Config{LimitPackets: 10000, Seed: 1}, nil)
	}})
}
