package cobalt

// Constants the external tests read.
const (
	DefaultInterval = defaultInterval
)
