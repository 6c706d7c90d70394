package fifo

// Constants the external tests read.
const (
	DefaultLimitPackets = defaultLimitPackets
	MaxLimitPackets     = maxLimitPackets
)
