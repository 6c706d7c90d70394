// Package aqmtest is the conformance kit for the [aqm.Queue] contract,
// modelled on testing/fstest.TestFS: an algorithm package hands [Run] a
// [Factory] and gets every check below as a subtest.
//
//	func TestConformance(t *testing.T) {
//		aqmtest.Run(t, aqmtest.Factory{
//			New: func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
//				return codel.New(codel.Config{Seed: seed, LimitPackets: 100}, onDrop)
//			},
//			LimitPackets: 100,
//		})
//	}
//
//	func FuzzQueue(f *testing.F) { aqmtest.Fuzz(f, factory) }
//
// What Run checks, on fixed traces, on odd input and on seeded random
// random traces:
//
//   - conservation: every accepted packet leaves exactly once, by Dequeue or
//     by the DropFunc, never duplicated and never lost, and only while the
//     queue is inside Enqueue or Dequeue; refused packets never reach the
//     DropFunc;
//   - GSO super-packets (checks GSO, GSOLimits, GSOBurst): traces whose
//     arrivals carry 1 to 44 segments, Size growing with them;
//     every count above is then in wire packets (a super-packet counts its
//     segments), no queue holds more segments than LimitPackets however
//     they are grouped, and a mark counts once per segment; [RunGSO] runs
//     these checks alone;
//   - Len, Backlog and Stats agree with what went in and out, in packets and
//     bytes, drop reason by drop reason;
//   - the declared limits are never exceeded, and a packet larger than the
//     byte limit is refused;
//   - FIFO order within a flow (same Hash, same arrival ECN);
//   - ECN: Not-ECT packets are never marked, marks only turn an ECN-capable
//     codepoint into CE, bits above the ECN field are cleared;
//   - Dequeue returns false only when the queue is empty, and a dequeued
//     packet carries the size, hash and enqueue time it went in with;
//   - odd input: size 0, sizes far above the limits, stray ECN bits, time
//     going backwards, huge time jumps, long idle gaps — no panic, and all of
//     the above still holds;
//   - determinism: two queues with the same seed decide the same on the same
//     trace;
//   - zero allocations per Enqueue and Dequeue in steady state, idle,
//     standing and overloaded, and per EnqueueBatch and DequeueBatch
//     (standing and overloaded) when the queue has a burst path;
//   - bursts (check Burst): two queues of the same seed play random traces
//     cut into bursts of 0 to 300 packets at one instant each, one through
//     [aqm.EnqueueBatch] and [aqm.DequeueBatch] (the queue's own burst path
//     when it implements [aqm.BatchQueue]), one through [aqm.EnqueueLoop]
//     and [aqm.DequeueLoop]; after every burst they must agree on every
//     verdict and accepted count, every dequeued packet (payload, size,
//     hash, ECN, Enqueued), the sequence of DropFunc calls, Len, Backlog,
//     Stats and, if the queue has a Detail method, its Detail. Verdict
//     slices shorter and longer than the burst are used too. A queue
//     without a burst path passes trivially, and Run logs that it has none;
//   - the time policy of package aqm (check ClockGlitch): two queues of the
//     same seed get light traffic (one 1000-byte Not-ECT packet every
//     10 ms, dequeued 1 ms later), then a second of overload, so that their
//     averages and probabilities are high; then one of them sees wrong
//     readings while it still holds the standing queue (a Dequeue that
//     empties it, or an Enqueue, at now+2^62 and at math.MaxInt64, and
//     alternating math.MinInt64+1 and math.MaxInt64 readings), and both
//     get light traffic again. After [Factory.GlitchRecovery] (default one
//     second) of correct time, every packet of the next second must fare
//     as on the control queue (refused, delivered or not); two seconds of
//     overload (twice the drain rate) must then find the queue's control
//     loop working (its mean length within 1.5 times the control queue's
//     plus 8 packets); no aqm.Time in the queue's Detail may then lie more
//     than a day ahead of the clock; and every packet, including those
//     taken at the wrong readings, must leave exactly once.
//
// Random traces are decoded from bytes by the same decoder that [Fuzz]
// uses (four bytes per step: kind, size or count, time step, flow and ECN),
// so a failing random trace and a fuzz crasher replay the same way. Both
// play every trace twice: op by op on one queue under all the checks above,
// and as bursts on two queues, burst path against loop. The seed of the
// random traces is fixed (so CI is deterministic) unless the environment
// variable AQMTEST_SEED sets another; every run logs the seed it used.
//
// # Differences and decisions
//
//   - Like testing/fstest.TestFS, one call checks everything; unlike it, each
//     check returns its violations as errors (at most eight per trace, each
//     naming the op index and instant), so the kit's own tests can prove that
//     deliberately broken queues are caught.
//   - The kit's payload is a uint64 sequence number: queues are generic, and
//     a unique number per offered packet is what makes loss, duplication and
//     reordering visible.
//   - Marks are checked as bounds, not equalities: a queue may count a "mark"
//     of a packet that already carried CE (Linux does), which no observer can
//     see in the packet.
//   - The ClockGlitch check compares packet by packet, because light
//     traffic is far below every target and a recovered queue makes no
//     random decision on it. If the control queue itself drops some of the
//     light traffic (a configuration whose thresholds it reaches, or
//     COBALT's BLUE, whose probability falls slowly after an overload),
//     only the number delivered is compared, within 5 % or three standard
//     deviations of the difference of two random counts, whichever is
//     larger.
//   - The overload phase of the ClockGlitch check compares mean queue
//     lengths with a margin, not decisions, because the glitch may have
//     shifted a queue's random stream; a control loop that a wrong reading
//     stopped lets the queue run to its limit, far outside the margin.
//   - The Burst check compares two queues rather than a queue and a model:
//     the loop of single calls is the definition of a burst, and the other
//     checks hold the single calls to the contract.
//   - Dequeue-time drops are allowed any number of times per call, but a
//     drain must finish within one Dequeue per queued packet (plus slack), so
//     a queue that keeps returning packets it does not hold is caught.
package aqmtest
