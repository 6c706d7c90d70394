//go:build race

package router

// raceEnabled is true under the race detector, which makes sync.Pool drop
// items at random, so that allocation counts mean nothing.
const raceEnabled = true
