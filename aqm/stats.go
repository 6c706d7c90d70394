package aqm

// Count is a number of packets and their total size in bytes. Packets
// counts wire packets: a GSO super-packet (see [Meta.Segments]) counts as
// its segments, so a queue fed super-packets reports what the link carries.
type Count struct {
	Packets uint64
	Bytes   uint64
}

// Add counts one packet of size bytes.
func (c *Count) Add(size uint32) {
	c.Packets++
	c.Bytes += uint64(size)
}

// AddMeta counts the packet m describes: m.SegmentCount() wire packets of
// m.Size bytes in all.
func (c *Count) AddMeta(m Meta) {
	c.Packets += uint64(m.SegmentCount())
	c.Bytes += uint64(m.Size)
}

// Plus returns c+d.
func (c Count) Plus(d Count) Count {
	return Count{Packets: c.Packets + d.Packets, Bytes: c.Bytes + d.Bytes}
}

// Stats are the counters every [Queue] keeps. Every packet offered to a queue
// is accounted for:
//
//	offered  = Enqueued + refused drops
//	Enqueued = Dequeued + DroppedQueued + Len
//
// where the refused drops are the drop counters minus DroppedQueued.
//
// Packet counts are wire packets. A GSO super-packet whose [Meta.Segments]
// is n counts n everywhere: in every Count's Packets, in Len and in the
// queue's packet limit; it is accepted, marked, dropped and sent whole, so
// all n move together. Traffic without Segments counts one per packet, as
// before. Both identities hold in packets and in bytes.
type Stats struct {
	// Enqueued counts accepted packets (verdict Enqueued or Marked).
	Enqueued Count `metric:"enqueued,counter"`
	// Dequeued counts packets returned by Dequeue.
	Dequeued Count `metric:"sent,counter"`
	// Marked counts packets set to CE, at enqueue or at dequeue. A packet
	// that arrived with CE and was "marked" again is counted too.
	Marked Count `metric:"marked,counter"`

	// DroppedOverlimit counts drops by a hard limit: refused arrivals and
	// evicted queued packets.
	DroppedOverlimit Count `metric:"dropped_overlimit,counter"`
	// DroppedEarly counts the AQM's congestion drops, at enqueue or dequeue.
	DroppedEarly Count `metric:"dropped_early,counter"`
	// DroppedOverload counts ECN-capable packets dropped instead of marked by
	// overload protection.
	DroppedOverload Count `metric:"dropped_overload,counter"`
	// DroppedQueued counts the subset of the drops above that hit packets
	// already accepted (handed to the DropFunc): dequeue-time drops and
	// evictions.
	DroppedQueued Count `metric:"dropped_queued,counter"`

	// Len and Backlog are the current queue length in packets and bytes;
	// Len counts the segments of the queued super-packets, as Queue.Len
	// does.
	Len     int `metric:"backlog_packets,gauge"`
	Backlog int `metric:"backlog_bytes,gauge"`
	// MaxSize is the largest packet size offered so far, in bytes; for a
	// super-packet, its whole Size.
	MaxSize uint32 `metric:"max_packet_bytes,gauge"`
}

// Dropped returns the total of all drops, refused or queued.
func (s Stats) Dropped() Count {
	return s.DroppedOverlimit.Plus(s.DroppedEarly).Plus(s.DroppedOverload)
}

// Offered returns the number of packets ever offered to Enqueue.
func (s Stats) Offered() Count {
	d := s.Dropped()
	return Count{
		Packets: s.Enqueued.Packets + d.Packets - s.DroppedQueued.Packets,
		Bytes:   s.Enqueued.Bytes + d.Bytes - s.DroppedQueued.Bytes,
	}
}
