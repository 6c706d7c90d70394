package aqm

// Queue is a packet queue with an active queue management policy. Each
// algorithm package provides a concrete type that implements it; code that
// must stay generic over the algorithm uses this interface, and hot loops use
// the concrete type.
//
// A Queue is not safe for concurrent use.
type Queue[T any] interface {
	// Enqueue offers p to the queue at time now. If the verdict is accepted,
	// the queue owns p until Dequeue returns it or the queue's DropFunc
	// receives it; otherwise p stays with the caller.
	Enqueue(p Packet[T], now Time) Verdict
	// Dequeue removes and returns the next packet to send at time now. It
	// returns false only if the queue is empty when it returns (or, for a
	// queue that paces its own output, see [Paced], if no packet may leave
	// yet): it may drop queued packets (through the DropFunc) before it
	// finds one to send.
	Dequeue(now Time) (Packet[T], bool)
	// Len returns the number of queued packets, counting a GSO
	// super-packet as its segments ([Meta.SegmentCount]); it is zero
	// exactly when the queue holds nothing.
	Len() int
	// Backlog returns the number of queued bytes.
	Backlog() int
	// Stats returns a snapshot of the queue's counters.
	Stats() Stats
}

// Paced is implemented by queues that pace their own output, such as CAKE
// with a shaping rate: their Dequeue returns false while packets are queued
// but none may leave yet, and NextDeparture says when one may. The front in
// package front waits until then instead of treating the queue as
// empty.
type Paced interface {
	// NextDeparture returns when Dequeue can next return a packet if
	// nothing else arrives: now if it can at once, a later instant if the
	// queue holds packets back, or the zero Time if it is empty.
	NextDeparture(now Time) Time
}
