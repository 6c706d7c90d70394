package aqmtest

import (
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Payload is the payload type the kit uses: a unique sequence number per
// offered packet, so that every packet can be traced in and out.
type Payload = uint64

// Factory describes a queue under test.
type Factory struct {
	// New builds a fresh, empty queue. Two queues built with the same
	// non-zero seed must make the same decisions on the same operations
	// (the kit never asks two queues with seed 0 to agree: a zero Seed
	// draws a secret one in aqmkit's queues); onDrop must be installed as
	// the queue's DropFunc.
	New func(seed uint64, onDrop aqm.DropFunc[Payload]) (aqm.Queue[Payload], error)
	// LimitPackets and LimitBytes are the hard limits the queue was built
	// with. The kit checks that Len and Backlog never exceed them, and that a
	// packet larger than LimitBytes is refused. Zero means none declared.
	LimitPackets int
	LimitBytes   int
	// Reconfigure, if set, applies the i-th of a cycle of new configurations
	// to a queue that New built (the kit calls it with i = 0, 1, 2, ... while
	// packets are queued, every few operations of a random trace). The check
	// "Reconfigure" then asserts that no packet is lost, duplicated or
	// reordered across reconfigurations. The declared limits must hold for
	// every configuration in the cycle.
	Reconfigure func(q aqm.Queue[Payload], i int) error
	// GlitchRecovery is how long the ClockGlitch check lets a queue recover
	// after a wrong clock reading before its light traffic must fare as on
	// a queue that never saw the glitch. Zero means
	// one second; the time policy of package aqm asks for at
	// most one of the queue's own periods or intervals.
	GlitchRecovery time.Duration
	// SkipClockGlitch turns the ClockGlitch check off (the check is logged
	// as skipped). It exists so that a queue known to break the time policy
	// can keep the rest of its conformance tests green while it is fixed;
	// leave it false.
	SkipClockGlitch bool
	// SkipGSO turns the GSO checks off (GSO, GSOLimits, GSOBurst, and the
	// GSO pass of Properties and Fuzz; the checks are logged as skipped).
	// It is for a model that holds a fixed number of packets whatever their
	// segments, such as a simulated device queue, and so cannot keep a
	// limit in wire packets; every queue of aqmkit leaves it false.
	SkipGSO bool
}
