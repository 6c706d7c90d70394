package aqmtest

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// startTime is the harness's first instant: one second, so that backward
// steps never reach the zero (unset) Time.
const startTime = aqm.Time(time.Second)

// maxErrors bounds how many violations one trace collects before stopping.
const maxErrors = 8

type flowKey struct {
	hash uint32
	ecn  aqm.ECN
}

type inflight struct {
	p    aqm.Packet[Payload] // as accepted: ECN masked (and CE if Marked), Enqueued stamped
	flow flowKey
}

// harness drives one queue and keeps an independent model of what it holds.
type harness struct {
	f   Factory
	q   aqm.Queue[Payload]
	now aqm.Time
	seq Payload

	live      map[Payload]inflight
	liveBytes int
	liveSegs  int // wire packets queued: the segments of what is live
	lastOut   map[flowKey]Payload

	// What the model counts, to compare with Stats.
	accepted, dequeued, droppedQueued aqm.Count
	refused, queuedBy                 [8]aqm.Count // by Verdict
	marksSeen, ceAccepted             uint64
	maxSize                           uint32

	lastDeq aqm.Packet[Payload] // the packet the last successful Dequeue returned

	inCall bool
	op     int
	errs   []error
	log    []string // decisions, for determinism checks (only if keepLog)
	keep   bool
	hook   func(op int) // called after each op, if set
	budget int          // packet operations allowed for the trace's ops; 0 means no limit
	spent  int
}

func newHarness(f Factory, seed uint64, keepLog bool) (*harness, error) {
	h := &harness{
		f:       f,
		now:     startTime,
		live:    make(map[Payload]inflight),
		lastOut: make(map[flowKey]Payload),
		keep:    keepLog,
	}
	q, err := f.New(seed, h.onDrop)
	if err != nil {
		return nil, fmt.Errorf("Factory.New: %w", err)
	}
	if q == nil {
		return nil, errors.New("Factory.New returned a nil queue and no error")
	}
	h.q = q
	return h, nil
}

func (h *harness) failf(format string, args ...any) {
	if len(h.errs) < maxErrors {
		h.errs = append(h.errs, fmt.Errorf("op %d at t=%d: %s", h.op, int64(h.now), fmt.Sprintf(format, args...)))
	}
}

func (h *harness) err() error { return errors.Join(h.errs...) }

func (h *harness) onDrop(p aqm.Packet[Payload], why aqm.Verdict) {
	if !h.inCall {
		h.failf("DropFunc called outside Enqueue/Dequeue for packet %d", p.Payload)
	}
	if why.Accepted() {
		h.failf("DropFunc called for packet %d with non-drop verdict %v", p.Payload, why)
	}
	in, ok := h.live[p.Payload]
	if !ok {
		h.failf("DropFunc got packet %d, which is not in the queue (never accepted, or already gone: duplicated)", p.Payload)
		return
	}
	h.checkSame(in, p, "dropped")
	h.leave(in)
	h.droppedQueued.AddMeta(in.p.Meta)
	if int(why) < len(h.queuedBy) {
		h.queuedBy[why].AddMeta(in.p.Meta)
	}
	if h.keep {
		h.log = append(h.log, fmt.Sprintf("drop %d %v", p.Payload, why))
	}
}

func (h *harness) leave(in inflight) {
	delete(h.live, in.p.Payload)
	h.liveBytes -= int(in.p.Size)
	h.liveSegs -= in.p.SegmentCount()
}

// checkSame compares a packet coming out with the one that went in.
func (h *harness) checkSame(in inflight, out aqm.Packet[Payload], how string) {
	if out.Size != in.p.Size || out.Hash != in.p.Hash || out.Segments != in.p.Segments {
		h.failf("%s packet %d changed: size %d→%d, hash %#x→%#x, segments %d→%d", how, out.Payload, in.p.Size, out.Size, in.p.Hash, out.Hash, in.p.Segments, out.Segments)
	}
	if out.Enqueued != in.p.Enqueued {
		h.failf("%s packet %d has Enqueued=%d, want the enqueue instant %d", how, out.Payload, out.Enqueued, in.p.Enqueued)
	}
	if out.ECN&^aqm.ECNMask != 0 {
		h.failf("%s packet %d has stray ECN bits %#x", how, out.Payload, uint8(out.ECN))
	}
	if out.ECN != in.p.ECN && !(out.ECN == aqm.CE && in.p.ECN.Capable()) {
		h.failf("%s packet %d: ECN %v became %v (only ECN-capable packets may become CE)", how, out.Payload, in.p.ECN, out.ECN)
	}
}

func (h *harness) advance(o traceOp) {
	switch {
	case o.JumpTo != 0:
		h.now = o.JumpTo
	case o.Dt > 0 && h.now > math.MaxInt64-aqm.Time(o.Dt)-aqm.Time(24*time.Hour):
		// Keep a day of headroom below the int64 end of time.
	default:
		h.now += aqm.Time(o.Dt)
		if h.now < startTime {
			h.now = startTime
		}
	}
}

func (h *harness) apply(o traceOp) {
	h.advance(o)
	n := max(o.Count, 1)
	for range n {
		if h.budget > 0 {
			if h.spent == h.budget {
				return // spent: the rest of the trace is skipped, then the queue is drained
			}
			h.spent++
		}
		if o.Kind == opDequeue {
			if !h.dequeue() {
				break
			}
		} else {
			h.enqueue(o.Size, o.Hash, o.ECN, o.Segments)
		}
		if len(h.errs) >= maxErrors {
			return
		}
	}
}

func (h *harness) enqueue(size, hash uint32, ecn aqm.ECN, segs uint16) aqm.Verdict {
	h.seq++
	p := aqm.Packet[Payload]{Payload: h.seq, Meta: aqm.Meta{Size: size, Hash: hash, ECN: ecn, Segments: segs}, Enqueued: 12345}
	h.maxSize = max(h.maxSize, size)
	h.inCall = true
	v := h.q.Enqueue(p, h.now)
	h.inCall = false
	if h.keep {
		h.log = append(h.log, fmt.Sprintf("enq %d %v", p.Payload, v))
	}
	masked := ecn & aqm.ECNMask
	switch {
	case v.Accepted():
		if h.f.LimitBytes > 0 && int64(size) > int64(h.f.LimitBytes) {
			h.failf("packet %d of %d bytes accepted by a queue with LimitBytes %d", h.seq, size, h.f.LimitBytes)
		}
		in := inflight{p: p, flow: flowKey{hash, masked}}
		in.p.ECN, in.p.Enqueued = masked, h.now
		if v == aqm.Marked {
			if !masked.Capable() {
				h.failf("Not-ECT packet %d was marked", h.seq)
			}
			in.p.ECN = aqm.CE
			h.marksSeen += uint64(p.SegmentCount()) // a mark is on every segment
		} else if masked == aqm.CE {
			h.ceAccepted += uint64(p.SegmentCount())
		}
		h.live[p.Payload] = in
		h.liveBytes += int(size)
		h.liveSegs += p.SegmentCount()
		h.accepted.AddMeta(p.Meta)
	case !v.Accepted() && v <= aqm.DroppedOverload:
		h.refused[v].AddMeta(p.Meta)
	default:
		h.failf("Enqueue returned unknown verdict %d", uint8(v))
	}
	h.check()
	return v
}

func (h *harness) dequeue() bool {
	before := h.q.Len()
	h.inCall = true
	p, ok := h.q.Dequeue(h.now)
	h.inCall = false
	if !ok {
		if h.keep {
			h.log = append(h.log, "deq none")
		}
		if n := h.q.Len(); n != 0 {
			h.failf("Dequeue returned nothing but Len is %d (was %d)", n, before)
		}
		h.check()
		return false
	}
	if h.keep {
		h.log = append(h.log, fmt.Sprintf("deq %d %v", p.Payload, p.ECN))
	}
	in, live := h.live[p.Payload]
	if !live {
		h.failf("Dequeue returned packet %d, which is not in the queue (never accepted, or already gone: duplicated)", p.Payload)
		h.check()
		return true
	}
	h.checkSame(in, p, "dequeued")
	h.lastDeq = p
	if p.ECN == aqm.CE && in.p.ECN != aqm.CE {
		h.marksSeen += uint64(in.p.SegmentCount())
	}
	if last, ok := h.lastOut[in.flow]; ok && p.Payload < last {
		h.failf("flow %#x/%v reordered: packet %d dequeued after %d", in.flow.hash, in.flow.ecn, p.Payload, last)
	}
	h.lastOut[in.flow] = p.Payload
	h.leave(in)
	h.dequeued.AddMeta(in.p.Meta)
	h.check()
	return true
}

// check compares the queue's gauges and counters with the model.
func (h *harness) check() {
	q := h.q
	if q.Len() != h.liveSegs || q.Backlog() != h.liveBytes {
		h.failf("Len/Backlog = %d/%d, want %d/%d from what went in and out (Len in wire packets: %d queued packets)", q.Len(), q.Backlog(), h.liveSegs, h.liveBytes, len(h.live))
	}
	if h.f.LimitPackets > 0 && q.Len() > h.f.LimitPackets {
		h.failf("Len %d exceeds LimitPackets %d", q.Len(), h.f.LimitPackets)
	}
	if h.f.LimitBytes > 0 && q.Backlog() > h.f.LimitBytes {
		h.failf("Backlog %d exceeds LimitBytes %d", q.Backlog(), h.f.LimitBytes)
	}
	s := q.Stats()
	if s.Len != q.Len() || s.Backlog != q.Backlog() {
		h.failf("Stats Len/Backlog %d/%d differ from Len()/Backlog() %d/%d", s.Len, s.Backlog, q.Len(), q.Backlog())
	}
	if s.Enqueued != h.accepted {
		h.failf("Stats.Enqueued %+v, want %+v accepted", s.Enqueued, h.accepted)
	}
	if s.Dequeued != h.dequeued {
		h.failf("Stats.Dequeued %+v, want %+v dequeued", s.Dequeued, h.dequeued)
	}
	if s.DroppedQueued != h.droppedQueued {
		h.failf("Stats.DroppedQueued %+v, want %+v handed to the DropFunc", s.DroppedQueued, h.droppedQueued)
	}
	for _, c := range []struct {
		v   aqm.Verdict
		got aqm.Count
	}{{aqm.DroppedOverlimit, s.DroppedOverlimit}, {aqm.DroppedEarly, s.DroppedEarly}, {aqm.DroppedOverload, s.DroppedOverload}} {
		if want := h.refused[c.v].Plus(h.queuedBy[c.v]); c.got != want {
			h.failf("Stats %v %+v, want %+v (refused %+v + queued %+v)", c.v, c.got, want, h.refused[c.v], h.queuedBy[c.v])
		}
	}
	if s.Marked.Packets < h.marksSeen || s.Marked.Packets > h.marksSeen+h.ceAccepted {
		h.failf("Stats.Marked %d packets, want between %d marks seen and %d (plus CE arrivals)", s.Marked.Packets, h.marksSeen, h.marksSeen+h.ceAccepted)
	}
	if s.MaxSize != h.maxSize {
		h.failf("Stats.MaxSize %d, want %d", s.MaxSize, h.maxSize)
	}
}

// drain dequeues until the queue says it is empty, moving time forward a
// millisecond per call, and checks that nothing accepted is left behind.
func (h *harness) drain() {
	h.op = -1
	limit := len(h.live) + 16
	for i := 0; ; i++ {
		if i > limit {
			h.failf("queue still returns packets after %d dequeues with %d packets in it", i, limit-16)
			return
		}
		h.now += aqm.Time(time.Millisecond)
		if !h.dequeue() {
			break
		}
	}
	if len(h.live) != 0 {
		ids := make([]Payload, 0, 4)
		for id := range h.live {
			if len(ids) == 4 {
				break
			}
			ids = append(ids, id)
		}
		h.failf("queue is empty but %d accepted packets never left (lost), e.g. %v", len(h.live), ids)
	}
}

// runTrace plays ops on a fresh queue, then drains it, and returns every
// violation found.
func runTrace(f Factory, seed uint64, ops []traceOp) error {
	return runTraceBudget(f, seed, ops, 0)
}

// randomTraceBudget bounds the packet operations of a generated or fuzzed
// trace, so that a few bursts of a thousand packets cannot make one input
// take seconds: the fuzzer then spends its time on many traces instead.
const randomTraceBudget = 20000

// runTraceBudget is runTrace with at most budget packet operations before
// the drain (0: no limit).
func runTraceBudget(f Factory, seed uint64, ops []traceOp, budget int) error {
	h, err := newHarness(f, seed, false)
	if err != nil {
		return err
	}
	h.budget = budget
	return h.play(ops)
}

func (h *harness) play(ops []traceOp) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.Join(h.err(), fmt.Errorf("op %d: panic: %v", h.op, r))
		}
	}()
	for i, o := range ops {
		h.op = i
		h.apply(o)
		if h.hook != nil {
			h.hook(i)
		}
		if len(h.errs) >= maxErrors {
			break
		}
	}
	if len(h.errs) == 0 {
		h.drain()
	}
	return h.err()
}
