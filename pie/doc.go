// Package pie implements PIE, the Proportional Integral controller Enhanced
// active queue management of RFC 8033, behind [aqm.Queue].
//
// # Algorithm
//
// PIE keeps a drop probability p and decides at enqueue. Every T_UPDATE it
// estimates the queueing delay cur and integrates its error:
//
//	raw = alpha·(cur − target) + beta·(cur − qdelay_old)   (gains in Hz, delays in s)
//	raw = raw / d(p)     d = 2048, 512, 128, 32, 8, 2, 1 for p < 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, else
//	raw = min(raw, 0.02) if p ≥ 0.1                      (cap, RFC 8033 §5.5)
//	raw = raw + 0.02     if HighDelayBoost and cur > 250 ms
//	p   = p + raw;  p = 0.98·p if cur = qdelay_old = 0;  p = clamp(p, 0, 1)
//	burst = max(0, burst − T_UPDATE); burst = MAX_BURST if p = 0 and cur, qdelay_old < target/2
//	qdelay_old = cur
//
// The delay estimate cur is, by default, the age at the update instant of
// the packet at the head of the queue (0 when empty); with
// [Control.RateEstimator] it is backlog·avg_dq_time/DQ_THRESHOLD, where
// avg_dq_time averages (weight 1/4) the time each measurement cycle takes to
// dequeue DQ_THRESHOLD bytes; a cycle starts at a departure that finds at
// least DQ_THRESHOLD bytes queued (RFC 8033 §5.2).
//
// On arrival: a full queue tail-drops. While burst > 0 everything is
// accepted. Otherwise drop_early: no drop while qdelay_old < target/2 and
// p < 0.2, nor while the backlog before the arrival is at most
// 2·MeanPacketBytes (the safeguards of §4.1); with [Control.ByteMode] the
// packet sees p·min(size, mean)/mean; with [Control.Derandomize]
// accu += p, no drop while accu < 0.85, a certain one once accu ≥ 8.5 (§5.4);
// otherwise drop when u < p for a uniform u. A packet picked this way is
// marked CE and queued if it is ECN-capable, ECN is on and p < ECNThreshold
// (§5.1); otherwise it is refused. Every positive decision and every tail
// drop resets accu.
//
// Probabilities are int64 fixed point scaled by 2^48 (1.0 = 1<<48): one
// 64-bit random draw, shifted, against p decides a packet. The update is
// integer arithmetic that is exact up to one truncation per update; the gains
// are held in units of 2^-20 Hz (see controller.go for the derivations).
//
// # Parameters
//
//	Field                  Default   Unit    Reference
//	Target                 15 ms     time    QDELAY_REF, RFC 8033 §4.2
//	TUpdate                15 ms     time    T_UPDATE, §4.2
//	Alpha                  0.125     Hz      alpha, §4.2
//	Beta                   1.25      Hz      beta, §4.2
//	MaxBurst               150 ms    time    MAX_BURST, §4.4
//	LimitPackets           1000      packets Linux sch_pie limit
//	LimitBytes             none      bytes   —  (ConfigForLink sizes both)
//	MeanPacketBytes        1500      bytes   MEAN_PKTSIZE, §4.1
//	ECNThreshold           0.1       prob.   mark_ecnth, §5.1
//	DequeueThresholdBytes  16384     bytes   DQ_THRESHOLD, §5.2
//	Derandomize            off       —       §5.4
//	RateEstimator          off       —       §5.2 (timestamps otherwise)
//	ByteMode               off       —       Linux "bytemode"
//	HighDelayBoost         off       —       Linux sch_pie, not in the RFC
//	DisableECN             false     —       ECN on (Linux and ns-3: off)
//	Seed                   random    —       crypto/rand; fix it for tests
//
// # Differences from RFC 8033, Linux sch_pie, ns-3 PieQueueDisc and DPDK rte_pie
//
//   - The timestamp estimate is the head packet's age at the update instant,
//     not the sojourn of the last packet dequeued (RFC, Linux, ns-3). It
//     never goes stale while the link stalls, it is 0 exactly when the queue
//     is empty (so the idle decay starts without Linux's "0 when empty"
//     special case), and it makes the lazy update exact.
//   - The periodic update runs lazily inside Enqueue and Dequeue: the updates
//     due at or before now run first, each with the delay that instant saw
//     (the queue does not change between calls). Consecutive missed updates
//     are replayed one by one up to 4096 and end in closed forms: an idle
//     queue reaches p = 0 within 1650 updates and then stays at the reset
//     state; a saturated queue (p = 1, delay ≥ target) stays saturated; a
//     constant delay with a zero step stays put; a constant delay with a
//     non-zero step moves p by that step at every update of an auto-tuning
//     band, which is applied per band at once, exactly. Only a drift that
//     none of these cover (the age of the head packet, growing, with tiny
//     gains) and lasts more than 4096 updates without a packet operation
//     is cut short: the rest collapses into the last due update. Linux uses a timer
//     whose first run comes after 500 ms and whose 15 ms becomes 16 ms at
//     HZ=250; the first update here comes TUpdate after the first call.
//   - The burst allowance's reset test (p = 0 and both delay samples under
//     target/2) runs at each update, right after the decrement, as in Linux;
//     RFC Appendix A evaluates it on each arrival. It is decremented by
//     TUpdate per update and bottoms at 0, never wrapping (DPDK's unsigned
//     subtraction wraps to a huge allowance). ns-3's three-state burst
//     machine, which forces p = 0 during the burst, is not used.
//   - The decay multiplies by 0.98 (RFC, ns-3), not 1 − 1/64 (Linux,
//     FreeBSD), and only when both samples are exactly 0 (DPDK decays below
//     target/2).
//   - p is clamped to [0, 1] at every update: Linux's 2^56 scale only
//     catches the 2^64 wrap, so there p can wind far above 100% and takes
//     as long to unwind.
//   - The 2% cap applies from p ≥ 0.1 (RFC §5.5, always on). Linux's extra
//     +2% beyond 250 ms is the HighDelayBoost option, off by default.
//   - Marking needs p strictly below ECNThreshold (RFC, ns-3); Linux marks
//     at p ≤ 10%. ECN is on by default, matching the other aqmkit queues
//     (Linux and ns-3 default it off). ECN-capable packets refused because p
//     is at or above the threshold report [aqm.DroppedOverload].
//   - Derandomization resets accu on every positive decision, mark or drop.
//     Linux and ns-3 reset it only on drops, so once a forced decision (accu
//     ≥ 8.5) becomes a mark every later ECN packet is marked until a drop.
//     A tail drop and p = 0 reset it too (the RFC's rules), so it cannot
//     grow without bound as the DPDK accumulator is reported to. It is
//     optional and off (RFC, ns-3); Linux and DPDK always derandomize.
//   - The "two packets" safeguard is the RFC's: backlog before the arrival
//     ≤ 2·MeanPacketBytes bytes (Linux: backlog < 2·MTU; ns-3: ≤ 2 packets).
//     The low-delay safeguard uses qdelay_old (RFC, ns-3, FreeBSD); Linux
//     uses its fresher latest sample.
//   - Byte mode scales by min(size, MeanPacketBytes)/MeanPacketBytes,
//     rounded down, so the scaled probability never exceeds p (ns-3 does not
//     cap it; Linux leaves packets above the MTU unscaled).
//   - The rate estimator follows the RFC's avg_dq_time with weight 1/4 (the
//     RFC's DQ_THRESHOLD/2^16 at the default threshold, as FreeBSD and
//     DPDK; Linux 1/8, ns-3 1/2), with the cycle's excess bytes ignored as in
//     the RFC: with 1500-byte packets a 16 KiB cycle spans 10 of 11
//     departures, so the estimate runs about 8% low and the held delay about
//     8% above target. DPDK's estimator multiplies a packet count by a time
//     per 16 KiB; here it is bytes, as the RFC says. The estimator is not
//     reset with the burst allowance (Linux resets it). A cycle that lasts
//     2^36 ns or longer (a stalled link, or a clock reading far off)
//     gives no sample, and the samples of cycles that ended at a reading
//     more than TUpdate ahead of a later one are discarded (see Time).
//   - No active/inactive state (§5.3): PIE is always on, as in Linux.
//   - Delays saturate at 2^36 ns (2^36 ns ≈ 68.7 s) and gains at
//     16.0 to keep the fixed point exact.
//   - Drops happen only at enqueue; the DropFunc is never called by PIE.
//   - A next update more than one TUpdate ahead of now (left by a clock
//     reading far in the future, or by time going back past the last
//     update) is rescheduled one TUpdate from now, and a departure-rate
//     cycle that started after now starts again; the RFC's timer and Linux
//     have no such case.
//   - The random stream is seeded from crypto/rand unless Config.Seed is
//     set; Linux uses the kernel's random numbers, the RFC leaves it open.
//   - Validate refuses limits with which PIE could never signal: a
//     LimitPackets below 4 or a LimitBytes below 4×MeanPacketBytes (the
//     safeguard drops nothing while at most 2×MeanPacketBytes are queued),
//     and with RateEstimator a DequeueThresholdBytes no larger than
//     MeanPacketBytes (a cycle one packet completes takes no time, so the
//     rate looks infinite and the delay zero) or larger than the buffer less
//     2×MeanPacketBytes (the rate is never measured). Linux sch_pie, ns-3
//     and DPDK accept them.
//
// # Time
//
// Time is the caller's: each call passes now as an [aqm.Time] and the queue
// never reads a clock. Time that goes backwards counts as no time: no
// update runs and no delay is negative. Differences between instants at
// opposite ends of the int64 range saturate instead of overflowing.
// [Queue.Detail] shows the state as of the last call.
//
// The stored instants follow the time policy of package aqm. The next
// update is never more than TUpdate ahead of the last reading; one that is
// further ahead of now can only come from a bad reading, and is
// rescheduled one TUpdate from now (no update runs then). After a reading
// far in the future, which runs the updates due until then and typically
// saturates the probability, the first normal reading pulls the schedule
// back and the next update, one TUpdate later, sees the true delay: with
// the huge previous delay in its proportional term it brings the
// probability back to zero at once. A departure-rate cycle that started
// after now starts again at now; the rate samples of cycles that ended at
// a reading more than TUpdate ahead of now are discarded (the average goes
// back to its value before them), and a cycle of 2^36 ns or longer, as
// one that starts at a reading far in the past, gives no sample. A forward jump is elapsed time: the
// updates due during it are caught up in bounded, closed form.
//
// # Bursts
//
// [Queue.EnqueueBatch] and [Queue.DequeueBatch] move many packets per call
// with the outcome of the loop of single calls ([aqm.BatchQueue]). Updates
// due run once per burst. Arrivals take a tight loop that checks the
// limits and, when PIE may drop early, draws the random number inline;
// only a positive decision, derandomization or byte mode call the single
// path. Without the rate estimator departures take a tight loop too.
//
// # Per-flow use
//
// [Controller] is PIE's per-queue state as a value, driven by a scheduler
// that owns the packets (package fq's FQ-PIE embeds one per flow); a FIFO driven
// through it decides exactly as [Queue] does.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. One that does not fit is refused. The safeguard and the departure-rate
// measurement are in bytes and need no change. In packet mode a super-packet draws once against
// the drop probability, as Linux decides a GSO packet; ByteMode scales the probability by its
// Size.
//
// # Concurrency
//
// A Queue is not safe for concurrent use; its randomness comes from its own
// PCG stream seeded by [Config.Seed] (from crypto/rand when zero), so with
// a fixed seed the same calls give the same decisions.
package pie
