package aqm

import "strconv"

// DSCPNQB is the DSCP of the Non-Queue-Building PHB (RFC 9956): 45. The
// queues that treat NQB packets apart take the DSCP through an
// EnqueueDSCP method.
const DSCPNQB = 45

// ECN is the two-bit Explicit Congestion Notification field of the IP header
// (RFC 3168), with the header's own values.
type ECN uint8

const (
	NotECT ECN = 0b00 // Not-ECT: the sender does not understand ECN; drop, never mark.
	ECT1   ECN = 0b01 // ECT(1): ECN-capable; L4S senders use it (RFC 9331).
	ECT0   ECN = 0b10 // ECT(0): ECN-capable, Classic ECN.
	CE     ECN = 0b11 // CE: Congestion Experienced.

	// ECNMask selects the two ECN bits; queues clear all others on Enqueue.
	ECNMask ECN = 0b11
)

// Capable reports whether e (its low two bits) is ECN-capable: ECT(0), ECT(1)
// or CE. Only such packets may be marked instead of dropped.
func (e ECN) Capable() bool { return e&ECNMask != NotECT }

// String returns the codepoint's usual name.
func (e ECN) String() string {
	switch e {
	case NotECT:
		return "Not-ECT"
	case ECT1:
		return "ECT(1)"
	case ECT0:
		return "ECT(0)"
	case CE:
		return "CE"
	}
	return "ECN(" + strconv.Itoa(int(e)) + ")"
}

// Packet is what a [Queue] holds: the caller's payload plus the few header
// facts an AQM needs, which are in the embedded [Meta] (read and set them as
// p.Size, p.Hash, p.ECN). It is passed and stored by value:
//
//	q.Enqueue(aqm.Packet[*Buf]{Payload: b, Meta: aqm.Meta{Size: n, Hash: h, ECN: e}}, now)
type Packet[T any] struct {
	// Payload is the caller's packet or a handle to it; queues never look
	// inside it.
	Payload T
	// Meta holds the packet's size, flow hash and ECN codepoint.
	Meta
	// Enqueued is the time at which Enqueue accepted the packet. The queue
	// sets it; any value the caller puts there is overwritten.
	Enqueued Time
}

// Meta is the part of a [Packet] that queues read: its size, flow hash and
// ECN codepoint. It is embedded in Packet, so its fields are read and set
// as fields of the packet.
type Meta struct {
	// Size is the packet's length on the wire in bytes. Byte limits, byte
	// modes and fair-queueing quanta use it. Size 0 is allowed and counts
	// as zero bytes.
	Size uint32
	// Hash is a flow hash computed by the caller (for example over the
	// 5-tuple). Fair queues classify on it; single queues ignore it. Queues
	// that classify mix it with a per-instance secret key, so a plain hash is
	// good enough.
	Hash uint32
	// ECN is the packet's ECN codepoint. On Enqueue it is the arrival
	// codepoint; a packet that leaves Dequeue with CE must be sent with CE set.
	ECN ECN
	// Segments is the number of wire packets this packet stands for: more
	// than one for a GSO super-packet that the device or the kernel splits
	// after the queue. 0 and 1 both mean one packet. A mark applies to every
	// segment.
	Segments uint16
}

// SegmentCount is the number of wire packets m stands for: Segments, or 1
// when Segments is 0.
func (m Meta) SegmentCount() int {
	if m.Segments == 0 {
		return 1
	}
	return int(m.Segments)
}
