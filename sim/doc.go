// Package sim is aqmkit's deterministic packet-level bottleneck simulator:
// a dumbbell whose senders share one link, with any [aqm.Queue] as the
// link's queue, driven by TCP-like senders on virtual time.
//
// It answers the question microbenchmarks cannot: how does an AQM behave
// with real congestion controls? The command sim/cmd/aqmsim runs its
// named scenarios and prints tables and plots.
//
// # Model
//
// Each flow has a sender and a receiver. A data packet enters the
// bottleneck queue when it is sent (the access links are not modelled);
// the link serialises one packet at a time at the configured rate, which
// may change during the run ([Config.RateChanges]); the receiver ACKs as
// its TCP stack says ([TCPConfig]: every segment, or every second one with
// a delayed-ACK timer, and out-of-order data at once), and the ACK reaches
// the sender one base RTT after it was sent, on an uncongested return path.
// The base RTT is therefore all propagation; queueing, serialisation and
// delayed ACKs add to it.
//
// A two-way path ([Config.Reverse]) adds a second bottleneck in the other
// direction, with its own queue (built by the same constructor, with its
// own state) and rate: the forward flows' ACKs ([ReversePath.AckBytes]
// each) and the pings' echoes cross it behind the data of the flows marked
// [FlowSpec.Reverse], whose ACKs cross the forward queue. A packet meets
// the second queue as it leaves the first, and the flow's base RTT is
// spent after the last; ACKs lost in a queue are counted in
// [Result.Reverse] and never retransmitted (the next cumulative ACK covers
// them).
//
// # TCP
//
// Every TCP flow of a run shares one stack, [Config.TCP], set by one of two
// profiles: [NS3TCP] (ns-3 3.37's defaults) or [LinuxTCP] (Linux 6.x).
// Each behaviour that decides drop counts and queue dynamics is a field of
// its own: the ACK policy (delayed ACKs, their timer, Linux's quick-acks),
// window growth once per ACK (RFC 5681, ns-3) or by segments ACKed (ABC,
// Linux), whole-segment sending (RFC 6675 (C)), what a loss halves (the
// pipe, the window or the flight), RFC 6675's IsLost with DupThresh 3 or
// FACK, whether a SACKed retransmission stays in the pipe until
// cumulatively ACKed (ns-3) or leaves it (RFC 6675, Linux), PRR
// (RFC 6937), the RFC 6298 or Linux RTO with a per-stack
// minimum, Karn's rule, the 12-byte timestamp option and the initial
// window. The scenarios choose a profile (red-family ns3, the others
// linux), the command's -tcp flag overrides it, and every result carries
// it.
//
// Senders ([Kind]):
//   - Reno: slow start, congestion avoidance and halving on loss
//     (RFC 5681), SACK-based loss recovery (RFC 6675, with PRR), the
//     RFC 6298 retransmission timeout; ns-3 calls this NewReno with SACK.
//   - CUBIC: RFC 9438 window growth (C=0.4, β=0.7, fast convergence,
//     Reno-friendly region) on the same loss recovery.
//   - Classic ECN variants of both (FlowSpec.ECN): ECT(0), a CE echo
//     treated as a loss at most once per RTT (RFC 3168).
//   - Prague: a scalable L4S sender in the DCTCP/TCP Prague mould: ECT(1),
//     per-packet ECN feedback (as AccECN), α the EWMA (g=1/16) of the
//     marked fraction per round, cwnd·(1−α/2) at most once per round,
//     additive increase on the unmarked deliveries, paced at cwnd/srtt
//     (doubled below half ssthresh), and a Reno halving on loss. Its RTT
//     independence (TCP Prague's default "RATE" scaling, v0.7's 4
//     transition rounds): below 25 ms the increase is (srtt/25 ms)²
//     segments per RTT, and rounds for α and reductions last at least
//     25 ms (the virtual RTT); off above 100 ms or with
//     FlowSpec.PragueNoRTTIndependence.
//   - HyStart++ (RFC 9406) for Reno and CUBIC on request
//     (FlowSpec.HyStart).
//   - BBR: BBR version 1 (the IETF draft's model with Linux v1's
//     constants): delivery-rate samples from per-segment send records, a
//     windowed max of them over 10 rounds (exact, where Linux keeps an
//     approximation), min RTT with a 10 s expiry, Startup (gain 2.89),
//     Drain, ProbeBW's 8-phase gain cycle from a random phase, ProbeRTT
//     (4 packets for 200 ms and a round), pacing at 0.99·gain·BtlBw, a
//     window of gain·BDP plus Linux's three send quanta, and packet
//     conservation for a round on loss instead of a window cut; with
//     TCPConfig.AckAggregation (the linux profile), Linux's allowance for
//     ACK aggregation: the most data ACKed beyond BtlBw × elapsed within
//     an epoch, a max over 5–10 rounds capped at the window and at 100 ms
//     of BtlBw, added to the window once the pipe is full. Not modelled:
//     the long-term ("policer") bandwidth estimator, and the data
//     aggregation of TSO, GRO and batching routers, which real paths add
//     to the excess measured here. A lone flow in a noise-free path would never enter ProbeRTT
//     (its RTT samples never rise above the minimum); here the queue its
//     send quanta keep, or other flows, make them vary.
//   - CBR: unresponsive constant-rate UDP, ECN-capable or not.
//   - Ping: a probe every Interval; its round-trip time is measured.
//   - Short flows ([ShortFlows]): finite TCP flows arriving as a Poisson
//     process with exponential or Pareto sizes; their completion times are
//     measured.
//
// An optional HTB-like [Shaper] sits between the queue and the link: the
// link then runs at the physical line rate and dequeues only while the
// shaper's tokens allow (see [Shaper] for where it differs from Linux HTB).
//
// # Metrics
//
// [Result] holds, over the run minus its warmup: per-class queueing delay
// distributions (mean, P50, P99, P99.9, max; a log-linear [Histogram] with
// 1/64 relative resolution), utilization, per-flow goodput (data the
// receiver delivers in order to the application: data behind a hole counts
// when the hole is filled) and Jain's index, the L4S:Classic rate ratio,
// drops and marks as counts, rates and fractions, the time-average queue,
// the coefficient of variation of the aggregate throughput per sample
// interval, short-flow completion times, ping RTTs, and (on request) time
// series. Every goodput figure and series counts in-order delivery. It also
// holds payload goodput (headers excluded) and utilization
// counted that way, the coefficient of variation of receiver goodput in
// fixed 100 ms and 1 s bins (aggregate and per receiver), drops over the
// whole run, the queue length sampled on a fixed grid, and per flow group
// the goodput in 100 ms bins (instantaneous throughput) and the RTT
// samples (latency under load).
//
// # Determinism and speed
//
// A run is a pure function of its [Config], its seed and the queue: time is
// virtual (an [aqm.Time] advanced only by events), randomness comes from one
// PCG stream seeded by Config.Seed, and events at the same instant fire in
// the order they were scheduled. The event agenda is a typed binary heap (no
// interface boxing); ACKs travel on a per-flow FIFO line with one agenda
// entry per flow, so the heap holds a few events per flow rather than one
// per packet in flight; packets are indices into one packet table, reused
// through a free list, and that index is the queue's payload. There are no
// goroutines inside a run; [ExecuteAll] runs many runs in parallel.
// BenchmarkSim measures simulated packets per second.
//
// # Differences from ns-3 and Linux
//
//   - No access links, no ACK loss, no receive window:
//     the bottleneck is the only place packets wait or are dropped (besides
//     the optional random loss and marking of [Config.LossProb] and
//     [Config.MarkProb], used by the model checks).
//   - Windows count whole segments (like Linux), all of MSS size; pings are
//     64 bytes.
//   - The receiver reports, in each ACK, the one out-of-order segment that
//     triggered it (a single SACK block; in-order segments need none) and
//     the number of CE marks among the segments it covers, and the sender
//     keeps an exact scoreboard from them; real SACK repeats blocks to
//     survive ACK loss, which this return path does not have.
//   - No RACK, TLP or F-RTO (Linux has them): a lost retransmission waits
//     for the RTO; no limited transmit as such, though the whole-segment
//     rule sends new data as SACKs shrink the pipe. Linux's delayed-ACK
//     timeout is its 40 ms minimum, not adaptive; its CUBIC uses HyStart++
//     (RFC 9406) here, where Linux has its own HyStart. The timestamp echo
//     is the latest segment's (as ns-3), not RFC 7323's earliest
//     unacknowledged one. After an RTO the sender treats every un-SACKed
//     segment as lost and restarts from one segment.
//   - Prague omits its own slow-start exit tweaks, its rate-based mode at
//     tiny windows and the classic-ECN-AQM detector; Classic ECN echoes CE
//     per ACK instead of holding ECE until CWR (the sender's once-per-RTT
//     reaction makes them equivalent).
//
// # Self-checks
//
// The tests check the senders against their models: a lone Reno flow fills
// a BDP-sized drop-tail buffer to full utilization; Reno's rate under random
// loss p follows Mathis et al.'s 1.22·MSS/(RTT·√p) within 20%; the scalable
// sender's window is ∝ 1/p; CUBIC's window follows RFC 9438's
// W(t) = C(t−K)³ + W_max.
package sim
