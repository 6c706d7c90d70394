// Package cobalt implements COBALT, the AQM inside CAKE: CoDel's control
// law and BLUE's drop probability working together, so that a responsive
// flow sees CoDel's gentle signals while an unresponsive one is brought
// under control by BLUE (Høiland-Jørgensen, Täht and Morton, "Piece of
// CAKE", 2018; Linux sch_cake and ns-3's CobaltQueueDisc).
//
// [Controller] is the per-queue or per-flow state, a 32-byte value meant to
// be embedded in a fair queue's flow; [Queue] is a standalone COBALT FIFO.
//
// # Algorithm
//
// The CoDel half signals when the sojourn time of the head packet stays
// above Target: the first packet above target starts an episode and
// schedules a signal Interval later; while every packet stays above
// target, signals follow at
//
//	next += Interval / sqrt(count)
//
// and one packet below target ends the episode. A signal marks an
// ECN-capable packet CE and drops any other. Unlike RFC 8289 there is no
// "re-entry within 16 intervals" rule: after an episode, count decays by
// one per spacing, so a flow that comes back soon resumes near its old
// signal rate.
//
// The BLUE half keeps a drop probability p. It rises by BlueIncrement when
// the queue overflows (an arrival is refused) or a packet leaves after more
// than BlueThreshold, and falls by BlueDecrement when a dequeue finds the
// queue empty, each at most once per Target. Every packet the CoDel half
// does not drop, whether it delivers or marks it, is then dropped with
// probability p, ECN-capable or not: a sender that ignores marks gains
// nothing (Linux's "lack of ECN is deliberate"). A mark still counts as
// the CoDel half's signal when BLUE drops the packet.
//
// # Parameters
//
//	field            default   unit          source
//	Target           5 ms      time          CAKE, ns-3
//	Interval         100 ms    time          CAKE, ns-3
//	MTUTime          0 (off)   time          CAKE: 4·MTUTime guard on slow links
//	BlueIncrement    1/256     probability   CAKE, ns-3
//	BlueDecrement    1/4096    probability   CAKE, ns-3
//	BlueThreshold    400 ms    time          ns-3 (Linux: none)
//	LimitPackets     1000      packets
//	LimitBytes       0 (none)  bytes
//	Seed             0: secret random
//
// # Differences from Linux sch_cake and ns-3
//
//   - The control law's spacing is exact, floor(Interval/sqrt(count)) in
//     nanoseconds, computed when count changes; Linux and ns-3 cache a
//     Q0.32 reciprocal square root updated by one Newton step, and truncate
//     Interval to 32 bits of nanoseconds in the law (so intervals above
//     4.29 s wrap). Intervals up to an hour work here.
//   - A fresh controller spaces its first signal a full Interval after the
//     first packet above target; Linux's fresh flow slots start with a zero
//     reciprocal and can signal the second packet at once.
//   - BLUE's timestamp is a full 64-bit time; ns-3 stores it in 32 bits,
//     which stops its once-per-target guard working after 4.3 s.
//   - The ceiling BlueThreshold is on by default, as in ns-3; Linux CAKE
//     has none (set DisableBlueThreshold for Linux's behaviour).
//   - ECN marking is on by default, as in Linux CAKE; ns-3 defaults it off.
//     L4S (ECT(1)) packets are treated as any ECN-capable packet, as in
//     Linux; ns-3's UseL4s mode and CE threshold are not provided.
//   - The standalone queue raises BLUE on every refused arrival, as ns-3
//     does on tail drop.
//   - BLUE draws, as in Linux, only for packets the CoDel half has not
//     dropped, marked ones included; ns-3 draws for every packet once its
//     probability is above zero, so its random stream differs.
//   - Count decay while not dropping takes at most 64 steps per packet,
//     where Linux loops without a bound. A gap since the next signal time
//     of at least Interval·min(count, 2·sqrt(count)) covers every
//     remaining spacing, so count is reset to 0 at once, as Linux's loop
//     would leave it. A longer backlog is kept: the next signal time stays
//     in the past and the following packets (and empty-queue visits, one
//     step each) carry the decay on to the count Linux reaches. Only a
//     packet above target that arrives while decay is still owed (a link
//     that stalls twice in a row with packets standing) sees a higher
//     count than Linux would, and so signals sooner.
//   - One Dequeue drops at most 256 packets.
//   - Validate refuses limits with which COBALT could never signal, a
//     LimitPackets of 1 or a LimitBytes below two full-size packets
//     (2×1514 bytes), and a BlueIncrement below 2^-32, which rounds
//     to zero on BLUE's 2^32 scale so that BLUE would never rise. Linux CAKE
//     has no such parameters to set; ns-3 accepts them.
//   - Each [Controller] draws from its own stream, seeded by
//     [Controller.Init] (a [Queue] seeds it from Seed): a 32-bit PCG, so
//     that the controller stays 32 bytes. Linux draws from the kernel's
//     shared generator, ns-3 from one stream per queue disc.
//
// # Time
//
// Time follows the policy in package aqm: backward time counts as zero
// elapsed, and a next-signal time or BLUE timestamp left further ahead of
// now than it could have been scheduled (after a reading far in the
// future) is re-anchored at the next evaluation: the next-signal time,
// when more than Interval ahead, to now plus the current spacing; the
// BLUE timestamp to now.
//
// # Per-flow use
//
// [Control] holds one controller's settings, and [Control.Params] derives
// the [Params] that every controller of a queue shares. A [Controller] is
// fresh at zero and [Controller.Init] gives it its own random stream; its
// owner calls [Controller.Decide] for each packet leaving the head,
// [Controller.Empty] when it finds the queue empty and
// [Controller.Overflow] when one of the queue's packets hits a limit.
// Package fq's CobaltConfig embeds Control; package cake derives its tins'
// Params from its own Target and Interval and the shaper's rate.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. One that does not fit is refused and raises BLUE's probability as any refusal
// does. The MTUTime guard is a time and needs no change.
//
// # Concurrency
//
// A Queue and a Controller are not safe for concurrent use.
package cobalt
