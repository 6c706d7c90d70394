package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/pie"
)

func init() {
	register(AQM{Name: "pie", Desc: "PIE (RFC 8033), target 15 ms, ECN below 10% probability", New: func(e Env) (aqm.Queue[uint64], error) {
		return pie.New(pie.Config{LimitPackets: e.BufferPackets, Control: pie.Control{MeanPacketBytes: e.MSS}, Seed: e.Seed}, e.OnDrop)
	}})
}
