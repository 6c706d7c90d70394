package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fq"
)

func init() {
	register(AQM{Name: "fq-codel", Desc: "FQ-CoDel (RFC 8290), Linux defaults: 1024 flows, quantum 1514, target 5 ms, ECN", New: func(e Env) (aqm.Queue[uint64], error) {
		return fq.NewCoDel(fq.CoDelConfig{LimitPackets: e.BufferPackets, Control: codel.Control{MTUBytes: e.MSS}, Seed: e.Seed}, e.OnDrop)
	}})
}
