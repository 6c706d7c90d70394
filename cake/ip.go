package cake

import "github.com/aqmkit/aqmkit/aqm"

// ClassifyIP reads pkt, an IPv4 or IPv6 packet starting at the IP header,
// with the queue's own [Classifier] and returns the Meta and Info to offer
// it with through [Queue.EnqueueInfo]: flow hash, host hashes, DSCP, ECN
// and the TCP ACK summary, as [Classifier.Classify] gives them (without
// wash). It is what the IP front in package front calls for each packet
// before the queue sees it, on its single and its batch path alike, so
// that host isolation, the DiffServ tins and the ACK filter work behind
// it.
//
// The classifier is keyed from the Seed the queue was made with (a fixed
// Seed reproduces its hashes) and is never rekeyed, not by Reconfigure
// either; the queue mixes every hash with its own key anyway. Unlike the
// queue's other methods, ClassifyIP is safe for concurrent use with any
// of them: it reads only that fixed key and pkt.
func (q *Queue[T]) ClassifyIP(pkt []byte) (aqm.Meta, Info, error) {
	return q.ipc.Classify(pkt)
}
