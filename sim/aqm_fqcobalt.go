package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/pie"
)

func init() {
	register(AQM{Name: "fq-cobalt", Desc: "FQ-COBALT (ns-3 FqCobalt): FQ-CoDel's scheduler with COBALT per flow, 1024 flows, quantum 1514, target 5 ms, ECN", New: func(e Env) (aqm.Queue[uint64], error) {
		return fq.NewCobalt(fq.CobaltConfig{LimitPackets: e.BufferPackets, Seed: e.Seed}, e.OnDrop)
	}})
	register(AQM{Name: "fq-pie", Desc: "FQ-PIE (Linux fq_pie): FQ-CoDel's scheduler with PIE per flow, 1024 flows, target 15 ms", New: func(e Env) (aqm.Queue[uint64], error) {
		return fq.NewPIE(fq.PIEConfig{LimitPackets: e.BufferPackets, Control: pie.Control{MeanPacketBytes: e.MSS}, Seed: e.Seed}, e.OnDrop)
	}})
}
