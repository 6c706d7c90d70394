// Package codel implements CoDel, Controlled Delay active queue management
// (RFC 8289), as a queue ([Queue]) and as a small state machine
// ([Controller]) that fair queues embed once per flow (package fq's
// FQ-CoDel).
//
// # Algorithm
//
// CoDel judges the queue by the sojourn time of the packets it sends. At each
// dequeue it looks at the head packet:
//
//	sojourn = now − enqueued
//	above   = sojourn ≥ Target and more than MTUBytes remain queued
//
// When the sojourn time first goes above Target, CoDel sets a deadline one
// Interval later; if it is still above at the deadline (now ≥ deadline), the
// minimum over the last Interval was above Target: CoDel drops the packet and
// enters the dropping state with count = 1 (or, if the previous episode ended
// less than 16 intervals ago, count = the number of drops that episode added,
// the "re-entry" rule). In the dropping state it drops again at
//
//	drop_next = drop_next + Interval/√count
//
// raising count by one each time the packet after a drop is still above
// target, until a packet leaves below target (or less than an MTU is left):
// then it leaves the dropping state. A late dequeue drops every packet whose
// scheduled time has passed, so the rate catches up. ECN-capable packets are
// marked CE and sent instead of dropped, one per Dequeue. Drops count in
// [aqm.Stats.DroppedEarly] and reach the DropFunc.
//
// Interval/√count is computed without a division or square root: the
// Controller caches 1/√count as a Q0.32 fraction, updated by Newton's
// iteration y ← y·(3 − count·y²)/2 whenever count changes (from the previous
// value when count rises by one, from a seed 2^−⌈log₂count⌉/2 otherwise), and
// the spacing is Interval·y/2^32 corrected to the exact floor of
// Interval/√count in nanoseconds.
//
// With CEThreshold set, every ECN-capable packet (or only ECT(1) and CE ones,
// with CEThresholdECT1Only) that leaves with a sojourn time above the
// threshold is marked CE as well: the shallow, L4S-style signal of Linux's
// ce_threshold. These marks are counted in [Detail].MarkedCEThreshold. With
// CEThresholdNQB as well, [Queue.EnqueueDSCP] selects ECN-capable packets
// that carry DSCP 45 ([aqm.DSCPNQB], the Non-Queue-Building PHB of RFC 9956)
// as it selects ECT(1); the selection travels with the queued packet in a
// bit above the ECN field, which never leaves the queue.
//
// # Parameters
//
//	field                default     unit     reference
//	Target               5 ms        time     RFC 8289 §4.4
//	Interval             100 ms      time     RFC 8289 §4.3
//	MTUBytes             1514        bytes    RFC 8289 §5 MAXPACKET; Linux mtu
//	LimitPackets         1000        packets  Linux sch_codel limit
//	LimitBytes           none        bytes    —  (ConfigForLink sizes both)
//	DisableECN           false (ECN on)       RFC 8289 §5; Linux ecn
//	CEThreshold          off         time     Linux ce_threshold
//	CEThresholdECT1Only  false       —        Linux ce_threshold_selector 1/1
//	CEThresholdNQB       false       —        RFC 9956 (EnqueueDSCP)
//	StrictDeadline       false (RFC ≥)        Linux and ns-3 use >
//	LinuxCount           false (RFC)          Linux count increments
//
// # Differences from RFC 8289, Linux sch_codel, ns-3 and DPDK
//
//   - Time is int64 nanoseconds, not Linux's 32-bit 1.024 µs units: no wrap
//     (Linux compares in s32 and is only correct for gaps under 2199 s) and
//     no truncation of Target and Interval. Additions saturate at the end of
//     the int64 range and time going backwards is no time at all.
//   - The control law is exact: interval/√count truncated to whole
//     nanoseconds, as the RFC's floating-point sqrt. Linux keeps 1/√count in
//     16 bits with one Newton step per count, which starts badly (count 2
//     gives 50 ms instead of 70.7 ms) and diverges if count jumps by more than
//     a factor of three; we keep 32 bits, iterate to the fixed point, reseed
//     on jumps and fix up the last nanosecond, so TestReferenceRFC8289 matches
//     the RFC pseudocode decision for decision. The cost is a few more
//     multiplies per drop, none per packet.
//   - The first drop happens at now ≥ deadline (RFC); Linux and ns-3 use >.
//     StrictDeadline selects theirs.
//   - count rises as in the RFC: only when the packet after a drop is still
//     above target (so the next drop is scheduled). Linux raises it before
//     every drop or mark, so its next episode can resume one higher.
//     LinuxCount selects theirs.
//   - ECN: on by default (RFC 8289 leaves it to the implementation; Linux
//     sch_codel has it off, fq_codel on). After a mark at the scheduled time
//     the next signal is scheduled from the previous schedule (Linux), not
//     from now (ns-3), and, as for a drop, count rises only if the next
//     packet examined (in the next Dequeue) is still above target. A packet
//     marked by the control law is not counted again by the CE threshold
//     (ns-3; Linux counts it in both).
//   - The CE threshold has one selector, ECT(1)-or-CE, instead of Linux's
//     DS-byte selector and mask: a queue sees only the ECN field, unless
//     the caller hands it the DSCP through EnqueueDSCP. CEThresholdNQB then
//     adds ECN-capable packets with DSCP 45 (NQB) to the selection, which
//     Linux has no way to express in one selector (its mask covers one
//     pattern of the DS byte, ECT(1) or DSCP 45, not both). RFC 9956 asks
//     that NQB traffic share the L4S treatment where a shallow queue
//     exists; Not-ECT NQB packets cannot be marked and are left alone.
//   - An empty dequeue forgets the above-target deadline (RFC and the newest
//     Linux); older Linux and ns-3 keep it.
//   - The re-entry rule needs a previous episode (Linux's drop_next starts at
//     0 and can make a never-dropping queue look "recently dropping").
//   - At most 256 drops per Dequeue, then the next drop
//     is rescheduled from now, and the spacing is at least 1 ns: Linux's 2026
//     fix for an unbounded drop loop under a tiny interval. The RFC has no
//     bound. count saturates at 2^30 instead of wrapping.
//   - The MTU guard compares the bytes left after removing the head packet
//     with MTUBytes using ≤, like the RFC and Linux; ns-3 uses < 1500.
//     Older Linux and FreeBSD compare with the largest packet seen instead.
//   - Arrivals at a full queue are refused and do not touch the CoDel state,
//     as in Linux; ns-3's limit is in bytes only, here both are available.
//   - A deadline or drop schedule more than one Interval ahead of now (left
//     by a clock reading far in the future) is taken again from now; the
//     RFC and Linux keep it and stay silent until time reaches it.
//   - DPDK has no CoDel; there is nothing to differ from.
//   - Validate refuses limits with which CoDel could never signal: a
//     LimitPackets of 1 or 2, or a LimitBytes below 3×MTUBytes. CoDel acts
//     only while more than MTUBytes stay queued behind the packet leaving,
//     and a full queue of packets of up to MTUBytes may hold less, so such a
//     queue drops only at its limit, as a FIFO (TestPropNoDropTail in
//     internal/configcheck checks every accepted configuration under an
//     unresponsive overload). Linux sch_codel has no byte limit and accepts
//     any packet limit; its MTU is the device's (psched_mtu).
//
// # Time
//
// Every method takes now, an [aqm.Time] in nanoseconds from the caller's
// monotonic clock; the queue never reads a clock and has no timers. All state
// changes happen in Dequeue, so after an idle period the state is as it was
// left: a late dequeue catches up in closed form (bounded by
// 256 drops per Dequeue).
//
// Time that goes backwards counts as no time: a packet dequeued before its
// arrival time has a sojourn time of zero. The two stored instants follow
// the time policy of package aqm: the above-target deadline lies at most
// one Interval ahead of the reading that set it, and the next drop at most
// one Interval (the largest control-law step) ahead of the last one, so an
// instant further ahead of now than Interval can only come from a reading
// far in the future. Such a deadline is restarted one Interval from now and
// such a drop schedule is taken again from now, so after a bad reading
// CoDel resumes within one Interval, as a fresh queue would; such a
// schedule also does not count as a recent episode for the re-entry rule.
//
// # Bursts
//
// [Queue.EnqueueBatch] and [Queue.DequeueBatch] move many packets per call
// with the outcome of the loop of single calls ([aqm.BatchQueue]). Packets
// that leave below target while CoDel is not dropping take a tight loop;
// every other packet goes through Dequeue's logic.
//
// # Per-flow use
//
// [Control] holds one controller's settings, and [Control.Params] derives
// the [Params] that every controller of a queue shares. A [Controller] is
// a 40-byte value, fresh at zero; its owner removes the head packet and
// calls [Controller.DeliverIfBelowTarget] (inlined) and, when that reports
// false, [Controller.Decide], and calls [Controller.Empty] when it finds the
// queue empty. Package fq's CoDelConfig embeds Control, so its fields,
// defaults and rules are the ones documented here.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. One that does not fit is refused. The guard that keeps CoDel from dropping while
// at most MTUBytes are queued compares bytes, so a single 64 KiB super-packet is a standing
// queue of about 44 MTUs, as in Linux; one drop decision adds one to the control law's count.
//
// # Concurrency
//
// A Queue and a Controller are not safe for concurrent use. Params are
// read-only and may be shared.
package codel
