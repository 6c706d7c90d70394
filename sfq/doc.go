// Package sfq implements Stochastic Fair Queueing (McKenney 1990) as Linux
// sch_sfq runs it: flows hashed into buckets, served round robin by a
// byte quantum, the longest bucket dropped from when the queue is full, and
// the hash re-keyed every PerturbPeriod.
//
// [Queue] is documented on its type, including its differences from
// McKenney and Linux sch_sfq. A zero [Config.Seed] keys its hash from
// crypto/rand; use a fixed seed only for tests and simulations.
// [ConfigForLink] sizes its limits for a link.
//
// # Time
//
// Every method takes now, an [aqm.Time] in nanoseconds from the caller's
// monotonic clock; the queue never reads a clock. Its re-key schedule
// follows the time policy of package aqm: a re-key scheduled more than one
// PerturbPeriod ahead of now is moved back to one period from now.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. The packet limit counts segments and an overflow drops from a longest flow as
// for any arrival; one with more segments than LimitPackets is refused at once. DepthPackets,
// the per-flow depth, counts queued packets.
//
// # Concurrency
//
// A Queue is not safe for concurrent use; put it behind package front to
// share it between goroutines.
package sfq

import "github.com/aqmkit/aqmkit/aqm"

var _ aqm.Queue[int] = (*Queue[int])(nil)
