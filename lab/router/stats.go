package router

import (
	"sync/atomic"

	"github.com/aqmkit/aqmkit/aqm"
)

// reason is why the router dropped a packet.
type reason uint8

const (
	dropOverlimit  reason = iota // the queue's hard limit: a refused arrival or an evicted packet
	dropEarly                    // the AQM's congestion drop
	dropOverload                 // an ECN-capable packet dropped instead of marked under overload
	dropClosed                   // arrived while the router was shutting down
	dropDelayFull                // the delay line was full
	dropFlushed                  // still held when the drain time ran out at shutdown
	dropWriteError               // the device refused the write
	dropNotIP                    // not an IPv4 or IPv6 packet
	dropTruncated                // shorter than its IP header says (cut by a small read buffer)
	dropNoQueue                  // a new destination prefix while the table was full
	dropNoBuffer                 // read while every packet buffer was in use
	dropBadHeader                // an IP header whose fields contradict each other
	numReasons
)

// reasonOf maps a queue's drop verdict to its reason.
func reasonOf(v aqm.Verdict) reason {
	switch v {
	case aqm.DroppedEarly:
		return dropEarly
	case aqm.DroppedOverload:
		return dropOverload
	}
	return dropOverlimit
}

// Count is a number of packets and their bytes.
type Count struct {
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// Drops counts dropped packets by reason. Total is the sum of the others.
type Drops struct {
	Total uint64 `json:"total"`
	// Overlimit, Early and Overload are the queue's drops, refused arrivals
	// and queued packets alike, as its aqm.Stats counts them.
	Overlimit uint64 `json:"overlimit"`
	Early     uint64 `json:"early"`
	Overload  uint64 `json:"overload"`
	// Closed counts arrivals refused because the router was shutting down.
	Closed uint64 `json:"closed"`
	// DelayFull counts packets the delay line had no room for.
	DelayFull uint64 `json:"delay_full"`
	// Flushed counts packets still queued or delayed when the drain time at
	// shutdown ran out.
	Flushed uint64 `json:"flushed"`
	// WriteError counts packets the device refused to take.
	WriteError uint64 `json:"write_error"`
	// NotIP, Truncated, NoQueue and NoBuffer count packets dropped before
	// they had a queue: not IPv4 or IPv6, cut short, a new prefix while the
	// table was full, no free buffer.
	NotIP     uint64 `json:"not_ip"`
	Truncated uint64 `json:"truncated"`
	NoQueue   uint64 `json:"no_queue"`
	NoBuffer  uint64 `json:"no_buffer"`
	// BadHeader counts packets dropped before they had a queue for an IP
	// header that contradicts itself: an IPv4 header length (IHL) below 5
	// words, or a total length shorter than the header.
	BadHeader uint64 `json:"bad_header"`
}

// Malformed returns the packets dropped as bad input, before they had a
// queue: not IP, cut short, or with a self-contradicting header.
func (d Drops) Malformed() uint64 { return d.NotIP + d.Truncated + d.BadHeader }

func (d *Drops) add(o Drops) {
	d.Total += o.Total
	d.Overlimit += o.Overlimit
	d.Early += o.Early
	d.Overload += o.Overload
	d.Closed += o.Closed
	d.DelayFull += o.DelayFull
	d.Flushed += o.Flushed
	d.WriteError += o.WriteError
	d.NotIP += o.NotIP
	d.Truncated += o.Truncated
	d.NoQueue += o.NoQueue
	d.NoBuffer += o.NoBuffer
	d.BadHeader += o.BadHeader
}

// QueueStats are one direction's counters: the packets read for its
// prefix, and what became of them. Read.Packets = Written.Packets +
// Dropped.Total + Queued in every snapshot.
type QueueStats struct {
	// Prefix is the destination prefix the queue serves.
	Prefix string `json:"prefix"`
	// Read counts the packets read from the device for this prefix.
	Read Count `json:"read"`
	// Written counts the packets written back to the device.
	Written Count `json:"written"`
	// Dropped counts the packets dropped, by reason.
	Dropped Drops `json:"dropped"`
	// Marked counts the packets the queue marked CE (aqm.Stats.Marked), in
	// wire packets: a kept GSO super-packet counts its segments.
	Marked uint64 `json:"marked"`
	// CEWritten counts the marked packets whose header was set to CE on
	// their way out.
	CEWritten uint64 `json:"ce_written"`
	// CEWrittenSegments counts the wire packets the CE-written packets
	// stand for: CEWritten plus, for each kept GSO super-packet among
	// them, its segments beyond the first.
	CEWrittenSegments uint64 `json:"ce_written_segments"`
	// Split counts the GSO super-packets read and cut into their
	// segments; Read counts the segments, not the super-packets.
	Split uint64 `json:"split"`
	// Coalesced counts the packets written inside a joined super-packet
	// (Config.DisableCoalesce); Written counts them one by one.
	Coalesced uint64 `json:"coalesced"`
	// Queued is the number of packets the direction holds: accepted by its
	// front and not yet emitted (in the queue, or taken out by the consumer),
	// in the delay line (or popped from it and being written), or in flight
	// to the device; zero after a complete drain. A kept GSO super-packet
	// counts one, as in Read.
	Queued int `json:"queued"`
	// Delayed is the part of Queued held in the delay line.
	Delayed int `json:"delayed"`
	// Queue is the queue's own counters.
	Queue aqm.Stats `json:"queue"`
}

// Stats are the router's counters, per queue and in total, as of one
// instant: Read.Packets = Written.Packets + Dropped.Total + Queued, in total
// and per queue, in every snapshot.
type Stats struct {
	AQM   string   `json:"aqm"`
	Rate  aqm.Rate `json:"rate"`
	Delay string   `json:"delay"`
	// Read, Written, Dropped, Marked, CEWritten and Queued are the totals:
	// the queues' sums plus the packets dropped before they had a queue.
	Read      Count  `json:"read"`
	Written   Count  `json:"written"`
	Dropped   Drops  `json:"dropped"`
	Marked    uint64 `json:"marked"`
	CEWritten uint64 `json:"ce_written"`
	// CEWrittenSegments is the total of QueueStats.CEWrittenSegments.
	CEWrittenSegments uint64 `json:"ce_written_segments"`
	// Split is the total of QueueStats.Split.
	Split uint64 `json:"split"`
	// Coalesced is the total of QueueStats.Coalesced.
	Coalesced uint64 `json:"coalesced"`
	Queued    int    `json:"queued"`
	// NotIP counts the packets that were not IPv4 or IPv6 (also in
	// Dropped.NotIP).
	NotIP uint64 `json:"not_ip"`
	// Unclassified counts the packets read that never had a queue; all are
	// in Dropped (NotIP, Truncated, NoQueue, NoBuffer).
	Unclassified Count `json:"unclassified"`
	// Queues are the per-prefix queues in creation order.
	Queues []QueueStats `json:"queues"`
	// Load is the router's view of its own load (Router.Load).
	Load Load `json:"load"`
	// BuffersInUse is the number of packet buffers out of the router's
	// pools (read and segment buffers): those queued, delayed, in flight and
	// held by the readers for their next read. Zero once Run has returned.
	BuffersInUse int `json:"buffers_in_use"`
	// BufferBytes is the memory of every packet buffer the pools have made
	// (in use or free): the pools keep what they made, so it is the high
	// mark of the buffers in use, in bytes.
	BufferBytes int64 `json:"buffer_bytes"`
	// SamplesPaused counts the Stats calls that found the router too busy
	// to read its counters at a quiet instant and paused it briefly.
	SamplesPaused uint64 `json:"samples_paused"`
}

// Conserved reports whether every packet read is accounted for, in total and
// in each queue: read = written + dropped + queued. Router.Stats reads the
// counters as of one instant, so it holds for every snapshot, while the
// router runs too.
func (s Stats) Conserved() bool {
	if s.Read.Packets != s.Written.Packets+s.Dropped.Total+uint64(s.Queued) {
		return false
	}
	for _, q := range s.Queues {
		if q.Read.Packets != q.Written.Packets+q.Dropped.Total+uint64(q.Queued) {
			return false
		}
	}
	return true
}

// counters are updated by the reader, the consumer, the delay line and the
// queue's drop function, on different goroutines.
type counters struct {
	readPackets, readBytes       atomic.Uint64
	writtenPackets, writtenBytes atomic.Uint64
	ceWritten                    atomic.Uint64
	ceSegments                   atomic.Uint64
	split                        atomic.Uint64
	coalesced                    atomic.Uint64
	drops                        [numReasons]atomic.Uint64
}

func (c *counters) read(n int) {
	c.readPackets.Add(1)
	c.readBytes.Add(uint64(n))
}

func (c *counters) drop(why reason) { c.drops[why].Add(1) }

func (c *counters) dropsSnapshot() Drops {
	var v [numReasons]uint64
	var total uint64
	for i := range v {
		v[i] = c.drops[i].Load()
		total += v[i]
	}
	return Drops{
		Total: total, Overlimit: v[dropOverlimit], Early: v[dropEarly], Overload: v[dropOverload],
		Closed: v[dropClosed], DelayFull: v[dropDelayFull], Flushed: v[dropFlushed],
		WriteError: v[dropWriteError], NotIP: v[dropNotIP], Truncated: v[dropTruncated],
		NoQueue: v[dropNoQueue], NoBuffer: v[dropNoBuffer], BadHeader: v[dropBadHeader],
	}
}
