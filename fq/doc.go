// Package fq implements fair queueing with active queue management:
// FQ-CoDel (RFC 8290) as [CoDel], FQ-COBALT (ns-3's FqCobaltQueueDisc) as
// [Cobalt], and FQ-PIE (Linux sch_fq_pie, ns-3's FqPieQueueDisc) as [PIE].
// Stochastic Fair Queueing, which shares no code with them, is package sfq.
//
// CoDel, Cobalt and PIE share one scheduler: the keyed flow table, DRR++
// and the overload dropper below are the same code for all three; only the
// per-flow AQM differs (a codel.Controller, a cobalt.Controller or a
// pie.Controller), and each runs inline in its queue's Enqueue or Dequeue.
//
// # Algorithm
//
// FQ-CoDel hashes every packet into one of Flows flow queues:
//
//	bucket = (mix(Packet.Hash, key) · Flows) >> 32
//
// where key is a 128-bit secret derived from Config.Seed (drawn from
// crypto/rand when Seed is zero, the default) and mix is a keyed
// 64-bit finaliser, so a sender that does not know the seed cannot aim
// collisions at another flow; the multiply-shift replaces a modulo. Each flow
// queue is a FIFO with its own CoDel controller (package codel), kept for the
// life of the queue, and a deficit in bytes.
//
// Dequeue runs deficit round robin over two lists, new flows first (DRR++):
// a flow that becomes active joins the tail of the new list with one
// quantum of credit; the head flow of the first non-empty list sends while
// its credit is not negative, each packet costing its size; a flow out of
// credit gets another quantum and moves to the tail of the old list. A flow
// found empty moves from the new list to the old one (so a flow cannot stay
// "new" by emptying quickly) or, from the old list, becomes inactive. The
// packet a flow sends is the one its CoDel lets through: CoDel drops or
// marks on the flow's own sojourn times, and its "less than one MTU queued"
// guard looks at the flow's bytes (or the whole queue's, with
// GlobalBacklogGuard).
//
// When an arrival takes the queue over LimitPackets or MemoryLimitBytes, the
// queue picks the fattest flow and drops from its head until half its bytes
// or DropBatchPackets packets are gone (at least one); the drops go to the
// DropFunc as [aqm.DroppedOverlimit] and, by default, are added to that
// flow's CoDel count. The fattest flow is found without looking at every
// flow: each non-empty flow is in a backlog class, a code of its byte
// backlog b with three mantissa bits,
//
//	class(b) = 1 + b                   for b < 16
//	class(b) = 1 + 8e + ⌊b / 2^e⌋      otherwise, e = ⌊log2 b⌋ − 3
//
// which never decreases with b and puts in one class only backlogs that
// differ by less than a ninth of the larger. The queue keeps one stack of
// flows per class (a flow is pushed when its class changes; the entries it
// leaves behind go stale and are skipped or compacted away later) and a
// bitmap of the non-empty classes, so the chosen flow is the one that
// entered the highest non-empty class last, found in O(1) amortised time per
// arrival whatever the number of flows. The classes are kept only while
// the queue is near its limits: when an arrival takes it above three
// quarters of LimitPackets or of MemoryLimitBytes, the active flows enter
// their classes in scheduling order (new list, then old list), and from
// then on each packet costs a compare and, when its flow's class changes, a
// write to a stack whose top is in cache; no other flow's state is touched.
// Tracking stops at a Dequeue call that finds the queue at most half full
// once as many Dequeue calls have passed as the start visited flows, plus
// 64, which pays for the start. Below the limits a packet costs one test.
//
// # Flood guard
//
// Fair queueing protects flows from each other only while each flow keeps
// its hash: a sender that picks new ports for every packet makes every
// packet a new flow. Each lands in a bucket of its own and is served from
// the new list first, so persistent flows on the old list starve, and it
// fills every bucket, so the buckets of the other flows hold its packets
// too. RFC 8290's scheduler (and Linux's fq_codel) then does worse than a
// FIFO. The guard, on unless DisableFloodGuard is set, tells flows that
// recur from packets that do not:
//
//   - each bucket remembers its owner, a hash that recurred there while
//     the bucket was empty, and a candidate, the last other hash it saw
//     since the owner's last packet; the owner's packets go to the bucket
//     exactly as without the guard;
//   - a packet of another hash is let into the bucket as a guest (served
//     with the bucket, as without the guard) when the admission budget has
//     a token, earned at one per eight packets sent and saved up to 64, or
//     when its hash is the candidate and recurs; a candidate that recurs
//     while its bucket is empty, before the owner comes again, becomes the
//     owner (so an owner that keeps sending keeps its bucket, however
//     often a flood that draws its ports from a finite range repeats a
//     hash there);
//   - every other packet waits in one shared queue, which has its own AQM
//     (as a flow queue does), joins the old list only (never the new one)
//     and keeps no packet longer than Target, at most 5 ms: at each
//     arrival it takes, it drops up to two heads that have waited longer,
//     as [aqm.DroppedOverlimit] (GuardDropped in the Detail).
//
// So a stream of one-packet flows gets at most an eighth of the link
// through the new list and one flow's share through the shared queue, and
// its packets stay out of the other flows' buckets; a flood on one
// 5-tuple is one flow as before. The rules keep every flow's order: a
// hash's packets are never in its bucket and the shared queue at once (a
// bucket holds guests of one hash at a time, owners are never diverted,
// and a hash joins its bucket only when none of its packets, counted by
// their number in the shared queue, can still be there). Ordinary traffic
// starts far fewer than one flow per eight packets and sees no difference;
// a new flow that starts during a flood has its first packets in the
// shared queue until it recurs with none of them left there, which a flow
// whose packets come more than the shared queue's sojourn limit apart does
// at its next packet, and a denser one only after a pause that long.
//
// The guard arms only while new flows arrive faster than it admits them
// (or the queue nears its limits); until then every packet joins its own
// flow queue and the guard costs one test per arrival, and a hash new to
// an empty flow queue takes an admission from the budget. Armed, it
// disarms once its shared queue has stopped dropping packets for a while,
// moving what it holds back to the flow queues in order. It takes 28
// bytes per flow.
//
// # Parameters
//
//	field                default   unit     reference
//	Flows                1024      queues   RFC 8290 §5.2.5
//	LimitPackets         10240     packets  RFC 8290 §5.2.3
//	MemoryLimitBytes     32 MiB    bytes    Linux memory_limit
//	QuantumBytes         1514      bytes    RFC 8290 §5.2.4
//	DropBatchPackets     64        packets  Linux drop_batch
//	Target, Interval     5 ms, 100 ms       RFC 8290 §5.2.1–2 (RFC 8289)
//	MTUBytes             1514      bytes    Linux mtu
//	DisableECN           false (ECN on)     RFC 8290 §5.2.6
//	CEThreshold          off       time     RFC 8290 §5.2.7, Linux ce_threshold
//	CEThresholdECT1Only  false     —        Linux ce_threshold_selector 1/1
//	CEThresholdNQB       false     —        RFC 9956 (EnqueueDSCP)
//	GlobalBacklogGuard   false (per flow)   Linux uses the queue's backlog
//	KeepCountOnOverload  false (bump)       Linux bumps, ns-3 does not
//	DisableFloodGuard    false (guard on)   off: RFC 8290, Linux
//	Seed                 0 (secret key from crypto/rand)  RFC 8290 §4.1 salt
//
// [CoDelConfigForLink] sizes LimitPackets and MemoryLimitBytes for a link
// rate and round-trip time (four round trips at the rate, as CAKE sizes
// its buffer); the defaults suit 10 Gb/s and hold seconds of queue on a
// slow link, which an unresponsive flow can keep full.
//
// # Memory
//
// NewCoDel allocates everything the queue will use: 64 bytes per flow and
// for the flood guard's shared queue (one
// cache line: the CoDel controller, the flow's packet list, byte backlog,
// credit, list link and backlog class), 32 bytes per flow of overload
// bookkeeping (four stack entries per flow, so that the stale ones are
// compacted at most once per three pushes), 28 bytes per flow of flood
// guard state (owner, candidate, guests, last diverted numbers), whether
// the guard is on or not, and one node per packet of
// LimitPackets+1 (the packet's fields and the link to the next packet of
// its flow: 32 bytes for a word-sized payload, two to a cache line). The
// defaults take about 460 KB; 65536 flows and 10240 packets about 8.4 MB. [CoDelDetail.MemoryBytes] reports the figure. Nothing
// allocates afterwards, except Reconfigure when the table or the packet
// capacity changes.
//
// # Differences from RFC 8290, Linux fq_codel, ns-3 and DPDK
//
//   - Flow state is one 64-byte cache line per flow (a CoDel controller of 40
//     bytes, the flow's packet list, byte backlog, credit, list link and
//     overload class); packets live in one preallocated array of nodes
//     linked by index, 32 bytes each for a word-sized payload, so none
//     straddles two cache lines. Linux keeps the byte backlogs in a separate dense
//     array for its scan. Nothing allocates after NewCoDel.
//   - Classification uses the caller's hash mixed with a per-instance key
//     (the RFC's salted hash), not Linux's global skb hash, and a
//     multiply-shift (Linux) rather than the RFC's and ns-3's modulo. There
//     are no tc filters or priority overrides.
//   - A flow is served while its credit is not negative (RFC 8290 §4.2);
//     Linux and ns-3 rotate at zero too. An empty new flow moves to the old
//     list even if the old list is empty (RFC, ns-3); Linux deactivates it at
//     once. Neither changes who is served in the long run.
//   - One packet costs at most 64 quanta of credit, so a packet with an
//     absurd Size cannot make Dequeue rotate millions of times.
//   - The MTU guard looks at the flow's own backlog by default (RFC 8290's
//     per-queue CoDel, ns-3); Linux looks at the whole queue's so thin flows
//     can be signalled too: GlobalBacklogGuard.
//   - Overload: Linux's batch drop (RFC 8290 drops one packet:
//     DropBatchPackets = 1), repeated until both limits hold (Linux drops
//     one batch and may stay above the memory limit). The fattest flow is
//     not the exact byte maximum of RFC 8290 and Linux but a flow in the
//     same backlog class as the largest (exact below 16 bytes, otherwise
//     holding more than eight ninths of the largest backlog), the one that
//     entered that class last; Linux takes the exact maximum, the lowest
//     bucket among equals, and ns-3 the first in class order. Linux finds it
//     by scanning every flow, once per batch; when every flow holds a packet
//     or two (a flood of many distinct hashes) a batch is a packet or two,
//     so that scan runs on nearly every arrival, O(Flows) per packet. Here
//     it is O(1) amortised. Under such a flood the flow that entered the
//     top class last is often the arrival's own: if only the arrival would
//     be left to drop, it is refused instead (it never reaches the
//     DropFunc). Memory is the sum of Packet.Size, not skb truesize.
//   - The overload drops are added to the flow's CoDel count (Linux since
//     2019; ns-3 does not: KeepCountOnOverload), and the cached 1/sqrt(count)
//     is recomputed for the new count. Linux keeps the stale value, and one
//     Newton step from it at a count more than three times larger leaves the
//     iteration's basin: in a model (not yet on a kernel) the spacing then
//     collapses to microseconds and the flow loses almost every packet.
//     TestCoDelCountBumpKeepsInvSqrt guards this.
//   - Dequeue drops at most 256 packets in one call,
//     over all flows.
//   - EnqueueBatch and DequeueBatch take and give bursts with one time for
//     the burst, with exactly the outcome of the loop of single calls.
//   - Reconfigure keeps every flow's state when Flows and Seed are unchanged
//     (a zero Seed keeps the key in use);
//     otherwise it re-hashes the queued packets into a new table (keeping
//     their order within each hash) and CoDel starts afresh. Lowering a
//     limit below the occupancy refuses arrivals until the queue drains
//     (Linux drops from the head at once).
//   - The CoDel differences (exact control law, RFC deadline and count
//     rules by default, ECN and CE threshold details) are those of package
//     codel.
//   - NQB: with CEThreshold, CEThresholdECT1Only and CEThresholdNQB,
//     [CoDel.EnqueueDSCP] selects ECN-capable packets with DSCP 45 (the
//     Non-Queue-Building PHB, RFC 9956) for the CE threshold as it
//     selects ECT(1), since RFC 9956 asks that NQB traffic share the L4S
//     treatment where a shallow queue exists. Linux fq_codel has no NQB
//     selector: its ce_threshold_selector matches one pattern of the DS
//     byte, so it can select ECT(1) or DSCP 45, not both. A Not-ECT NQB
//     packet is never marked by the threshold (CoDel's own drops apply as
//     to any packet), and NQB packets get no scheduling priority beyond
//     the sparse-flow rule. The selection travels with the queued packet
//     in a bit above the ECN field that never reaches the caller or the
//     DropFunc; Reconfigure clears it when the selector goes.
//   - The flood guard (above; DisableFloodGuard turns it off): a packet of
//     a hash that has not recurred may wait in a shared queue instead of
//     its bucket, and a bucket that was empty gets sparse-flow priority
//     only for its owner's and its guests' packets. RFC 8290, Linux and
//     ns-3 give every packet its bucket and every empty bucket priority.
//     With the guard off the queue is RFC 8290's scheduler exactly (the
//     reference model's tests run it so).
//   - DPDK has no FQ-CoDel; its rte_sched offers WRR with RED or PIE.
//   - One flow may fill the whole queue, so CoDel's limits apply to the
//     shared ones: Validate refuses a LimitPackets of 1 or 2 and a
//     MemoryLimitBytes below 3×MTUBytes, with which CoDel could never
//     signal (see package codel). Linux fq_codel checks neither; its quantum
//     is raised to at least 256 bytes and refused above 2^20 (since 2021),
//     where we refuse both ends. With the batch overload drop (which removes
//     up to half the fattest flow's bytes), a memory limit of a few MTUs
//     still leaves CoDel rarely able to act on full-size packets: size the
//     limits with CoDelConfigForLink.
//
// # FQ-COBALT
//
// [Cobalt] runs the scheduler above with a COBALT controller (package
// cobalt) per flow instead of CoDel: at dequeue the flow's CoDel half
// drops or marks as CoDel does, and BLUE drops every packet the CoDel half
// has not dropped, CE-marked ones included (so ECN senders that ignore
// marks are policed too), with the flow's probability, which rises when a
// packet leaves after more than BlueThreshold or when an overload drop
// hits the flow, and decays (1/4096 at most once per Target) each time the
// flow's last packet leaves. BLUE's probability is the flow's own: an
// unresponsive flow's rises while every other flow's stays 0.
// Its defaults are ns-3's FqCobalt: target 5 ms, interval 100 ms, ECN on,
// BLUE steps 1/256 and 1/4096, a 400 ms ceiling, 1024 flows, 10240
// packets, batches of 64.
//
// # FQ-PIE
//
// [PIE] runs the scheduler with a PIE controller (package pie) per flow,
// deciding at enqueue: an arrival may be refused or marked on its flow's
// probability, with PIE's safeguards looking at its flow (no early drop
// while the flow holds at most two mean packets, as Linux fq_pie). Each
// flow's probability is updated every TUpdate from the age of its head
// packet; the updates of a flow run when its next packet arrives or
// leaves, replaying the periods that passed exactly as a per-flow timer
// would have (ns-3 gives each flow its own timer; Linux runs one timer
// over all flows, so its flows update at shared instants where here each
// flow's period starts at its first packet). Defaults: target and
// update period 15 ms, alpha 0.125, beta 1.25, a 150 ms burst allowance per
// flow, 1024 flows, 10240 packets, quantum 1514, 32 MiB (Linux fq_pie),
// ECN marking while the probability is below 10% (ns-3; Linux's is off by
// default), no derandomization (ns-3; Linux always derandomizes:
// Derandomize).
//
// # Differences of FQ-COBALT and FQ-PIE from Linux and ns-3
//
//   - The scheduler is FQ-CoDel's (above), with its choices: a flow is
//     served while its credit is not negative, an empty new flow moves to
//     the old list, a keyed multiply-shift hash instead of ns-3's modulo of
//     a perturbed hash (and no packet filters, so no packet is dropped as
//     unclassified), no set-associative hashing, a packet costs at most 64
//     quanta.
//   - Overload, FQ-PIE: Linux fq_pie tail-drops the arrival at its packet
//     limit whatever its flow and only counts memory above memory_limit;
//     here, as in ns-3, the fattest flow loses a batch from its head, and
//     the memory limit is enforced like the packet limit (Linux's
//     overmemory counter becomes EvictedOvermemory). The flow that loses
//     packets restarts its derandomization, as Linux restarts the arrival's
//     flow's on a tail drop.
//   - Overload, FQ-COBALT: the fattest flow's COBALT is told its queue
//     overflowed (BLUE rises, CoDel signals at once), as Linux CAKE does;
//     ns-3's FqCobalt takes the packets from under its child queue without
//     telling it, so BLUE rises only through the ceiling.
//   - FQ-COBALT's BLUE decays when a flow's last packet leaves; ns-3 and
//     CAKE decay it when a dequeue finds the flow empty, which under light
//     traffic served one packet at a time may never happen.
//   - FQ-COBALT and FQ-PIE give each flow its own random stream (as
//     ns-3's children have), derived from Seed.
//   - The flood guard is the scheduler's, with FQ-COBALT's and FQ-PIE's
//     Target, at most 5 ms, as the shared queue's sojourn limit (5 ms for
//     both by default; FQ-PIE's 15 ms Target is cut); Linux and ns-3 have
//     none.
//   - Per-flow state is kept for the life of the queue (ns-3 creates
//     children lazily and keeps them; Linux preallocates): a flow that goes
//     idle keeps its probability, which decays (PIE's idle decay of 2% per
//     update, replayed when the flow returns; BLUE's at its next
//     departures).
//   - No CE threshold or L4S mode (ns-3's CeThreshold and UseL4s), no tc
//     filters or priority overrides (Linux), and one Dequeue drops at most
//     256 packets in FQ-COBALT.
//   - The differences of the per-flow controllers themselves (exact
//     control law, full 64-bit BLUE stamps, fixed-point PIE, its time
//     policy) are those of packages cobalt and pie.
//   - The per-flow AQM's limit rules apply to the shared limits, which one
//     flow may fill: FQ-COBALT refuses a LimitPackets of 1 and a
//     MemoryLimitBytes below two full-size packets, FQ-PIE a LimitPackets
//     below 4, a MemoryLimitBytes below 4×MeanPacketBytes and, with
//     RateEstimator, a DequeueThresholdBytes that the buffer (the memory
//     limit, or the packet limit in mean-size packets) cannot hold with
//     2×MeanPacketBytes to spare (see packages cobalt and pie). Linux fq_pie
//     and ns-3 check none of them.
//
// # Time
//
// Every method takes now, an [aqm.Time] in nanoseconds from the caller's
// monotonic clock; the queues never read a clock and have no timers. They
// follow the time policy of package aqm: time that goes backwards counts as
// zero elapsed (a sojourn time is never negative), and the instants a
// flow's CoDel stores (its deadline and next drop) follow package codel's
// handling of readings far in the future, so light traffic gets through as
// on a fresh queue shortly after a clock glitch.
//
// FQ-COBALT and FQ-PIE follow the same policy through their controllers:
// a COBALT next-signal time or BLUE stamp, or a PIE update schedule, left
// further ahead of now than it could have been scheduled is re-anchored at
// the flow's next packet.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. An arrival that takes the queue over LimitPackets is accepted and packets are
// dropped from the fattest flow as for any arrival (the arrival is refused if it is chosen);
// one with more segments than LimitPackets is refused at once. Quanta and deficits are bytes;
// DropBatchPackets bounds the packets one overload step drops, a super-packet counting one.
//
// # Concurrency
//
// The queues are not safe for concurrent use.
package fq
