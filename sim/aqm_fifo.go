package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
)

func init() {
	register(AQM{
		Name: "fifo",
		Desc: "drop-tail FIFO (pfifo) with the scenario's buffer",
		New: func(e Env) (aqm.Queue[uint64], error) {
			return fifo.New(fifo.Config{LimitPackets: e.BufferPackets}, e.OnDrop)
		},
	})
}
