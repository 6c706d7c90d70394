// Package keyed implements one queue per key (a VPN's peer, a proxy's
// destination, a tenant) behind one deficit round robin in bytes, each key
// with an optional token bucket of its own and all keys with an optional
// shared one.
//
//	k, _ := keyed.New(peerOf, func(peer uint32) (aqm.Queue[Buf], error) {
//		return fq.NewCoDel[Buf](fq.CoDelConfig{}, onDrop)
//	}, keyed.Config{KeyRate: 20 * aqm.Mbit, Rate: 95 * aqm.Mbit})
//	f, _ := front.New[Buf](k, nil, front.Config{}) // no front rate: k paces itself
//
// A key's queue is built by the caller's constructor when the key's first
// packet arrives, and let go when it has stayed empty for
// [Config.IdleTime]; [Config.MaxKeys] bounds the keys. [Queue] is
// documented on its type: how keys come and go, how they take turns, and
// what happens at the bound.
//
// # Parameters
//
//	field          default                     unit    reference
//	MaxKeys        1024 (at most 65536)        keys    -
//	IdleTime       1 s (at most 1 h)           time    -
//	QuantumBytes   1514                        bytes   fq_codel quantum
//	KeyRate        0 = none                    bit/s   tc tbf rate, per key
//	KeyBurstBytes  KeyRate × 5 ms, ≥ 3028      bytes   tc tbf burst
//	Rate           0 = none                    bit/s   tc tbf rate, all keys
//	BurstBytes     Rate × 5 ms, ≥ 3028         bytes   tc tbf burst
//
// # Differences from Linux sch_drr, tbf and sch_fq
//
//   - Keys are classes made on demand from a key function, as sch_fq makes
//     its flows, not classes configured in advance with tc as in sch_drr;
//     each key's queue is whatever the constructor returns.
//   - A key that becomes active again keeps any deficit debt and gets at
//     most one quantum, so going idle between packets buys no extra share;
//     there is no new-flow priority as in fq_codel and sch_fq.
//   - The buckets, per key and shared, follow the front's debt rule (gVisor
//     tbf's): a packet leaves when the bucket is not in debt and may
//     overdraw it, instead of waiting until the bucket holds its whole size
//     (Linux tbf). A key held back by its bucket waits in a heap by the
//     instant it may send, not in the round robin.
//   - The number of keys is bounded: at the bound a new key takes the slot
//     of the idlest key (its queue empty); when every key has packets
//     queued the packet is refused with [aqm.DroppedOverlimit], never by
//     evicting a backlogged key.
//
// # Time
//
// Every method takes now, an [aqm.Time] in nanoseconds from the caller's
// monotonic clock; the queue never reads a clock. The buckets follow the
// time policy of package aqm: time that goes backwards earns no credit and
// re-anchors the bucket, a long idle gap fills it in closed form. A held
// key's release instant lying further ahead of now than it was scheduled
// is moved back to that span from now, and keys go idle in an order that
// never goes backwards, so reclamation stays O(1) per key.
//
// # Memory
//
// The key slots, the key index and the heap are sized for MaxKeys when the
// Queue is made; [Detail.MemoryBytes] says what they took. A packet for a
// key that has a queue allocates nothing; building a key's queue allocates
// what the constructor allocates.
//
// # Concurrency
//
// A Queue is not safe for concurrent use; put it behind package front to
// share it between goroutines, or build one per shard of a front.Sharded
// to spread keys over cores.
package keyed

import "github.com/aqmkit/aqmkit/aqm"

var (
	_ aqm.Queue[int]      = (*Queue[int, int])(nil)
	_ aqm.BatchQueue[int] = (*Queue[int, int])(nil)
	_ aqm.Paced           = (*Queue[int, int])(nil)
	_ aqm.MetricSource    = (*Queue[int, int])(nil)
)
