// Package shaper releases the packets of any [aqm.Queue] at a configured
// rate, so that a Go program owns its bottleneck and the queue's AQM has a
// queue to manage: the user-space counterpart of putting Linux tbf or HTB in
// front of fq_codel.
//
// # Algorithm
//
// A token bucket of depth BurstBytes refills at RateBitsPerSec. A packet may
// leave whenever the bucket is not in debt; it then takes its whole size from
// the bucket, which may go negative. So with rate r (bytes/s here), burst B
// and largest packet M, the bytes released in any interval of length t are
// at most
//
//	B + M + r·t
//
// and a backlogged queue is drained at exactly r in the long run: credit is
// kept in units of 1e-9 bit, in which r bits/s earns exactly r units per
// nanosecond, so refill and wait are exact integer operations with no
// rounding drift however long the run.
//
// The packet is taken from the queue (Dequeue) only at the moment it leaves,
// never staged in the shaper, so the AQM measures each packet's sojourn up to
// its actual departure.
//
// # Parameters
//
//	Field           Default                         Unit    Reference
//	RateBitsPerSec  0 = unlimited                   bit/s   tc tbf rate, CAKE bandwidth
//	BurstBytes      rate × 2 ms, at least 3028      bytes   tc tbf burst
//
// # Differences from Linux tbf, CAKE and gVisor tbf
//
//   - A packet leaves when the bucket is not in debt and may overdraw it
//     (gVisor's rule), instead of waiting until the bucket holds its whole
//     size (Linux tbf). An aqm.Queue has no peek, and this rule needs none:
//     the wait is known before the next packet is dequeued. Linux instead
//     dequeues the child's head packet and parks it in the shaper, where it
//     waits uncounted by the AQM. The cost is at most one packet of extra
//     burst.
//   - No packet is too big: Linux tbf drops packets above its bucket size; here
//     a huge packet is sent and its debt repaid (sizes above 1 GiB are
//     charged as 1 GiB, to bound the arithmetic).
//   - No peak rate (tbf peakrate/mtu) and no framing compensation (CAKE
//     overhead/mpu/atm): count framing in [aqm.Packet.Size] yourself.
//   - The rate changes at runtime with [Shaper.SetRate] without losing credit
//     or debt, which CAKE offers through tc change and which links such as
//     LTE and Starlink need many times a second.
//   - Rate zero means unlimited, as in CAKE.
//
// # Time
//
// [Shaper.Next] takes the time as an argument; [Shaper.Run], [Shaper.Enqueue]
// and [Shaper.SetRate] read the shaper's [clock.Clock] once per call (Run:
// once per wake-up, for a whole batch of due packets). Time that goes
// backwards earns no credit. A long idle gap fills the bucket in closed form.
// Run sleeps on one reusable timer until the computed instant, never one
// timer per packet; when the timer fires late, the credit earned meanwhile
// (up to the burst) lets it catch up, so the long-run rate does not depend on
// timer accuracy as long as lateness stays within the burst time.
//
// # Concurrency
//
// A Shaper is safe for concurrent use: producers call Enqueue from any
// goroutine, a rate controller calls SetRate from another, and one consumer
// runs Run (or an event loop calls Next). One mutex guards the queue and the
// bucket; Run calls its send callback outside it. The queue's DropFunc runs
// under that mutex and must not call the shaper.
package shaper
