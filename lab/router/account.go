package router

// This file makes the router's counters add up at any instant, not only
// once it has stopped.
//
// A packet the router has read is, at every instant, in exactly one of
// these places, and Stats counts it there:
//
//   - written: the device took it (Written);
//   - dropped, for one reason (Dropped);
//   - held by its direction (Queued), which is
//     - in the front: in the queue, or taken out of it by the consumer and
//       not yet handed on (the held counter; a packet leaves it when emit
//       starts on it, or through the queue's DropFunc);
//     - in the delay line, or popped from it and being written (Delayed);
//     - in flight: between emit's start and its push, write or drop, and
//       between the delay line and the device (the inflight counter).
//
// "Read" means offered by a reader: a packet the device delivered into a
// reader's buffers is counted from the moment the reader looks at it.
//
// The counters are atomics updated on several goroutines, so a reader of
// them could see a packet after it left one place and before it reached the
// next. Every step that moves a packet between counted places therefore
// runs inside a step (enter, leave) of the router's accountant, and Stats
// reads the counters only when no step is under way and none ran while it
// read (a sequence count, as a seqlock checks). Steps are per batch, not per
// packet: a reader's offers after one device read, a consumer's emit of one
// dequeued batch, a delay line's write of one due batch. A sampler that
// keeps finding steps under way (a flood) pauses new steps until it has
// read, so Stats never spins for long; the queue's DropFunc, which runs under
// the front's lock, never waits for a pause, so a sampler that takes the
// front's lock cannot deadlock with it.

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// accountant makes the router's counters readable as of one instant.
type accountant struct {
	busy  atomic.Int64  // steps under way
	seq   atomic.Uint64 // steps finished
	pause atomic.Bool   // a sampler waits for the steps under way to end
	mu    sync.Mutex    // one sampler at a time
	// paused counts the samples that had to pause the router.
	paused atomic.Uint64
}

// enter starts a step; it waits while a sampler has paused the router. A
// step must not call enter again before leave.
func (a *accountant) enter() {
	for {
		a.busy.Add(1)
		if !a.pause.Load() {
			return
		}
		a.busy.Add(-1)
		for a.pause.Load() {
			runtime.Gosched()
		}
	}
}

// enterNow starts a step without waiting: for code that runs under a lock a
// sampler may take (the queue's DropFunc, under the front's lock), or inside
// another step.
func (a *accountant) enterNow() { a.busy.Add(1) }

// leave ends a step.
func (a *accountant) leave() {
	a.seq.Add(1)
	a.busy.Add(-1)
}

// quietTries is how many times a sampler looks for a quiet instant before
// it pauses the router.
const quietTries = 64

// sample runs read, which must only load counters (and may take the
// front's and the delay line's locks), at an instant when no step is under
// way, repeating it until a run saw none start or end.
func (a *accountant) sample(read func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range quietTries {
		if a.tryRead(read) {
			return
		}
		runtime.Gosched()
	}
	a.paused.Add(1)
	a.pause.Store(true)
	defer a.pause.Store(false)
	for !a.tryRead(read) {
		runtime.Gosched()
	}
}

// exclusive runs fn with every step paused: no packet is read, emitted or
// written meanwhile (a queue's DropFunc may still run, under its front's
// lock). Samplers wait too.
func (a *accountant) exclusive(fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pause.Store(true)
	defer a.pause.Store(false)
	for a.busy.Load() != 0 {
		runtime.Gosched()
	}
	fn()
}

func (a *accountant) tryRead(read func()) bool {
	s := a.seq.Load()
	if a.busy.Load() != 0 {
		return false
	}
	read()
	return a.busy.Load() == 0 && a.seq.Load() == s
}

// bufferBytes returns the bytes of every buffer the router's pools made.
func (r *Router) bufferBytes() int64 {
	n := r.pool.made.Load() * int64(r.pool.size)
	if r.seg != nil {
		n += r.seg.made.Load() * int64(r.seg.size)
	}
	return n
}

// buffersInUse returns the packet buffers out of the router's pools.
func (r *Router) buffersInUse() int {
	n := r.pool.inUse()
	if r.seg != nil {
		n += r.seg.inUse()
	}
	return n
}
