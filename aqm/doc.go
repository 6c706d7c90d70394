// Package aqm defines the contract that every queue in aqmkit implements:
// [Queue], the [Packet] it carries, the [Verdict] of an enqueue, the
// [Stats] it keeps, and the [Time] it runs on.
//
// The algorithms live in sibling packages (red, codel, pie, dualq, fq); this
// package holds only the shared types and the drop-tail baseline [FIFO], which
// is also the reference implementation of the contract.
//
// # Time
//
// A queue never reads a clock. Every per-packet method takes now, an [Time]
// in monotonic nanoseconds supplied by the caller (package clock has real and
// manual clocks and an adapter that reads one for you). Enqueue stamps the
// packet with now; the sojourn time of a packet that Dequeue returns is
// now minus [Packet.Enqueued]. The zero Time means "unset"; clocks never
// return it.
//
// Every queue and the front (package front) follow one policy for readings that
// are wrong, so that one bad reading costs at most a short, bounded upset:
//
//   - Time that goes backwards counts as zero elapsed time: sojourn times
//     (p.Enqueued.Since(now)), intervals and decays are clamped at zero
//     ([Time.Since]), and no average, probability or count moves back.
//   - A stored instant never stays ahead of the clock. An instant a queue
//     recorded (when it went idle, when its sojourn first rose above
//     target) or scheduled (the next periodic update, drop or re-key) that
//     lies further ahead of now than the span it was scheduled with is
//     re-anchored: a recorded instant becomes now, a scheduled one is
//     rescheduled one span after now. After a reading far in the future (a forward
//     glitch), the first correct reading therefore looks like time running
//     backwards and pulls every timer back, instead of leaving it parked in
//     the future.
//   - A forward jump is elapsed time like any other: periodic work due
//     during it is caught up in bounded, closed form (a long idle decays an
//     average to its floor at once), and the next schedule is taken from
//     now, not from the missed one.
//
// Package aqm/aqmtest checks every queue against this policy: after a
// single far-future reading, and after alternating extreme readings, light
// traffic at normal time must get through as it does on a fresh queue
// within a short recovery time.
//
// # Packet ownership
//
// A packet belongs to a queue only if Enqueue accepted it ([Verdict.Accepted]).
// A refused packet stays with the caller, who learns why from the Verdict.
// Every accepted packet leaves the queue exactly once: either Dequeue returns
// it, or the queue hands it to the [DropFunc] it was built with (a drop decided
// at dequeue time, as CoDel and PIE do, or the eviction of a queued packet to
// make room, as FQ-CoDel and head-drop FIFOs do). Package aqm/aqmtest checks
// this conservation rule for every queue.
//
// # ECN
//
// [Packet.ECN] carries the two ECN bits of the IP header. Enqueue clears any
// bits above those two. A queue marks a packet by setting its ECN field to
// [CE]; it never marks a [NotECT] packet (it drops it instead) and never turns
// one ECN-capable codepoint into another. A packet that Dequeue returns with
// ECN == CE whose header is not yet CE must have CE written into its header by
// the caller before it is sent:
//
//	p, ok := q.Dequeue(now)
//	if ok && p.ECN == aqm.CE {
//		setCE(p.Payload) // the caller's own header rewrite, with checksum fix-up
//	}
//
// # Payload
//
// The payload type T is opaque: queues copy it and never inspect or compare
// it. Queues clear the slots they pop, so a pointer payload does not outlive
// its packet. For the least GC work, use an integer index into your own buffer
// pool as T; a ring of integers is not scanned by the garbage collector.
//
// # Concurrency
//
// A Queue is not safe for concurrent use. Stats are plain counters read by the
// goroutine that owns the queue. Serialise access yourself, or use a
// concurrent front built for it.
//
// # Differences and decisions
//
//   - Time is an int64 of nanoseconds, not time.Time: 8 bytes against 24, and
//     no clock read is hidden in the hot path (two time.Now calls per packet
//     cost more than a whole AQM decision).
//   - Packet is passed by value (32 bytes for an 8-byte payload); a pointer
//     would escape through the interface and allocate.
//   - Packet groups Size, Hash and ECN in the embedded [Meta], so that it
//     has three fields and the compiler passes it in registers (see
//     docs/guide/performance.md). The fields read and set as p.Size, p.Hash and
//     p.ECN; only composite literals name Meta.
//   - Drops of refused packets are reported by the Verdict only, never through
//     DropFunc, so the caller sees each refused packet exactly once.
//   - Linux counts a "mark" on a packet that already carried CE; so do we
//     ([Stats.Marked]), which is why marks are not recoverable from the headers
//     alone.
package aqm
