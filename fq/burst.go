package fq

import "github.com/aqmkit/aqmkit/aqm"

// burster is what the burst enqueue of FQ-COBALT and FQ-PIE calls per
// packet. FQ-CoDel writes its burst out (CoDel.EnqueueBatch); the burst
// dequeue of FQ-COBALT and FQ-PIE is aqm.DequeueLoop.
type burster[T any] interface {
	Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict
}

// enqueueBurst is the EnqueueBatch of [Cobalt] and [PIE]: ps[i] for i in
// [0, min(len(ps), len(vs))) offered at now through q.Enqueue, the flows of
// every touchAhead packets classified ahead by s, q's scheduler (see
// CoDel.EnqueueBatch), each verdict written to vs[i]; it returns the number
// accepted. s is passed apart so that touch is a direct call, which lets
// idxs stay on the stack.
func enqueueBurst[T, A any, Q burster[T]](q Q, s *sched[T, A], ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	accepted := 0
	var idxs [touchAhead]uint32
	for i := range n {
		if i%touchAhead == 0 {
			s.touch(ps[i:min(i+touchAhead, n)], &idxs)
		}
		v := q.Enqueue(ps[i], now)
		vs[i] = v
		if v.Accepted() {
			accepted++
		}
	}
	return accepted
}
