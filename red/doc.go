// Package red implements Random Early Detection (Floyd and Jacobson 1993)
// with Floyd's gentle variant (2000) and Adaptive RED (Floyd, Gummadi and
// Shenker 2001), as recommended for queue management in RFC 2309 and
// RFC 7567.
//
// One [Queue] type covers the family; the variants are flags of [Config]:
//
//	red.New[T](red.Config{}, nil)                               // RED
//	red.New[T](red.Config{Gentle: true}, nil)                   // Gentle RED
//	red.New[T](red.Config{Gentle: true, Adaptive: true}, nil)   // Adaptive RED
//
// # Algorithm
//
// On each arrival RED updates the average queue avg, an exponentially
// weighted moving average of the queue q (packets, or bytes in ByteMode)
// that the arrival finds:
//
//	avg ← avg + w_q·(q − avg)                 queue not empty
//	avg ← avg·(1 − w_q)^m,  m = idle/s         queue empty: m is the number of
//	                                           mean-sized packets the link could
//	                                           have sent while it was idle
//
// where s = 8·MeanPacketBytes/LinkRate and idle is the time since
// the queue became empty. The decay is computed in closed form at the next
// arrival; there are no timers.
//
// The average selects a region:
//
//	avg < min_th              accept; count ← −1
//	min_th ≤ avg < max_th     p_b = max_p·(avg − min_th)/(max_th − min_th)
//	max_th ≤ avg < 2·max_th   Gentle only: p_b = max_p + (1 − max_p)·(avg − max_th)/max_th
//	avg ≥ max_th (2·max_th)   forced: signal every arrival; count ← −1
//
// In the probabilistic regions RED spaces its signals out with the count
// of arrivals since the last one (Floyd and Jacobson 1993, §7 and
// Figure 17): count is incremented, and the arrival is signalled if
// count·p_b ≥ R, with R uniform in (0, 1] drawn when count is 0 (on entering
// the band and after each signal). For a constant p_b the gap X between
// signals, in arrivals, is then uniform: P(X = n) = p_b for 1 ≤ n ≤ K =
// ⌊1/p_b⌋, and the remainder 1 − K·p_b at n = K+1. Its mean is
//
//	E[X] = Σ_{n=0..K} P(X > n) = Σ_{n=0..K} (1 − n·p_b) = (K+1)·(1 − K·p_b/2)
//
// so the long-run signal rate is 1/E[X], which is 2·p_b/(1 + p_b) when 1/p_b
// is an integer: about twice p_b, as the paper intends ("the intermarking
// time is uniform"). This is the same distribution as marking each arrival
// with probability p_a = p_b/(1 − (count−1)·p_b), the paper's Figure 2, but
// needs one random draw per signal instead of one per packet, and no
// division. In ByteMode p_b is scaled by Size/MeanPacketBytes before the
// test.
//
// With Wait (ns-2's wait_ option, ns-3's Wait attribute, on by default
// there) RED waits between signals: ns marks the count-th arrival with
// probability p_a = 0 while count·p_b < 1, p_b/(2 − count·p_b) while
// count·p_b < 2, and 1 beyond (ns-3's RedQueueDisc::ModifyP; ns-2's
// REDQueue::modify_p). The chance of no signal up to count n telescopes:
// with c0 = ⌈1/p_b⌉ it is 1 for n < c0 and
//
//	S(n) = max(0, (2 − (n+1)·p_b)/(2 − c0·p_b))   n ≥ c0
//
// so the gap between signals is uniform with mass p_b/(2 − c0·p_b) from c0
// to about 2/p_b: for 1/p_b = K an integer, uniform on K..2K−1, mean
// (3K−1)/2, rate 2·p_b/(3 − p_b) ≈ 2·p_b/3, a third of the default's.
// (ns's rule is discontinuous there: for p_b a hair below 1/K the gap is
// uniform on K+1..2K−1 and the rate 2/(3K).) The queue keeps the
// count-versus-R form: the arrival is signalled iff count·p_b ≥ 1 and
// (count + 1 − c0)·p_b ≥ R·(2 − c0·p_b), which is S(count) ≤ 1 − R, the
// same distribution with one random draw per signal (see waitHit in
// controller.go; it divides only in a rare window, see below).
//
// A signal marks the packet CE if it is ECN-capable and ECN is enabled
// ([aqm.Marked]), and drops it otherwise ([aqm.DroppedEarly]). In the
// forced region an ECN-capable packet is dropped as [aqm.DroppedOverload]
// unless DisableHardDrop is set. Whatever RED accepts is then checked
// against the hard limits (LimitPackets, LimitBytes) and tail-dropped as
// [aqm.DroppedOverlimit] if they are full.
//
// Adaptive RED adjusts max_p every AdaptInterval (0.5 s): if avg is above
// the target band [min_th + 0.4·Δ, min_th + 0.6·Δ] (Δ = max_th − min_th),
// max_p ← max_p + min(0.01, max_p/4); if it is below, max_p ← 0.9·max_p;
// max_p stays in [0.01, 0.5]. The adaptation instants that passed since the
// last arrival are caught up at the next arrival, each with the average the
// queue had at that instant (decayed, if the queue was idle), in a bounded
// number of steps however long the gap.
//
// # Parameters
//
//	Field              Default                           Unit           Reference
//	MinThreshold       max(5 pkts, TargetDelay·C/2)      packets/bytes  Floyd, Gummadi, Shenker 2001 §5
//	MaxThreshold       3·MinThreshold                    packets/bytes  ibid.; Floyd's REDparameters note
//	MaxP               0.02                              probability    Floyd and Jacobson 1993 (1/50)
//	Weight             1 − exp(−1/C)                     per arrival    Floyd, Gummadi, Shenker 2001 §5
//	LinkRate           100 Mbit/s                        aqm.Rate       (idle decay, automatic settings)
//	MeanPacketBytes    1000                              bytes          Linux tc avpkt
//	TargetDelay        5 ms                              time           Floyd, Gummadi, Shenker 2001
//	LimitPackets       max(1000, 2·MaxThreshold) ≤ 2^17  packets        -
//	LimitBytes         none (ByteMode: 2·MaxThreshold)   bytes          -
//	AdaptInterval      0.5 s                             time           Floyd, Gummadi, Shenker 2001
//	alpha, beta        min(0.01, max_p/4), 0.9           -              ibid., Figure 3
//	max_p bounds       [0.01, 0.5]                       probability    ibid.
//	Wait               false (signal gaps on [1, 1/p_b]) -              ns-2 wait_, ns-3 Wait (true there)
//
// C = LinkRate/(8·MeanPacketBytes) is the link rate in mean-sized
// packets per second; in ByteMode the automatic thresholds are multiplied by
// MeanPacketBytes. The automatic weight and thresholds apply to every
// variant when the fields are zero, not only to Adaptive RED.
// [ConfigForLink] sizes the packet limit for a link rate and round-trip
// time.
//
// # Memory
//
// New preallocates the packet ring: LimitPackets rounded up to a power of
// two, times the size of an [aqm.Packet] of T (32 bytes for a word-sized
// payload). [Detail.MemoryBytes] reports it. A limit derived from the
// thresholds is capped at 131072 (4 MiB with a
// word-sized payload); a larger ring must be asked for with an explicit
// LimitPackets.
//
// # Fixed point and precision
//
// The average is a float64, updated as avg·(1 − w_q) + w_q·q, exact to
// 2^−52 relative. Linux and DPDK keep it in fixed point with a power-of-two
// weight; the automatic weight 1 − exp(−1/C) is not a power of two, and a
// general fixed-point average would truncate with a bias that grows like
// 1/w_q (about 10^5 units in the last place at 100 Mbit/s). Measured on
// the burst path, where the average stays in a register, this two-step
// float64 update costs no more per packet than a fixed-point multiply.
//
// Probabilities, where the per-packet decision is, are integers in Q0.32
// (p·2^32) held in a uint64, so that 1 is representable. p_b is computed as
// ⌊(avg − min_th)·slope⌋ with slope = max_p·2^32/(max_th − min_th)
// precomputed (and likewise for the gentle ramp); the decision is the
// integer comparison count·p_b ≥ R·2^32 (in ByteMode count·p_b·Size ≥
// R·2^32·MeanPacketBytes, a 128-bit product). The only error is in p_b:
// the computed value lies in (p·2^32 − 1 − 2^−18, p·2^32 + 2^−18], where p
// is the exact probability for the float64 average: less than 2^−31 in
// absolute terms. A decision can therefore differ from an exact one only
// when count·p_b lies within count·2^−31 of R. The tests check this bound
// against exact rational arithmetic and compare every decision with a
// float64 reference model.
//
// With Wait the test is done in exact integer arithmetic on P = p_b·2^32
// (in ByteMode min(p_b·Size, 2^32·MeanPacketBytes), 1 being
// 2^32·MeanPacketBytes ≤ 2^56): count·P ≥ 2^32, then, with c0 = ⌈2^32/P⌉
// and D = c0·P − 2^32, (count+1−c0)·P·2^32 ≥ R·2^32·(2^32 − D) as a
// 128-bit comparison. c0 costs a division, which is done only when the
// outcome is not already settled by e = count·P − 2^32: e + 1 ≥ R·2^32
// signals and e + 2P ≤ R·2^32 does not (a window of width 2P, so the
// division runs on about 2·p_b of the arrivals past c0). Again the only
// error is that of P, so a decision can differ from the exact one only
// when count·p_b is within count·2^−31 of 1 (the end of the wait), when
// 1/p_b is within that distance of an integer (c0 changes, and ns's rule
// is discontinuous there), or when (count+1−c0)·p_b is within
// (count+1)·2^−31 of R·(2 − c0·p_b).
//
// # Differences from the papers, Linux, ns-3 and DPDK
//
//   - Signals are spaced with Figure 17's "count ≥ R/p_b" test (as Linux
//     does), not Figure 2's per-packet p_a; both give signal gaps uniform on
//     1..1/p_b and the rate above. ns-2/ns-3's Wait option, on by default
//     there, gives about 2·p_b/3 instead, and DPDK's factor-2 formula about
//     p_b; by default we keep the paper's rate, and Wait offers ns's. R is
//     drawn in (0, 1], so p_b = 0 never signals.
//   - Wait is ns's rule as a count-versus-R test, with one random draw
//     per signal rather than one per packet: for a constant p_b every
//     arrival has ns's probability; when p_b changes between arrivals the
//     survival S(count) is evaluated at the current p_b, as Figure 17 does
//     for Figure 2. Our count starts at 0 on the arrival that enters the
//     band (Figure 17); ns-3 sets it to 1 there, so its first wait after
//     entering the band is one arrival shorter. In ByteMode the probability
//     is scaled by Size/MeanPacketBytes before the wait rule and count
//     stays in packets; ns-3 counts countBytes/MeanPktSize and scales
//     afterwards. ns-3 without Wait uses p_b/(1 − count·p_b) with count 1
//     on the first arrival after a drop, one arrival off Figure 2 (gaps on
//     1..1/p_b − 1); ours follows the paper.
//   - After a forced signal count is −1 (Figure 17 and Linux), so the
//     first arrival back in the band draws a fresh R and is not signalled.
//     ns-3 resets count only with its Ns1Compat option, the inverse of ns-2.
//   - No "at least two packets queued" condition for early drops, which
//     ns-2 and ns-3 add; the papers have none.
//   - Idle decay is exact: avg·(1−w_q)^(idle/s), with a real-valued m
//     computed from nanosecond timestamps at the next arrival. Linux uses
//     a 256-entry shift table whose units and log base do not match what
//     tc computes (see the project's research notes); ns-3 uses
//     (1−w_q)^(⌊m⌋+1); DPDK a coarse table that does not decay short idle
//     periods at all. Averages that decay below 10^−12 are set to zero.
//   - The idle period starts when a Dequeue empties the queue (the paper's
//     q_time). An arrival to an empty queue that RED or a limit refuses
//     decays the average up to its own time, and the idle period restarts
//     there, so no idle time is counted twice.
//   - ByteMode counts bytes in the average, thresholds and limits and
//     scales p_b by Size/MeanPacketBytes (the paper's byte mode, with ns's
//     mean instead of the paper's maximum size); count stays in packets as
//     in the paper. Linux's byte-based sch_red does not scale p_b; ns-3
//     measures count in mean-sized packets.
//   - Gentle RED's ramp is recomputed whenever Adaptive RED changes max_p;
//     ns-2 and ns-3 keep the slope of the initial max_p, so their drop
//     probability jumps at max_th. Decisions in the gentle ramp are
//     probabilistic (markable); only avg ≥ 2·max_th is forced.
//   - ECN is on by default (Linux and ns-3 default it off), and forced
//     signals drop ECN-capable packets by default, as ns-3's UseHardDrop;
//     they count as [aqm.DroppedOverload], forced drops of Not-ECT packets
//     as [aqm.DroppedEarly]. Linux's nodrop option is not offered.
//   - The hard limits are checked after RED's decision and independently
//     of the average (the trap of inet-framework/inet#487): a packet that
//     RED accepts or marks but that does not fit is DroppedOverlimit, and
//     RED's count is reset all the same, as in Linux. A packet larger than
//     LimitBytes is refused before RED sees it.
//   - Adaptive RED is caught up lazily at each arrival for every missed
//     0.5 s instant, using the average at that instant; Linux runs a timer
//     (which also adapts on the idle-decayed average), ns-2/ns-3 take at
//     most one step per arrival. max_p is clamped to [0.01, 0.5] after
//     each step; Linux and ns test the bound before the step and overshoot
//     it by one step. The lower bound is fixed at 0.01 (ns computes one
//     from the link rate). max_p, alpha and beta are float64.
//   - The average is a float64 and probabilities are Q0.32 in 64 bits (see
//     above); Linux and DPDK keep the average in fixed point with a
//     power-of-two weight, and Linux's Q0.32 max_P cannot represent 1.
//   - Reconfigure keeps the average, count and adapted max_p; Linux's
//     red_change resets the average and reloads max_p.
//   - In ByteMode, Validate refuses a byte limit below two mean-size
//     packets, given or derived as 2·MaxThreshold: it refuses most packets
//     before RED sees a queue. A limit in the other unit than the thresholds
//     (LimitBytes in packet mode, LimitPackets in ByteMode) is a memory
//     bound that RED cannot relate to its thresholds without knowing the
//     packet sizes, so it is not checked against them; one that holds fewer
//     than MaxThreshold mean-size packets keeps RED near or below its
//     thresholds, where it signals rarely or never. Linux tc and ns-3 check
//     neither.
//
// # Time
//
// Every per-packet method takes now, in monotonic nanoseconds ([aqm.Time]);
// the queue never reads a clock, and it follows the time policy of package
// aqm. Time that goes backwards counts as no time: it neither decays the
// average nor moves max_p. It never freezes them either: an arrival to the
// empty queue restarts the idle period at its own time even when that is
// earlier than the recorded start, so a start left in the future by one
// wrong reading is pulled back at the next correct one and the average
// decays normally from there; likewise the next adaptation instant, when
// it lies more than AdaptInterval ahead of an arrival, is re-anchored to
// one interval after it. Any forward gap, up to the whole int64 range, is
// handled in closed form without overflow (a long idle decays the average
// to zero at once). The adaptation clock starts at the first arrival.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. One that does not fit is refused. The packet-mode average counts segments;
// ByteMode weighs a super-packet by its Size.
//
// # Concurrency
//
// A Queue is not safe for concurrent use. Its random source is its own,
// seeded by Config.Seed (a secret random seed when it is zero), so that
// queues do not share or correlate (DPDK's RED shares one global random
// value between all queues).
//
// # Bursts
//
// [Queue.EnqueueBatch] and [Queue.DequeueBatch] take and give many packets
// per call at one time, with exactly the outcome of the loop of single
// calls ([aqm.BatchQueue]); the common case runs inline.
package red
