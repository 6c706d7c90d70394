package red

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// This file holds RED's burst twins. Each block below mirrors a
// single-packet function, whose doc names it back; a fix to one belongs in
// the other.
//
//	EnqueueBatch, its run    Enqueue's common case: an arrival to a busy
//	                         queue with room. The controller decides it as
//	                         it decides Enqueue's: ewma (update's), the
//	                         min_th test (below's belowMin), quietInBand
//	                         (signal's outcome for an arrival in the band
//	                         that it does not signal), then signal. The run
//	                         holds the average, the count, their operands,
//	                         the backlog and the length in registers, hands
//	                         the average and count back (settle) before
//	                         signal or Enqueue, and writes the packet
//	                         straight into its ring slot.
//	DequeueBatch             Dequeue, whole runs at a time (ring.PopFrontN).

// EnqueueBatch offers ps[i] for i < n = min(len(ps), len(vs)) at now, as
// n calls of Enqueue would, writes each verdict to vs[i] and returns the
// number accepted (see [aqm.BatchQueue]). The common case, an arrival to a
// busy queue with room for it, runs inline and writes the packet straight
// into its ring slot; the rest (an empty queue, a full limit, the end of
// the ring's storage, an Adaptive RED instant) is handed to Enqueue.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	if n == 1 { // no run to share the set-up with
		return tally.Single(vs, q.Enqueue(ps[0], now))
	}
	ps, vs = ps[:n], vs[:n]
	// The average and count (held from the controller), the backlog, the
	// queue length and the largest size live in registers for the burst and
	// are handed back before any call that reads them. Accepted packets go
	// into run, the ring's free slots, and are committed in one step.
	w, omw, minTh := q.p.w, q.p.omw, q.p.minTh // the operands of ewma and belowMin, held
	limP, limB := q.p.limitPackets, q.p.limitBytes
	byteMode, adaptive := q.p.byteMode, q.p.adaptive
	avg, count := q.held()
	backlog, maxSize := q.backlog, q.stats.MaxSize
	qlen := q.segs // wire packets, as Enqueue's n
	run := q.ring.Spare(n)
	j := 0          // slots of run written
	base := backlog // the backlog before the packets in run[:j]
	segBase := qlen // the wire packets queued before the packets in run[:j]
	accepted := 0   // packets accepted by Enqueue and committed runs
	for i := range ps {
		p := &ps[i]
		size, segs := uint64(p.Size), p.SegmentCount()
		if j >= len(run) || qlen == 0 || qlen+segs > limP || backlog+size > limB || (adaptive && q.adaptDue(now)) {
			// Rare: hand the packet to Enqueue with the state written back.
			q.ring.Commit(j)
			q.settle(avg, count)
			q.backlog, q.stats.MaxSize, q.segs = backlog, maxSize, qlen
			q.stats.Enqueued.Packets += uint64(qlen - segBase)
			q.stats.Enqueued.Bytes += backlog - base
			accepted += j
			v := q.Enqueue(*p, now)
			avg, count = q.held()
			backlog, maxSize = q.backlog, q.stats.MaxSize
			base = backlog
			qlen = q.segs
			segBase = qlen
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
		avg = ewma(avg, cur, w, omw)
		ecn := p.ECN & aqm.ECNMask
		v := aqm.Enqueued
		switch {
		case avg < minTh: // belowMin
			count = -1
		case q.quietInBand(avg, count):
			count++
		default:
			q.settle(avg, count)
			v = q.signal(p.Size, ecn)
			_, count = q.held() // signal moves the count, never the average
			if !v.Accepted() {
				tally.DropMeta(&q.stats, v, p.Meta, false)
				vs[i] = v
				continue
			}
			if v == aqm.Marked {
				ecn = aqm.CE
				q.stats.Marked.AddMeta(p.Meta)
			}
		}
		m := p.Meta
		m.ECN = ecn
		run[j] = aqm.Packet[T]{Payload: p.Payload, Meta: m, Enqueued: now}
		j++
		qlen += segs
		backlog += size
		vs[i] = v
	}
	q.ring.Commit(j)
	q.settle(avg, count)
	q.backlog, q.stats.MaxSize, q.segs = backlog, maxSize, qlen
	q.stats.Enqueued.Packets += uint64(qlen - segBase)
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
	segs := 0
	for i := range buf[:k] {
		bytes += uint64(buf[i].Size)
		segs += buf[i].SegmentCount()
	}
	q.backlog -= bytes
	q.segs -= segs
	q.stats.Dequeued.Packets += uint64(segs)
	q.stats.Dequeued.Bytes += bytes
	if q.ring.Len() == 0 {
		q.idleStart = now
	}
	return k
}
