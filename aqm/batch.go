package aqm

// BatchQueue is a [Queue] with a burst path: it takes and gives many
// packets per call, with one time for the whole burst. Every queue in
// aqmkit implements it. The outcome is exactly that of the loop of single
// calls at the same now, packet by packet: the same verdicts, the same
// packets in the same order, the same DropFunc calls and the same Stats.
// Package aqm/aqmtest checks this for every queue.
type BatchQueue[T any] interface {
	Queue[T]
	// EnqueueBatch offers ps[i] for i in [0, n), n = min(len(ps), len(vs)),
	// in order at time now, as n calls of Enqueue would, and writes the
	// verdict of ps[i] into vs[i]. It returns the number of packets
	// accepted. Packets whose verdict is not accepted stay with the caller;
	// packets past n are not offered.
	EnqueueBatch(ps []Packet[T], vs []Verdict, now Time) int
	// DequeueBatch removes up to len(buf) packets at time now into
	// buf[:n], as n calls of Dequeue would, and returns n. It returns fewer
	// than len(buf) only when the queue is empty.
	DequeueBatch(buf []Packet[T], now Time) int
}

// EnqueueBatch offers ps to q at now with q's burst path if it has one
// ([BatchQueue]), or else with a loop of Enqueue calls; the outcome is the
// same. See [BatchQueue.EnqueueBatch].
func EnqueueBatch[T any](q Queue[T], ps []Packet[T], vs []Verdict, now Time) int {
	if b, ok := q.(BatchQueue[T]); ok {
		return b.EnqueueBatch(ps, vs, now)
	}
	return EnqueueLoop(q, ps, vs, now)
}

// DequeueBatch fills buf from q at now with q's burst path if it has one,
// or else with a loop of Dequeue calls. See [BatchQueue.DequeueBatch].
func DequeueBatch[T any](q Queue[T], buf []Packet[T], now Time) int {
	if b, ok := q.(BatchQueue[T]); ok {
		return b.DequeueBatch(buf, now)
	}
	return DequeueLoop(q, buf, now)
}

// EnqueueLoop is EnqueueBatch written as the plain loop of Enqueue calls:
// the definition every burst path must match, and the fallback for queues
// without one.
func EnqueueLoop[T any](q Queue[T], ps []Packet[T], vs []Verdict, now Time) int {
	n := min(len(ps), len(vs))
	accepted := 0
	for i := range n {
		v := q.Enqueue(ps[i], now)
		vs[i] = v
		if v.Accepted() {
			accepted++
		}
	}
	return accepted
}

// DequeueLoop is DequeueBatch written as the plain loop of Dequeue calls.
func DequeueLoop[T any](q Queue[T], buf []Packet[T], now Time) int {
	for i := range buf {
		p, ok := q.Dequeue(now)
		if !ok {
			return i
		}
		buf[i] = p
	}
	return len(buf)
}
