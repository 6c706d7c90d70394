package sim

import "github.com/aqmkit/aqmkit/aqm"

func init() {
	register(AQM{
		Name: "fifo",
		Desc: "drop-tail FIFO (pfifo) with the scenario's buffer",
		New: func(e Env) (aqm.Queue[uint64], error) {
			return aqm.NewFIFO(aqm.FIFOConfig{LimitPackets: e.BufferPackets}, e.OnDrop)
		},
	})
}
