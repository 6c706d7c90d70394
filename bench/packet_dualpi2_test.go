package bench

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

// DualPI2 with its defaults (15 ms target): the harness's Not-ECT packets
// all go to the Classic queue, so "standing" (~1 ms sojourn) never drops
// and "congested" (~100 ms) runs the p'^2 drop path at dequeue.
func init() {
	registerPacket(PacketAlgo{Name: "dualpi2", New: func(sc Scenario) (aqm.Queue[uint64], error) {
		return dualq.New[uint64](dualq.Config{}, nil)
	}})
}
