// Package taildrop holds the burst enqueue of a queue whose only
// arrival-time decision is its two tail-drop limits: CoDel's, COBALT's and
// PIE's (while PIE cannot drop early) EnqueueBatch, written once. It is the
// burst twin of those queues' Enqueue: a fix to either belongs in the
// other.
package taildrop

import (
	"math"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/tally"
)

// Queue is the state EnqueueBatch reads and writes: the queue's ring, its
// counters, its queued wire packets (segs) and bytes (backlog), and its
// limits. A zero LimitBytes means no byte limit.
type Queue[T any] struct {
	Ring         *ring.Ring[aqm.Packet[T]]
	Stats        *aqm.Stats
	Segs         *int
	Backlog      *int
	LimitPackets int
	LimitBytes   int
}

// EnqueueBatch offers ps[i] for i < min(len(ps), len(vs)) at now as that
// many tail-drop Enqueue calls would: a packet is refused with
// [aqm.DroppedOverlimit] when its segments would take the queue past
// LimitPackets or its size past LimitBytes, and accepted otherwise, its
// ECN field reduced to the two ECN bits and stamped with now. Every offered
// size counts towards Stats.MaxSize. overflow, if not nil, is called after
// each refusal is counted (the controller hears of it as from Enqueue). It
// writes each verdict into vs[i] and returns the number accepted.
//
// Accepted packets are written straight into the ring's free slots and
// committed together; the slots are refilled where the storage wraps. Room
// for a packet means a free slot: the ring's capacity is at least
// LimitPackets, and every queued packet takes at least one of them.
func EnqueueBatch[T any](q Queue[T], ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time, overflow func()) int {
	n := min(len(ps), len(vs))
	ps, vs = ps[:n], vs[:n]
	room := q.LimitPackets - *q.Segs // wire packets; may be negative after Reconfigure
	limitBytes := int64(q.LimitBytes)
	if limitBytes == 0 {
		limitBytes = math.MaxInt64
	}
	backlog0 := int64(*q.Backlog)
	backlog, room0 := backlog0, room
	maxSize := q.Stats.MaxSize
	var run []aqm.Packet[T]
	j, accepted := 0, 0
	for i := range ps {
		p := &ps[i]
		size, segs := p.Size, p.SegmentCount()
		maxSize = max(maxSize, size)
		if segs > room || backlog+int64(size) > limitBytes {
			tally.DropMeta(q.Stats, aqm.DroppedOverlimit, p.Meta, false)
			if overflow != nil {
				overflow()
			}
			vs[i] = aqm.DroppedOverlimit
			continue
		}
		if j == len(run) {
			q.Ring.Commit(j)
			run, j = q.Ring.Spare(n-i), 0
		}
		slot := &run[j]
		*slot = *p
		slot.ECN &= aqm.ECNMask
		slot.Enqueued = now
		j++
		accepted++
		room -= segs
		backlog += int64(size)
		vs[i] = aqm.Enqueued
	}
	q.Ring.Commit(j)
	*q.Backlog = int(backlog)
	q.Stats.MaxSize = maxSize
	// Every accepted packet took its segments of room and its size of
	// backlog.
	*q.Segs += room0 - room
	q.Stats.Enqueued.Packets += uint64(room0 - room)
	q.Stats.Enqueued.Bytes += uint64(backlog - backlog0)
	return accepted
}
