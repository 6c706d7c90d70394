package fifo

import (
	"iter"

	"github.com/aqmkit/aqmkit/aqm"
)

// Constants the external tests read.
const (
	DefaultLimitPackets = defaultLimitPackets
	MaxLimitPackets     = maxLimitPackets
)

// Metrics lets the external tests list d's own metrics.
func (d Detail) Metrics() iter.Seq[aqm.Metric] { return d.metrics() }
