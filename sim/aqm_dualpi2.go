package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

func init() {
	register(AQM{Name: "dualpi2", Desc: "DualPI2 (RFC 9332), Linux defaults: target 15 ms, step 1 ms, k=2", New: func(e Env) (aqm.Queue[uint64], error) {
		return dualq.New(dualq.Config{LimitPackets: e.BufferPackets, MTUBytes: e.MSS, Seed: e.Seed}, e.OnDrop)
	}})
}
