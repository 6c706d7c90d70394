package keyed

// Test-only views of unexported parts of the API.

// Keys returns the number of keys that have a queue.
func (k *Queue[K, T]) Keys() int { return k.live }

// The errors for misuse at construction, and constants the tests check
// against.
var (
	ErrNilKey   = errNilKey
	ErrNilQueue = errNilQueue
)

const (
	MaxKeys             = maxKeys
	DefaultQuantumBytes = defaultQuantumBytes
)
