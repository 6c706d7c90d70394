package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/sfq"
)

func init() {
	register(AQM{Name: "sfq", Desc: "SFQ (Linux sch_sfq defaults: 1024 buckets, depth 127), the scenario's buffer", New: func(e Env) (aqm.Queue[uint64], error) {
		return sfq.New(sfq.Config{LimitPackets: e.BufferPackets, Seed: e.Seed}, e.OnDrop)
	}})
}
