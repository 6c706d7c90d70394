// Package tally holds the [aqm.Stats] updates every queue makes: a drop
// counted by its reason, and the largest packet size seen. They live here,
// not as methods of Stats, because only queues call them.
package tally

import "github.com/aqmkit/aqmkit/aqm"

// Drop adds one drop of size bytes for reason why to s, and to
// DroppedQueued if queued is true (the packet had been accepted). A
// verdict that is not a drop is ignored.
func Drop(s *aqm.Stats, why aqm.Verdict, size uint32, queued bool) {
	DropMeta(s, why, aqm.Meta{Size: size}, queued)
}

// DropMeta is [Drop] for the packet m describes: it counts
// m.SegmentCount() wire packets of m.Size bytes.
func DropMeta(s *aqm.Stats, why aqm.Verdict, m aqm.Meta, queued bool) {
	switch why {
	case aqm.DroppedOverlimit:
		s.DroppedOverlimit.AddMeta(m)
	case aqm.DroppedEarly:
		s.DroppedEarly.AddMeta(m)
	case aqm.DroppedOverload:
		s.DroppedOverload.AddMeta(m)
	default:
		return
	}
	if queued {
		s.DroppedQueued.AddMeta(m)
	}
}

// NoteSize records an offered packet's size in s.MaxSize.
func NoteSize(s *aqm.Stats, size uint32) {
	if size > s.MaxSize {
		s.MaxSize = size
	}
}

// Sum returns the counters of two queues taken as one, for a queue built of
// others (the shards of a front, the keys of a keyed queue): counts, Len and
// Backlog add, and MaxSize is the larger.
func Sum(a, b aqm.Stats) aqm.Stats {
	a.Enqueued = a.Enqueued.Plus(b.Enqueued)
	a.Dequeued = a.Dequeued.Plus(b.Dequeued)
	a.Marked = a.Marked.Plus(b.Marked)
	a.DroppedOverlimit = a.DroppedOverlimit.Plus(b.DroppedOverlimit)
	a.DroppedEarly = a.DroppedEarly.Plus(b.DroppedEarly)
	a.DroppedOverload = a.DroppedOverload.Plus(b.DroppedOverload)
	a.DroppedQueued = a.DroppedQueued.Plus(b.DroppedQueued)
	a.Len += b.Len
	a.Backlog += b.Backlog
	a.MaxSize = max(a.MaxSize, b.MaxSize)
	return a
}

// Single is the outcome of a burst of one packet, whose verdict v came from
// Enqueue: it writes v into vs[0] and returns the number accepted, 0 or 1,
// as EnqueueBatch returns it.
func Single(vs []aqm.Verdict, v aqm.Verdict) int {
	vs[0] = v
	if v.Accepted() {
		return 1
	}
	return 0
}
