package dualq

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
