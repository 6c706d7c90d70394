// Package front makes an [aqm.Queue] safe for many producers and one
// consumer: producers call [Front.Enqueue] from any goroutine, and the
// consumer blocks in [Front.Dequeue] until a packet is ready, its context
// ends, or the front is closed.
//
// # Design
//
// One mutex guards the queue; each call takes it once and reads the clock
// once, under the lock, so the queue sees instants that never go backwards.
// A blocked consumer waits on a one-slot channel that producers fill, without
// blocking, when they add to an empty queue; it re-checks the queue under the
// lock after every wake-up, so no arrival is lost between its check and its
// wait. The front starts no goroutines and holds no timers: a consumer
// blocked in Dequeue is the only goroutine it can hold, and cancelling its
// context or calling [Front.Close] releases it.
//
// # Differences from a channel
//
// A buffered channel is a drop-tail FIFO without sojourn times. A Front
// keeps the queue's policy (CoDel's dequeue drops, FQ's flow isolation) and
// its counters, and lets the consumer take a batch at one clock reading with
// [Front.DequeueBatch]. Unlike a channel it has no Close-then-panic: Enqueue
// after [Front.Close] is refused with a verdict.
//
// # Time
//
// The front reads its [clock.Clock] once per Enqueue, once per TryDequeue, and
// once per attempt of a blocking Dequeue or DequeueBatch (so once per batch),
// never once per packet inside the queue. The clock must be safe for
// concurrent use ([clock.Mono] is); [clock.Manual] is not.
//
// # Concurrency
//
// All methods are safe for concurrent use. Several consumers are allowed and
// each packet still goes to exactly one of them, but a front is meant for
// one. The queue's DropFunc runs under the front's lock, inside Enqueue or
// Dequeue of whichever goroutine triggered the drop; it must not call the
// front.
package front
