package aqm

import "strconv"

// Verdict is the outcome of an Enqueue. The accepted verdicts are [Enqueued]
// and [Marked]; the others are drops with their reason. The same drop reasons
// are passed to a [DropFunc] when an already accepted packet is dropped.
type Verdict uint8

const (
	// Enqueued: the packet was accepted unchanged.
	Enqueued Verdict = iota
	// Marked: the packet was accepted and its ECN field set to CE instead of
	// being dropped.
	Marked
	// DroppedOverlimit: a hard limit (packets or bytes) was full, or the
	// packet alone exceeds the byte limit. For a queued packet handed to a
	// DropFunc, it was evicted to make room (head drop, fattest-flow drop).
	DroppedOverlimit
	// DroppedEarly: the AQM chose to drop the packet to signal congestion
	// (RED's early drop, PIE's drop, CoDel's dequeue drop).
	DroppedEarly
	// DroppedOverload: the AQM's overload protection dropped an ECN-capable
	// packet it would otherwise have marked, because marks are being ignored
	// or the probability is past its overload threshold.
	DroppedOverload
)

// Accepted reports whether the packet now belongs to the queue; any other
// verdict is a drop.
func (v Verdict) Accepted() bool { return v <= Marked }

// String returns a short lower-case name.
func (v Verdict) String() string {
	switch v {
	case Enqueued:
		return "enqueued"
	case Marked:
		return "marked"
	case DroppedOverlimit:
		return "dropped-overlimit"
	case DroppedEarly:
		return "dropped-early"
	case DroppedOverload:
		return "dropped-overload"
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// DropFunc receives each accepted packet that a queue drops instead of
// returning it from Dequeue, with the reason. It runs on the cold path only,
// synchronously inside Enqueue or Dequeue; it must not call back into the
// queue. A nil DropFunc is allowed: the packet is simply released.
type DropFunc[T any] func(p Packet[T], why Verdict)
