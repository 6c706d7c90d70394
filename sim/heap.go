package sim

import "github.com/aqmkit/aqmkit/aqm"

// evKind is what an event does when it fires.
type evKind uint8

const (
	evTxDone    evKind = iota // the bottleneck finished sending its current packet
	evAck                     // the head of a flow's return line reaches its sender
	evSend                    // a flow may send (flow start, pacing, CBR or ping tick)
	evRTO                     // a flow's retransmission timer may have expired (arg: its number)
	evDelAck                  // a flow's delayed-ACK timer may have expired
	evStop                    // a flow stops sending (its Stop time)
	evShort                   // the next Poisson short flow arrives
	evRate                    // the bottleneck rate changes (arg: index into RateChanges)
	evSample                  // a time-series sample is due
	evQueueGrid               // a fixed-grid queue-length sample is due
	evShaper                  // the shaper's tokens allow the link to send again
	evPaced                   // a queue that paces itself may release a packet
	evRevTxDone               // the reverse link finished sending its current packet
	evRevPaced                // the reverse queue, which paces itself, may release a packet
)

// event is one entry of the agenda. Events at the same instant fire in the
// order they were scheduled (seq), which makes a run a pure function of its
// configuration and seed.
type event struct {
	at   aqm.Time
	seq  uint64
	flow int32
	kind evKind
	arg  int64
}

func (e *event) less(f *event) bool {
	return e.at < f.at || (e.at == f.at && e.seq < f.seq)
}

// agenda is a typed binary min-heap of events: no interface boxing, no
// dynamic Less, no allocation once its slice has grown to the run's peak.
type agenda struct {
	ev  []event
	seq uint64
}

func (h *agenda) len() int { return len(h.ev) }

// push schedules e, stamping its tie-break sequence number.
func (h *agenda) push(e event) {
	e.seq = h.seq
	h.seq++
	h.ev = append(h.ev, e)
	i := len(h.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.ev[i].less(&h.ev[p]) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

// pop removes and returns the earliest event. The heap must not be empty.
func (h *agenda) pop() event {
	top := h.ev[0]
	n := len(h.ev) - 1
	last := h.ev[n]
	h.ev = h.ev[:n]
	if n == 0 {
		return top
	}
	// Sift the last element down from the root (one move per level).
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.ev[r].less(&h.ev[c]) {
			c = r
		}
		if !h.ev[c].less(&last) {
			break
		}
		h.ev[i] = h.ev[c]
		i = c
	}
	h.ev[i] = last
	return top
}
