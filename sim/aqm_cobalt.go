package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
)

func init() {
	register(AQM{Name: "cobalt", Desc: "COBALT (CoDel + BLUE, as in CAKE and ns-3), defaults: target 5 ms, interval 100 ms, BLUE above 400 ms or on overflow, ECN", New: func(e Env) (aqm.Queue[uint64], error) {
		return cobalt.New(cobalt.Config{LimitPackets: e.BufferPackets, Seed: e.Seed}, e.OnDrop)
	}})
}
