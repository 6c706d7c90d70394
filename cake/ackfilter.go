package cake

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// TCP flag bits of [ackInfo.Flags] (the header's flags byte).
const (
	flagFIN uint8 = 1 << iota
	flagSYN
	flagRST
	flagPSH
	flagACK
	flagURG
	flagECE
	flagCWR
)

// sackBlock is one TCP selective acknowledgement block, [Start, End).
type sackBlock struct{ Start, End uint32 }

// ackInfo is the part of a TCP header the ACK filter compares: enough to
// tell whether an ACK carries anything a later one does not. [Classifier]
// fills it; the zero value means "not TCP".
type ackInfo struct {
	// TCP reports that the packet is TCP (over IPv4 or IPv6); the other
	// fields mean nothing otherwise.
	TCP bool
	// HasTS reports a timestamp option; TSVal and TSEcr are its values.
	HasTS bool
	// Payload reports that the segment carries data.
	Payload bool
	// OtherOptions reports an option other than NOP, end of list, MD5,
	// SACK and timestamp, or a malformed one: such an ACK is never dropped.
	OtherOptions bool
	// Reserved reports reserved header bits (or AE) set.
	Reserved bool
	// Flags is the TCP flags byte (flagFIN ... flagCWR).
	Flags uint8
	// NSACK is the number of SACK blocks in SACK (at most 4).
	NSACK uint8
	// Conn identifies the connection and direction: a hash of the IP
	// version, addresses and ports in header order. Two ACKs are compared
	// only if their Conn is equal.
	Conn uint32
	// Ack is the cumulative acknowledgement number.
	Ack          uint32
	TSVal, TSEcr uint32
	SACK         [4]sackBlock
}

// after reports whether a is after b in sequence-number (serial)
// arithmetic.
func after(a, b uint32) bool { return int32(a-b) > 0 }

// sackBytes returns the bytes a's SACK blocks cover.
func (a *ackInfo) sackBytes() uint64 {
	var n uint64
	for i := range min(int(a.NSACK), len(a.SACK)) {
		n += uint64(a.SACK[i].End - a.SACK[i].Start)
	}
	return n
}

// redundant reports whether queued ACK a carries nothing that the later
// ACK t of the same connection does not: a pure ACK (only ACK, ECE and CWR
// flags, no data, no unknown option, no reserved bit), whose cumulative
// ACK, timestamps and SACK blocks are all covered by t's, and which is
// not a duplicate ACK that t does not supersede with more SACK.
func redundant(a, t *ackInfo) bool {
	const bad = flagURG | flagPSH | flagRST | flagSYN | flagFIN
	if a.Flags&flagACK == 0 || a.Flags&bad != 0 || a.Reserved || a.OtherOptions || a.Payload {
		return false
	}
	if a.HasTS && (after(a.TSVal, t.TSVal) || after(a.TSEcr, t.TSEcr)) {
		return false
	}
	if after(a.Ack, t.Ack) {
		return false
	}
	na, nt := min(int(a.NSACK), len(a.SACK)), min(int(t.NSACK), len(t.SACK))
	for i := range na {
		s := a.SACK[i]
		if after(a.Ack, s.Start) { // a D-SACK (below the cumulative ACK) reports a duplicate
			return false
		}
		inside := false
		for j := range nt {
			u := t.SACK[j]
			if !after(u.Start, s.Start) && !after(s.End, u.End) {
				inside = true
				break
			}
		}
		if !inside {
			return false
		}
	}
	if a.Ack == t.Ack && t.sackBytes() <= a.sackBytes() {
		return false
	}
	return true
}

// ackFilter runs after the arrival (node ni of flow fi) was appended: it
// scans the flow's earlier packets of the same connection and drops at
// most one ACK made redundant by the arrival (see [ACKFilter]).
func (q *Queue[T]) ackFilter(b *tin, fi, ni uint32, now aqm.Time) {
	t := &q.acks[ni]
	if t.Flags&flagACK == 0 || t.Flags&flagSYN != 0 {
		return
	}
	const eceCWR = flagECE | flagCWR
	f := &q.flows[fi]
	elig, eligPrev := nilIdx, nilIdx
	eligFlags := uint8(0)
	victim, victimPrev := nilIdx, nilIdx
	prev := nilIdx
	for a := f.head; a != ni; prev, a = a, q.nodes[a].next {
		ai := &q.acks[a]
		if !ai.TCP || ai.Conn != t.Conn {
			continue
		}
		if elig != nilIdx && ai.Flags&eceCWR != eligFlags {
			elig = nilIdx
		}
		if !redundant(ai, t) {
			continue
		}
		if elig == nilIdx {
			elig, eligPrev, eligFlags = a, prev, ai.Flags&eceCWR
			continue
		}
		victim, victimPrev = elig, eligPrev
		break
	}
	if victim == nilIdx && elig != nilIdx && q.ackMode == ACKFilterAggressive &&
		q.nodes[elig].next == ni && eligFlags == t.Flags&eceCWR {
		victim, victimPrev = elig, eligPrev
	}
	if victim == nilIdx {
		return
	}
	nd := &q.nodes[victim]
	p := nd.pkt
	if victimPrev == nilIdx {
		f.head = nd.next
	} else {
		q.nodes[victimPrev].next = nd.next
	}
	// the victim is never the tail: the arrival follows it
	nd.pkt = aqm.Packet[T]{}
	nd.next = q.free
	q.free = victim
	q.acks[victim] = ackInfo{}
	f.backlog -= p.Size
	b.pkts -= p.SegmentCount()
	b.backlog -= int(p.Size)
	q.len -= p.SegmentCount()
	q.backlog -= int(p.Size)
	b.s.ackDrops += uint64(p.SegmentCount())
	q.d.ackDrops += uint64(p.SegmentCount())
	if q.ingress {
		q.charge(b, q.adjLenOf(p.Meta), now, true)
	}
	tally.DropMeta(&q.stats, aqm.DroppedEarly, p.Meta, true)
	if q.onDrop != nil {
		q.onDrop(p, aqm.DroppedEarly)
	}
}
