package dualq

import (
	"iter"

	"github.com/aqmkit/aqmkit/aqm"
)

// Constants the external tests read.
const (
	DefaultAlpha                    = defaultAlpha
	DefaultBeta                     = defaultBeta
	DefaultClassicProtectionPercent = defaultClassicProtectionPercent
	DefaultCouplingFactor           = defaultCouplingFactor
	DefaultLimitPackets             = defaultLimitPackets
	DefaultMTUBytes                 = defaultMTUBytes
	DefaultRampMinThreshold         = defaultRampMinThreshold
	DefaultRampRange                = defaultRampRange
	DefaultStepThreshold            = defaultStepThreshold
	DefaultTarget                   = defaultTarget
	DefaultTimeShift                = defaultTimeShift
	DefaultTupdate                  = defaultTupdate
)

// Metrics lets the external tests list d's own metrics.
func (d Detail) Metrics() iter.Seq[aqm.Metric] { return d.metrics() }
