package red

import (
	"github.com/aqmkit/aqmkit/aqm"
)

// EnqueueBatch offers ps[i] for i < n = min(len(ps), len(vs)) at now, as
// n calls of Enqueue would, writes each verdict to vs[i] and returns the
// number accepted (see [aqm.BatchQueue]). The common case, an arrival to a
// busy queue with room for it, runs inline and writes the packet straight
// into its ring slot; the rest (an empty queue, a full limit, the end of
// the ring's storage, an Adaptive RED instant) is handed to Enqueue.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	if n == 1 { // no run to share the set-up with
		v := q.Enqueue(ps[0], now)
		vs[0] = v
		if v.Accepted() {
			return 1
		}
		return 0
	}
	ps, vs = ps[:n], vs[:n]
	// The average, the backlog, the queue length and the counters live in
	// registers for the burst and are written back before any call that
	// reads them. Accepted packets go into run, the ring's free slots, and
	// are committed in one step.
	w, omw, minTh, maxTh := q.p.w, q.p.omw, q.p.minTh, q.p.maxTh
	limP, limB := q.p.limitPackets, q.p.limitBytes
	byteMode, adaptive := q.p.byteMode, q.p.adaptive
	plainBand := !q.p.wait && !byteMode // Figure 17's test inline
	avg, backlog, maxSize, count := q.avg, q.backlog, q.stats.MaxSize, q.count
	qlen := q.ring.Len()
	run := q.ring.Spare(n)
	j := 0          // slots of run written
	base := backlog // the backlog before the packets in run[:j]
	accepted := 0   // packets accepted by Enqueue and committed runs
	for i := range ps {
		p := &ps[i]
		size := uint64(p.Size)
		if j >= len(run) || qlen == 0 || qlen >= limP || backlog+size > limB || (adaptive && q.adaptDue(now)) {
			// Rare: hand the packet to Enqueue with the state written back.
			q.ring.Commit(j)
			q.avg, q.backlog, q.stats.MaxSize, q.count = avg, backlog, maxSize, count
			q.stats.Enqueued.Packets += uint64(j)
			q.stats.Enqueued.Bytes += backlog - base
			accepted += j
			v := q.Enqueue(*p, now)
			avg, backlog, maxSize, count = q.avg, q.backlog, q.stats.MaxSize, q.count
			base = backlog
			qlen = q.ring.Len()
			run, j = q.ring.Spare(n-i-1), 0
			vs[i] = v
			if v.Accepted() {
				accepted++
			}
			continue
		}
		maxSize = max(maxSize, p.Size)
		cur := float64(qlen)
		if byteMode {
			cur = float64(backlog)
		}
		avg = avg*omw + w*cur
		ecn := p.ECN & aqm.ECNMask
		v := aqm.Enqueued
		switch {
		case avg < minTh:
			count = -1
		case plainBand && avg < maxTh && count >= 0 && count < maxCount &&
			uint64(count+1)*q.prob(avg) < q.r:
			// In the band, not signalled: signal's outcome, without the call.
			count++
			q.lastProb = q.prob(avg)
		default:
			q.avg, q.count = avg, count
			v = q.signal(p.Size, ecn)
			count = q.count
			if !v.Accepted() {
				q.stats.CountDrop(v, p.Size, false)
				vs[i] = v
				continue
			}
			if v == aqm.Marked {
				ecn = aqm.CE
				q.stats.Marked.Add(p.Size)
			}
		}
		m := p.Meta
		m.ECN = ecn
		run[j] = aqm.Packet[T]{Payload: p.Payload, Meta: m, Enqueued: now}
		j++
		qlen++
		backlog += size
		vs[i] = v
	}
	q.ring.Commit(j)
	q.avg, q.backlog, q.stats.MaxSize, q.count = avg, backlog, maxSize, count
	q.stats.Enqueued.Packets += uint64(j)
	q.stats.Enqueued.Bytes += backlog - base
	return accepted + j
}

// DequeueBatch removes up to len(buf) packets into buf at now, as that
// many calls of Dequeue would, and returns how many (see
// [aqm.BatchQueue]). The packets leave the ring in whole runs.
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	if len(buf) == 1 { // no run to share the set-up with
		p, ok := q.Dequeue(now)
		if !ok {
			return 0
		}
		buf[0] = p
		return 1
	}
	k := q.ring.PopFrontN(buf)
	if k == 0 {
		return 0
	}
	var bytes uint64
	for i := range buf[:k] {
		bytes += uint64(buf[i].Size)
	}
	q.backlog -= bytes
	q.stats.Dequeued.Packets += uint64(k)
	q.stats.Dequeued.Bytes += bytes
	if q.ring.Len() == 0 {
		q.idleStart = now
	}
	return k
}
