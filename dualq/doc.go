// Package dualq implements DualPI2, the DualQ Coupled Active Queue
// Management with a PI2 base AQM for L4S (RFC 9332), as Linux's
// sch_dualpi2 does (merged in Linux 6.17).
//
// # Algorithm
//
// Two FIFO queues share one link and one buffer. Enqueue classifies each
// packet on its ECN field: ECT(1) and CE go to the L4S queue (RFC 9331),
// everything else to the Classic queue ([Config.AnyECTToL4S] sends every
// ECN-capable packet to L4S; with [Config.NQBToL4S], [Queue.EnqueueDSCP]
// also sends DSCP 45, the NQB PHB of RFC 9956, there). Both queues share
// the packet limit and the byte ("memory") limit; a full buffer refuses
// the arrival.
//
// One PI controller, the base AQM, runs every Tupdate on the larger of the
// two head packets' current ages d:
//
//	p' ← clamp(p' + α·(d − target) + β·(d − d_prev), 0, 1)
//	p_C  = p'²           Classic drop/mark probability (the "square")
//	p_CL = min(k·p', 1)  coupled L4S mark probability
//
// Dequeue picks a queue with a credit-based weighted round robin that
// protects the Classic queue (it gets at least wc = 10 % of the bytes while
// both are backlogged), or optionally with a time-shifted FIFO, pops the
// head and applies the AQM to it:
//
//   - L4S: marked (CE) with probability max(p'_L, p_CL), where the native
//     L4S AQM p'_L is a step (1 if the packet's sojourn is above 1 ms) or
//     optionally RFC 9332's ramp;
//   - Classic: with probability p_C, Not-ECT packets are dropped and
//     ECN-capable ones marked.
//
// Overload: once p' ≥ 1/k (p_C ≥ 25 % with k = 2), p_CL would exceed 100 %
// and marks no longer control the senders, so ECN-capable packets of both
// queues are dropped with probability p_C ([aqm.DroppedOverload]) instead
// of marked, and every surviving L4S packet is marked.
// [Config.OverflowOnOverload] instead caps p' at 1/k.
//
// Dropped packets go to the DropFunc and Dequeue goes on to the next
// packet. No coupled or Classic AQM acts while less than 2 MTUs (and fewer
// than half of LimitPackets) remain queued after the pop (Linux's
// safeguard); the native L4S AQM still does. [Config.DropEnqueue] moves
// the coupled and Classic decisions to enqueue, where the safeguard looks
// at the backlog the arrival finds.
//
// # Parameters
//
//	parameter                  default      unit    reference
//	Target                     15 ms        time    RFC 9332 App. A, Linux
//	Tupdate                    16 ms        time    Linux (RFC formula: 15 ms)
//	Alpha                      0.16         Hz      Linux; RFC formula 0.1·Tupdate/RTT_max²
//	Beta                       3.2          Hz      Linux (RFC formula 0.3/RTT_max: 3.0)
//	CouplingFactor (k)         2            —       RFC 9332 §2.4, Linux
//	StepThreshold              1 ms         time    Linux step_thresh
//	StepThresholdPackets       off          packets Linux step_thresh in packets
//	StepMinQueuePackets        0            packets Linux min_qlen_step
//	RampMinThreshold, Range    800, 400 µs  time    RFC 9332 App. A (Ramp only)
//	ClassicProtectionPercent   10           %       Linux classic_protection
//	TimeShift                  50 ms        time    RFC example scheduler (TimeShiftedFIFO only)
//	LimitPackets               10000        packets Linux limit
//	LimitBytes                 limit·2·MTU  bytes   Linux memlimit default
//	MTUBytes                   1500         bytes   Linux psched_mtu
//
// The gains are Linux's defaults, chosen over the RFC formula's 0.15/3.0 at
// 15 ms because Tupdate is Linux's 16 ms and the gains are tuned together
// with it (α = 0.1·Tupdate/RTT_max² is exactly 0.16 at
// 16 ms and RTT_max = 100 ms), and because matching Linux makes behaviour
// comparable with deployed qdiscs. Internally α and β are rounded to the
// 2^-48-per-ns grid (α_fp = 45036, relative error < 10^-7).
//
// # Fixed point
//
// Decision probabilities are integers scaled to 2^32 (1<<32 = 100 %): a
// decision is one 32-bit random draw compared with the probability, and no
// draw is made when the probability is 0 or 100 %. p' is integrated on a
// 2^48 scale so the small per-update increments are not rounded away; the
// decision value is p'>>16. p_C is computed once per update with one
// uint64 multiply, (p'>>16)² >> 32, and p_CL with one multiply by k.
//
// # Differences from RFC 9332, Linux, ns-3 and DPDK
//
//   - Marks and drops are decided at dequeue by default (Linux
//     drop_dequeue; RFC pseudocode); [Config.DropEnqueue] decides the
//     coupled and Classic AQM at enqueue (Linux drop_enqueue), where a
//     mark shows as [aqm.Marked] and a drop is a refusal with its reason.
//   - Random rolls replace the RFC's deterministic recur() pacing, as in
//     Linux; unlike Linux, p_C is one roll against the precomputed p'²
//     instead of two rolls against p' (same probability, one draw).
//   - Overload starts at p' ≥ 1/k, the RFC's p_C ≥ p_Cmax; Linux tests
//     k·p' > 1 strictly. Only the boundary value p' = 1/k differs.
//   - The step marks strictly above the threshold (Linux), in time or,
//     with StepThresholdPackets, in L4S packets left behind (Linux's packet
//     step; 0 packets, which Linux accepts, is not available because zero
//     means "time"). The L4S mark probability is max(step, p_CL) as in the
//     RFC, which is what Linux's two separate checks amount to.
//     StepMinQueuePackets is Linux's min_qlen_step and also applies to
//     the ramp; the ramp applies RFC 9332's Th_len of one packet (counting
//     the packet being dequeued).
//   - ClassicProtectionPercent is Linux's classic_protection: 0 to 100 %,
//     with [ClassicProtectionNone] for 0 (zero means the default, 10 %).
//     A Reconfigure that changes MTU·(wc−wl) restarts the credit, as
//     Linux does when classic_protection is set.
//   - Not-ECT packets in the L4S queue (NQB packets) follow Linux's rules
//     for packets a tc filter classifies as L4S: dropped where an L4S
//     packet would be marked, and in overload dropped with p_C. There is
//     no LLLL class (L queue without AQM) and no tc filter or priority
//     classification.
//   - A Reconfigure that lowers a limit below what is queued drains the
//     queue down to it, Classic heads first and then L4S heads, as Linux
//     does since its 2026 fix; the drops run at the next Enqueue or
//     Dequeue, because the DropFunc runs only inside those.
//   - Configurations under which the AQM could never act are refused,
//     where Linux accepts them and behaves as a drop-tail queue:
//     LimitPackets below 2, LimitBytes below 4 MTUs (a full buffer minus
//     the departing packet could stay under the 2·MTU safeguard), a packet
//     step at or above LimitPackets−1 and a StepMinQueuePackets at or above
//     LimitPackets. The MTU is bounded by a quarter of the byte limit
//     rather than clamped to it. The safeguard also lets the AQM act once
//     half of LimitPackets are queued, so that a packet limit that binds
//     before 2 MTUs of small packets accumulate does not disable it.
//   - split_gso does not apply: aqm.Meta carries no GSO aggregates, so a
//     packet is whatever the caller enqueues.
//   - The PI runs on max(L head age, C head age) at the update instant
//     (RFC A.2, Linux), not on the Classic queue alone (RFC A.1, ns-3).
//   - The 2·MTU safeguard is Linux's, measured on the total backlog after
//     the pop; ns-3 uses the Classic bytes; the RFC has none.
//   - The byte limit counts packet sizes, not Linux's skb truesize, and
//     checks the arriving packet's size, not one MTU as the RFC does.
//   - The WRR credit returns to its initial value whenever a Dequeue
//     leaves both queues empty (Linux does so at the next dequeue of an
//     empty qdisc, which a driver always makes).
//   - ns-3's model has no overload rule and ns-3 uses a WDRR or TS-FIFO;
//     DPDK has no DualPI2.
//   - Known bugs of public ports are avoided and have regression tests:
//     p' never winds past 100 % (TestNoWindupPast100), ECT(0) is Classic
//     (TestClassification), p_C is p'² and not p'·p'_L
//     (TestPCoupledEveryUpdate), overload survivors in L4S are marked with
//     p_CL = 1 rather than p_C (TestOverloadFractions), and the drop path
//     cannot skip the empty-queue credit reset or leave a stale head
//     delay (TestDropDrainResetsCredit).
//
// # Time
//
// The queue never reads a clock: Enqueue and Dequeue take now. The PI
// update is lazy, never a timer: on each call, the updates due at
// first+n·Tupdate ≤ now run first, in order, each seeing the head ages at
// its own instant (exactly what a timer would have seen, since nothing
// arrived or left in between). An idle gap collapses to one saturating
// subtraction, a stalled backlog stops looping once p' is pinned at its
// cap, so a call costs at most a few thousand steps once per stall and one
// compare otherwise. Time that goes backwards counts as zero elapsed;
// delays are clamped to [0, 2^34 ns] and every time sum saturates, so jumps
// to the end of int64 time are safe.
//
// The schedule follows the time policy of package aqm: when the next
// update lies more than one Tupdate ahead of now (time ran backwards, or
// came back from a reading far in the future), it is re-anchored one
// Tupdate after now and no update runs, so one bad reading delays the
// controller by at most one Tupdate instead of freezing it. A reading far
// in the future is elapsed time like any other: with packets queued it
// drives p' to its cap, and the first updates back at normal time, which
// see the short real delays, bring it down again within a few Tupdates.
// Updates whose instant precedes both heads' arrival (possible only after
// time ran backwards) see a zero delay and collapse like an idle gap.
//
// # Seeds
//
// A zero [Config.Seed] draws a secret seed from crypto/rand, so the
// decisions cannot be predicted by senders; [Queue.Config] reports it. A
// fixed seed makes a queue reproducible: use one in tests and simulations.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. One that does not fit is refused. StepPackets, the no-step minimum and the two-
// packet safeguard count the L4S queue's segments, as Linux's split_gso (its default) makes
// them count.
//
// # Concurrency
//
// A Queue is not safe for concurrent use; [Queue.Detail] and
// [Queue.Stats] read plain fields.
package dualq
