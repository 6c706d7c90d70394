// Package fifo implements the drop-tail queue the AQM literature compares
// against, as Linux pfifo (a packet limit), bfifo (a byte limit) and
// pfifo_head_drop (HeadDrop) run it. It never drops early and never marks.
//
// [Queue] is also the reference implementation of the [aqm.Queue] contract
// and an [aqm.BatchQueue]: the conformance kit's own tests wrap it.
//
// # Parameters
//
//   - LimitPackets: packets, default 1000 (Linux's
//     txqueuelen), at most 16777216.
//   - LimitBytes: bytes, default none.
//   - HeadDrop: drop the oldest packets to admit an arrival.
//
// [ConfigForLink] sizes both limits to four round trips at a link's rate.
//
// # Differences from Linux
//
//   - Limits are checked before the arrival is stored, in packets and bytes
//     at once; Linux's pfifo and bfifo each check one.
//   - HeadDrop drops as many old packets as the arrival needs, counted as
//     DroppedOverlimit of queued packets and handed to the DropFunc.
//
// # Time
//
// The queue keeps no time of its own; now is passed through to stamp
// arrivals (Packet.Enqueued), so sojourn times follow the caller's clock.
//
// # GSO super-packets
//
// A GSO super-packet (aqm.Meta.Segments above one) counts as its segments in Len, in Stats and
// in the packet limit; it is marked, dropped and sent whole, so a mark or a drop counts once
// per segment. One that does not fit is refused; with HeadDrop, older packets are evicted until
// it fits, unless it alone exceeds a limit.
//
// # Concurrency
//
// A Queue is not safe for concurrent use; package front shares one between
// goroutines.
package fifo
