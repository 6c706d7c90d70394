package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
)

func init() {
	register(AQM{Name: "codel", Desc: "CoDel (RFC 8289), target 5 ms, interval 100 ms, ECN", New: func(e Env) (aqm.Queue[uint64], error) {
		return codel.New(codel.Config{LimitPackets: e.BufferPackets, Control: codel.Control{MTUBytes: e.MSS}}, e.OnDrop)
	}})
}
