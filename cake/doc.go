// Package cake implements CAKE, Common Applications Kept Enhanced
// (Høiland-Jørgensen, Täht and Morton, "Piece of CAKE: A Comprehensive
// Queue Management Solution for Home Gateways", 2018; Linux sch_cake and
// tc-cake(8)): one queue that shapes a link, isolates flows and hosts,
// honours DiffServ, and keeps delay low with COBALT in every flow queue.
//
// # Algorithm
//
// A packet goes to a tin by its DSCP ([TinMode]), then to one of the
// tin's 1024 flow queues by an 8-way set-associative lookup of its keyed
// flow hash ([FlowMode] says which hash: the flow's, a host's or a host
// pair's). The home way is hash mod 1024; the set is the 8 ways around
// it; a way tagged with the hash is reused, else a free way is taken,
// else the home way is shared (a collision, counted).
//
// Dequeue picks a tin, then a flow by DRR++: new (sparse) flows before
// old (bulk) ones, a flow sends while its deficit is positive and gets
//
//	quantum = (tinQuantum·⌊65535/load⌋ + rand16) >> 16
//
// at each refill, where load is the number of bulk flows of the flow's
// busier host in the dual and triple modes (1 otherwise): a host's bulk
// flows share one flow's worth, so a host with eight flows gets what a
// host with one gets. The flow's COBALT ([cobalt.Controller]: CoDel's
// control law and BLUE) decides to deliver, mark CE or drop; BLUE drops
// ECN-capable packets too, marked ones included, as Linux does. The last
// packet of a flow queue is always delivered, CE-marked if the CoDel half
// marked it before BLUE chose to drop it. A flow found empty waits on
// a decaying list until its COBALT state is at rest, keeping its way.
//
// With a Rate, a deficit-mode shaper (a virtual clock, no bucket) gates
// Dequeue: each packet moves the link clock on by its transmission time
//
//	next += adjusted length · 8 / Rate
//
// and nothing leaves before the clock is due ([Queue.NextDeparture]
// says when; credit never accumulates across idle). A failsafe clock at
// 2/3 of the rate, which ignores drops, keeps packets flowing in ingress
// mode. Each tin has its own clock at its threshold rate: the highest tin
// whose clock is due is served (strict priority up to its threshold),
// else the tin whose clock is earliest; unshaped, tins share by weighted
// round robin. COBALT's target and interval and the flow quantum of each
// tin follow its threshold rate:
//
//	mtuTime  = 1514 bytes at the tin's rate
//	target   = max(Target, 1.5·mtuTime)
//	interval = max(Interval + target − Target, 2·target)
//	quantum  = clamp(rate/4096, 300, 1514) bytes (1514 unshaped)
//
// The adjusted length adds Overhead, raises to MPU, and applies ATM cell
// framing (⌈n/48⌉·53) or PTM 64b/65b coding (n + ⌈n/64⌉); see
// [Overhead] for tc-cake's presets.
//
// When the packets or bytes queued exceed the limits, the head packet of
// the longest flow queue over all tins (by bytes) is dropped and its
// COBALT told of the overflow (BLUE's probability rises). The longest
// queue is the top of a max-heap over every flow queue's backlog, built
// on the first overflow and kept up to date while overflows recur, so an
// arrival never scans the flow table.
//
// The ACK filter ([ACKFilter]) looks at each arriving TCP ACK (ACK set,
// SYN clear) and scans the earlier packets of its flow queue for ACKs of
// the same connection and direction that it makes redundant: pure ACKs
// (no data; no flag but ACK, ECE, CWR; only NOP, end-of-list, MD5, SACK
// and timestamp options) whose cumulative ACK, timestamps and SACK blocks
// the arrival covers, and which are not duplicate ACKs the arrival does
// not supersede with more SACK. When two such ACKs with the same ECE/CWR
// bits are found, the older is dropped; the aggressive mode also drops a
// single one queued right before the arrival. At most one ACK is dropped
// per arrival; one that carries anything new is never dropped.
//
// # Statistics
//
// [Queue.Stats] has the counters every aqmkit queue keeps; [Queue.Detail]
// adds what "tc -s qdisc show" prints for cake, per tin ([TinDetail]) and
// for the queue, and lists it as metrics ([Queue.Metrics]);
// [Queue.Flow] shows one flow queue as "tc -s class show" does.
//
// # Per-packet facts
//
// CAKE needs more per packet than [aqm.Meta]: the host hashes, the DSCP
// and, for the ACK filter, a summary of the TCP header. [aqm.Packet] stays
// as it is, small enough to stay in registers; the facts travel in an
// [Info] value passed beside it to [Queue.EnqueueInfo] (no callbacks on
// the hot path). A [Classifier] fills both from raw IPv4 or IPv6 bytes.
// The plain [Queue.Enqueue] (the [aqm.Queue] contract) uses a zero Info:
// p.Hash is the flow hash, host hashes are zero, the tin is best effort,
// the ACK filter is not involved. The ACK summaries of queued packets are
// kept in an array beside the packet slots, allocated only when the
// filter is on.
//
// # Parameters
//
//	field             default                               unit / range
//	Rate              0 (unshaped)                          aqm.Rate
//	TinMode           DiffServ3                             besteffort, diffserv3/4/8, precedence
//	FlowMode          TripleIsolate                         8 modes
//	Target, Interval  5 ms, 100 ms                          per tin raised at low rates
//	Overhead, MPU     0, 0                                  bytes, [-64, 256], [0, 256]
//	Framing           NoFraming                             ATM, PTM
//	Ingress           off
//	ACKFilter         off                                   conservative, aggressive
//	LimitPackets      10240                                 packets, at most 2^20
//	MemoryLimitBytes  Rate·4·Interval, ≥ 4 MiB, ≤ 10240·1514 bytes; unshaped 10240·1514
//	Seed              0: drawn from crypto/rand             a fixed seed for tests
//
// DSCP maps (tin index: priority, higher first when under threshold):
//
//	diffserv3  0 Best Effort: others; 1 Bulk: CS1, LE; 2 Voice: CS7, CS6, EF, VA, DSCP 4
//	           thresholds 100 %, 1/16, 1/4; weights 1024, 64, 256
//	diffserv4  0 Best Effort: others (AF1x, DSCP 2); 1 Bulk: CS1, LE;
//	           2 Video: CS2, AF2x, CS3, AF3x, AF4x, DSCP 4; 3 Voice: CS4, CS5, VA, EF, CS6, CS7
//	           thresholds 100 %, 1/16, 1/2, 1/4; weights 1024, 64, 512, 256
//	diffserv8  0 LE; 1 CS1, AF1x, DSCP 2; 2 others; 3 CS3, AF3x, AF4x; 4 AF2x, DSCP 4;
//	           5 CS2; 6 CS4, CS5, VA, EF; 7 CS6, CS7
//	           thresholds rate·(7/8)^i; weights 256·(7/8)^i
//	precedence tin = DSCP >> 3, as diffserv8's thresholds
//
// NQB (DSCP 45, RFC 9956) has no entry of its own, as in Linux's sch_cake
// tables: it is best effort in diffserv3 and diffserv4 (tin 0), tin 2 in
// diffserv8 and tin 5 (45 >> 3) in precedence.
//
// # Flood guard
//
// A sender that picks new ports for every packet makes every packet a new
// flow: each claims a way of its set (or takes a busy one over), gets
// sparse-flow priority, and the flood fills the sets, so Linux's cake
// starves the persistent flows; host isolation cannot help when the
// sender shares a host with its victims. The guard, on unless
// DisableFloodGuard is set, lets a hash without a way claim a free one
// only if it recurs (it was the last new hash its set saw) or the
// admission budget has a token (one per eight packets sent, up to 64
// saved); it never takes a busy way over. Every other new-flow packet
// waits in its tin's shared queue, a flow queue with its own COBALT that
// is served on the old list only and keeps no packet longer than the
// tin's target (up to two older heads are dropped at each arrival it
// takes, [aqm.DroppedOverlimit], GuardDropped in the [Detail]). A hash
// gets a way only when none of its packets can still be in the shared
// queue, so every flow keeps its order. Flows that already have a way,
// and a flood on one 5-tuple, are served as without the guard; ordinary
// traffic starts far fewer flows than one per eight packets. The ACK
// filter does not look into the shared queue.
//
// # Differences from Linux sch_cake
//
//   - The flood guard (above): with it off, new flows claim ways and
//     take busy ones over as in Linux.
//   - COBALT's spacing at a count of 0 or 1 is a full interval even in a
//     never-used flow queue; Linux leaves its cached inverse square root
//     at zero in a fresh slot, which gives a zero spacing there.
//   - COBALT's control law is computed in 64 bits with an exact inverse
//     square root; Linux truncates the interval to 32 bits of nanoseconds
//     (intervals above 4.29 s wrap).
//   - Host bulk counts are clamped to [0, 1024] on every change, and the
//     dithered quantum is used when a sparse flow starts, as Linux does
//     since the fixes for an underflowing count (CVE-2025-21647).
//   - Host-only modes (srchost, dsthost, hosts) hash only the host
//     addresses, as Linux does again after a regression that mixed in the
//     flow hash.
//   - TCP options are parsed with every length checked (Linux once read
//     past the header).
//   - The byte limit counts Packet.Size, not the kernel's truesize, and
//     there is a packet limit (LimitPackets) because packet slots are
//     preallocated; Linux has only the memory limit.
//   - Per-tin Packets and Bytes count arrivals, and MemoryUsed is the
//     peak, as in Linux (both are documented, not "fixed").
//   - An arrival whose own queue is pruned away is refused
//     ([aqm.DroppedOverlimit]); Linux returns congestion for it.
//   - Not implemented: GSO splitting (a packet is charged as one), the
//     autorate-ingress estimator, cake_mq, NAT lookup, fwmark, tc filter
//     and skb priority overrides, and the L2 header subtraction of the
//     overhead keywords (Size is taken as the IP length; the presets set
//     Overhead, MPU and Framing rather than accumulating as tc's keywords
//     do).
//   - No timers: decaying flows decay when Dequeue visits them (one per
//     call, as Linux's order), not on a timer after the queue empties.
//   - A flow's and a tin's deficit are charged at most 64 KiB per packet,
//     so an absurd Size cannot make the round robin spin.
//   - ACK-filter drops reach the DropFunc as [aqm.DroppedEarly].
//   - Shaped, Dequeue returns false while the shaper holds packets back
//     ([aqm.Paced]): drive a shaped queue with [Queue.NextDeparture], as
//     the front in package front does. Unshaped, it returns false only
//     when empty, and package aqm/aqmtest checks the contract.
//   - The [Classifier]'s flow key is package iphdr's, endpoints in
//     order: ICMP echo identifiers, ESP SPIs and GRE keys are part of it,
//     AH is walked through, fragments (the first one too) are keyed on
//     addresses and protocol alone and get no ACK summary, and no tunnel
//     is entered but IPv6 in IPv4. Linux uses the kernel's flow dissector.
//   - Validate refuses a LimitPackets of 1 and a MemoryLimitBytes below
//     2×MTU: CAKE never drops a flow's last packet, so such a queue drops
//     only in its pruner, as a FIFO. Linux's packet limit is fixed (10240)
//     and its memlimit has no floor.
//
// # Time
//
// The queue never reads a clock; every method takes now. Time that goes
// backwards counts as no time. The shaper's link clock is never more than
// a second plus the largest packet's transmission time ahead of now, the
// failsafe clock never more than that ahead of the link clock, and a tin
// clock likewise at its rate: a clock found further ahead (after a reading
// in the far future) is brought back to now, so light traffic flows again
// at once. A clock behind now keeps its lag while packets are queued (a
// catch-up burst, as Linux) and is reset when the queue empties. Each
// flow's COBALT applies the same policy to its own instants.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. An overflow prunes the fattest flow as for any arrival; one with more segments
// than LimitPackets is refused at once. The shaper charges every segment its Overhead, MPU and
// Framing (the Size split evenly), as Linux does for a GSO packet it does not split. CAKE does
// not split super-packets (Linux's split-gso): split them before the queue where that matters.
//
// # Concurrency
//
// A Queue and a Classifier are not safe for concurrent use; give each
// goroutine its own or guard them with a mutex.
package cake
