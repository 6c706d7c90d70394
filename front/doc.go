// Package front puts an [aqm.Queue] on a real packet path: producers on any
// goroutine, one consumer that blocks until a packet may leave, an optional
// rate at which packets leave, a clean shutdown, and counters an exporter can
// read at any time.
//
//	q, _ := fq.NewCoDel(fq.CoDelConfig{}, onDrop)
//	f, _ := front.New(q, nil, front.Config{Rate: 95 * aqm.Mbit})
//	go f.Run(ctx, func(ps []aqm.Packet[Buf]) { sendmmsg(ps) })
//	v, err := f.Enqueue(p) // from any goroutine; err is ErrClosed after Close
//
// A [Front] is one queue behind one lock, the user-space counterpart of a
// Linux qdisc with tbf or CAKE's shaper in front of it. A [Sharded] front
// spreads flows over several such fronts, as Linux's mq runs one qdisc per
// transmit queue, for producers on many cores.
//
// # Producers
//
// [Front.Enqueue] takes one packet, [Front.EnqueueBatch] a burst (a TUN
// read of up to 128 packets, a recvmmsg): one lock and one clock reading
// per call, the queue's own burst path when it has one ([aqm.BatchQueue]),
// and exactly the outcome of the same packets enqueued one by one at that
// instant. A producer that adds to an empty queue wakes the consumer if it
// sleeps; a consumer that is awake costs producers nothing, not even a
// channel operation.
//
// # Consumer
//
// [Front.DequeueBatch] blocks until a packet may leave, then takes as many as
// may leave at that instant into the caller's buffer, under one lock and one
// clock reading. [Front.Run] loops over it and hands each batch to a send
// function, for senders that use sendmmsg or GSO. [Front.TryDequeueBatch] is
// the non-blocking form for event loops: it says how long to wait when
// nothing may leave yet. A blocking consumer that finds the queue empty
// yields to other goroutines a few times, checking for arrivals, before it
// parks, so a steady stream of batches keeps it running without a park and
// a wake-up per batch. A packet is taken from the queue (Dequeue) only at
// the moment it leaves, never held in the front on its way out, so the AQM
// measures each packet's sojourn up to its actual departure.
//
// # Staged hand-over
//
// By default a producer runs the queue's Enqueue itself, under the lock, and
// gets its verdict. The queue's state (a fair queue's flow table, a packet's
// list node) is then written on the producer's core and read on the
// consumer's, and those cache lines cross between cores with every batch,
// which can make a fair queue behind a sharded front cost several times what
// it costs on one thread. With [Config.Staged], producers only append their
// packets to a short hand-over buffer, each call stamped with its arrival
// instant, and the consumer moves them into the queue at those instants
// before each look, so the queue's work and memory stay on the consumer's
// core. docs/guide/performance.md has what this saves on measured machines and
// how to measure it on yours.
//
// What a staged producer gives up is the verdict: it gets [aqm.Enqueued]
// for every packet handed over, and the packets the queue refuses when the
// consumer moves them in go to [Front.OnRefused]'s function (they are in
// the queue's Stats either way). The AQM still judges every packet at its
// arrival instant, and the sojourn runs from the hand-over. When the
// consumer is slow or asleep (a low rate), at most 256 packets
// wait in the hand-over; the producer that finds it full moves them into
// the queue itself, so the AQM's view lags by at most that many packets and
// nothing is refused for lack of room. A consumer asleep until the next
// departure the rate allows is not woken by a hand-over (nothing could leave
// earlier); one asleep on an empty queue is. Len and Backlog count handed-over
// packets; Stats counts them once they are in the queue, and
// [Detail.Staged] counts those still in the hand-over.
//
// # Rate
//
// With [Config.Rate] set, packets leave through a token bucket of depth
// [Config.BurstBytes]. A packet may leave whenever the bucket is not in debt;
// it then takes its whole size from the bucket, which may go negative. So
// with rate r (bytes/s here), burst B and largest packet M, the bytes
// released in any interval of length t are at most
//
//	B + M + r·t
//
// and a backlogged queue is drained at exactly r in the long run: credit is
// kept in units of 1e-9 bit, in which r bits/s earns exactly r units per
// nanosecond, so refill and wait are exact integer operations with no
// rounding drift however long the run. A blocked consumer sleeps on one
// reusable timer until the next departure; when the timer fires late, the
// credit earned meanwhile (up to the burst) lets it catch up, so the
// long-run rate does not depend on timer accuracy as long as the lateness
// stays within the burst time. [Front.SetRate] changes the rate at runtime
// without losing credit or debt.
//
// A blocking consumer does not wake at each departure instant: it sleeps
// [Config.WakeSlack] longer (by default 1 ms, or a frame's time at rates
// below 12 Mbit/s), so that the packets that became due meanwhile leave as
// one batch, from one look at the queue. Linux's shapers likewise let
// their watchdog timers fire within a slack (sch_fq's timer_slack). At 50
// Mbit/s with full-size packets that is one wake-up per five packets
// instead of one per packet; the price is up to the slack of extra delay,
// which the AQM sees as sojourn. The slack is cut so that the credit it
// earns stays inside the bucket, and [Front.TryDequeueBatch] still
// reports the exact wait.
//
// A queue that shapes its own output, such as a CAKE queue with a rate,
// implements [aqm.Paced]: its Dequeue refuses while it holds packets back,
// and NextDeparture says until when. The consumer then sleeps until that
// instant on the same timer, as it does for its own rate, instead of taking
// the queue for empty (and waiting for an arrival) or looking again at
// once (and spinning). With both a front rate and a paced queue, the
// slower of the two governs each departure.
//
//	Field       Default                       Unit    Reference
//	Rate        0 = unlimited                 bit/s   tc tbf rate, CAKE bandwidth
//	BurstBytes  rate × 5 ms, at least 3028    bytes   tc tbf burst
//	Staged      false                         -       (see Staged hand-over)
//	WakeSlack   max(1 ms, 1514 B at the rate)   time    sch_fq timer_slack
//
// # One queue per key
//
// Package keyed builds one queue per key (a VPN's peer, a proxy's
// destination) behind one deficit round robin, each key with an optional
// rate of its own and all keys with an optional shared one. A keyed.Queue is
// an [aqm.Queue] that paces itself ([aqm.Paced]): give it to [New] with no
// front rate, so that the consumer sleeps until its next departure, or to
// [NewSharded] to spread keys over cores.
//
// # Raw IP packets
//
// [NewIP] puts a queue on a path of raw IP packets (a TUN device, a
// userspace router or VPN) held in [Buf]s from a [Pool]. The IP front
// classifies every packet itself, before the queue sees it, on the single
// and the batch path alike: with the queue's own classifier when it is an
// [IPQueue] (a CAKE queue is one, and so keeps its host isolation, DiffServ
// tins and ACK filter), or with iphdr's keyed flow hash for any other
// queue wrapped by [HashIP]. Classification runs in the producer's
// goroutine, outside the lock. On the way out it writes CE into the header
// of each packet the queue marked (iphdr.SetCE, which keeps the IPv4
// checksum right), and drops a marked packet whose header cannot carry CE
// rather than send it unmarked. Every buffer the queue or the closed front
// refuses goes back to the pool at once; give the pool's [Pool.Drop] to the
// queue so that its drops come back too, and [IP.Run] puts each sent batch
// back. [IPDetail] counts what could not be read, refused, rewritten and
// dropped for want of a CE codepoint.
//
// A queue that paces itself ([aqm.Paced]: CAKE, which shapes when its
// Config has a Rate) is refused a front rate, with an [aqm.ConfigError]
// naming Rate, at NewIP, SetRate and Reconfigure: two shapers in a row
// waste wake-ups, and the front's would not see the tins or the overhead.
// Give the rate to the queue (cake.ConfigForLink) and leave the front's at
// zero.
//
// # Shutdown
//
// [Front.Close] refuses new packets: Enqueue and EnqueueBatch then return
// [ErrClosed] with the verdict [aqm.DroppedOverlimit] (a full queue returns
// the same verdict and a nil error, so the two are told apart by the error,
// while code that only checks Accepted keeps the refused packet either way).
// Close wakes a blocked consumer, which goes on taking what was queued, at
// the rate, and then gets ErrClosed (Run returns nil). To discard the rest
// instead, call [Front.Flush] after Close: it hands every queued packet to a
// DropFunc of your choice, typically the one you gave the queue (an IP
// front's Flush(nil) puts the buffers back into its pool).
//
// # One shape
//
// Every front ([Front], [Sharded], [IP]) has the same methods for the same
// things: SetRate(r) error (as cake.Queue has, so that each is an
// autorate.Setter), Flush(drop), Close, Stats, Detail, Metrics, and a
// Reconfigure that takes the type its constructor takes and Config
// returns, defaults filled in. A field fixed when the front is made
// (Staged, Shards, SplitRate, Seed, Pool, VnetHdr) is refused by
// Reconfigure with an [aqm.ConfigError] naming it when changed, and kept
// when zero.
//
// # Time
//
// The front reads its [clock.Clock] once per Enqueue, per EnqueueBatch, and
// per look of the consumer at the queue (so once per batch), never once per
// packet, and always under its lock, so the queue sees instants that never
// go backwards. The token bucket follows the time policy of package aqm:
// a reading that goes backwards earns no credit and re-anchors the bucket,
// so one reading far in the future costs nothing once time is normal again;
// a long idle gap fills the bucket in closed form. The clock must be safe
// for concurrent use ([clock.Mono] and
// [clock.Coarse] are; [clock.Manual] is only for single-goroutine tests).
//
// With a [clock.Coarse] clock (the default when New gets a nil clock)
// producers read the time in about a nanosecond instead of tens: the
// consumer refreshes the clock on every look at the queue, and a producer
// that finds the queue empty refreshes it too unless a consumer is awake
// in a blocking dequeue, because the consumer may have slept. A packet's arrival stamp is then at most one consumer wake-up
// interval old: with a rate, at most the transmission time of a packet or
// two; without one, the time the consumer spends between batches. Run a
// ticker ([clock.Coarse.Run]) to bound it further.
//
// # Concurrency
//
// All methods are safe for concurrent use. Several consumers are allowed and
// each packet still goes to exactly one of them, but a front is meant for
// one. The queue's DropFunc runs under the front's lock, inside whichever
// call triggered the drop; it must not call the front.
//
// # Metrics
//
// [Front.Stats] is the queue's [aqm.Stats]; [Front.Detail] is the front's
// own state (rate, credit, wake-ups, refusals after Close). [Front.Metrics]
// lists the queue's metrics (its Stats, then its Detail's) and the front's,
// whose names all begin "front_", as [aqm.Metric]s from one snapshot taken
// under the lock, so a *Front is an [aqm.MetricSource] that an exporter
// (package aqmexpvar) may read from any goroutine.
//
// # Differences from Linux tbf, CAKE, gVisor and a channel
//
//   - A packet leaves when the bucket is not in debt and may overdraw it
//     (gVisor tbf's rule), instead of waiting until the bucket holds its
//     whole size (Linux tbf). An aqm.Queue has no peek, and this rule needs
//     none: the wait is known before the next packet is dequeued. Linux
//     instead dequeues the child's head packet and parks it in the shaper,
//     where it waits uncounted by the AQM. The cost is at most one packet of
//     extra burst.
//   - No packet is too big: Linux tbf drops packets above its bucket size;
//     here a huge packet is sent and its debt repaid (sizes above 1 GiB are
//     charged as 1 GiB, to bound the arithmetic).
//   - No peak rate (tbf peakrate/mtu) and no framing compensation (CAKE
//     overhead/mpu/atm): count framing in [aqm.Packet.Size] yourself.
//   - Rate zero means unlimited, as in CAKE.
//   - The front starts no goroutines: the consumer is yours, and cancelling
//     its context or closing the front releases it. gVisor's fifo starts one
//     dispatcher goroutine per queue.
//   - A buffered channel is a drop-tail FIFO without sojourn times and
//     panics on a send after close; a front keeps the queue's policy and
//     counters and refuses with [ErrClosed].
package front
