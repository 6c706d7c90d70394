package front

import (
	"sync"

	"github.com/aqmkit/aqmkit/aqm"
)

// stageLimit is how many packets a staged front ([Config.Staged]) holds
// handed over but not yet moved into its queue. A producer that would
// exceed it moves the staged packets into the queue itself, then enqueues
// its own, so nothing is refused for lack of room in the hand-over.
const stageLimit = 256

// stage is the hand-over buffer of a staged front: producers append
// packets under mu, the consumer swaps the whole buffer out under mu and
// moves its packets into the queue under the front's lock. Lock order:
// the front's mu, then the stage's mu.
type stage[T any] struct {
	mu     sync.Mutex
	closed bool // set by Close, under both locks
	pkts   []aqm.Packet[T]
	runs   []stagedRun // consecutive packets that arrived at one instant
	bytes  int
}

// stagedRun is n consecutive staged packets that arrived at now.
type stagedRun struct {
	n   int
	now aqm.Time
}

// staging is the consumer's side of a stage, guarded by the front's mu:
// the buffers it swaps in, and the verdicts of the packets it moves.
type staging[T any] struct {
	pkts    []aqm.Packet[T]
	runs    []stagedRun
	vts     []aqm.Verdict
	refused aqm.DropFunc[T]
	moved   uint64 // packets moved into the queue
}

func newStage[T any]() (*stage[T], *staging[T]) {
	s := &stage[T]{
		pkts: make([]aqm.Packet[T], 0, stageLimit),
		runs: make([]stagedRun, 0, stageLimit),
	}
	g := &staging[T]{
		pkts: make([]aqm.Packet[T], 0, stageLimit),
		runs: make([]stagedRun, 0, stageLimit),
		vts:  make([]aqm.Verdict, stageLimit),
	}
	return s, g
}

// batchClock is the one clock reading of an EnqueueBatch call, taken when
// first needed and refreshed at most once (see [Front.EnqueueBatch]).
type batchClock struct {
	now   aqm.Time
	timed bool // now was read
	fresh bool // now was refreshed
}

// at returns the call's instant; refresh asks for a fresh reading if the
// call has none yet.
func (c *batchClock) at(refresh bool, read func(bool) aqm.Time) aqm.Time {
	if !c.timed || refresh && !c.fresh {
		c.now = read(refresh)
		c.timed = true
		c.fresh = refresh
	}
	return c.now
}

// stageRun hands ps to the consumer of a staged front at the call's
// instant and writes [aqm.Enqueued] into vs. It does nothing and returns
// false if the front is closed or the stage lacks room for all of ps;
// the caller then takes the direct path. A parked consumer is woken when
// the stage was empty.
func (f *Front[T]) stageRun(ps []aqm.Packet[T], vs []aqm.Verdict, clk *batchClock) bool {
	s := f.st
	s.mu.Lock()
	if s.closed || len(s.pkts)+len(ps) > stageLimit {
		s.mu.Unlock()
		return false
	}
	wasEmpty := len(s.pkts) == 0
	// An empty stage with no consumer awake: the coarse clock may be as
	// old as the consumer's sleep, so it is refreshed, as on the direct
	// path.
	now := clk.at(wasEmpty && f.idle(), f.read)
	s.pkts = append(s.pkts, ps...)
	for i := range ps {
		s.bytes += int(ps[i].Size)
		vs[i] = aqm.Enqueued
	}
	if k := len(s.runs) - 1; k >= 0 && s.runs[k].now == now {
		s.runs[k].n += len(ps)
	} else {
		s.runs = append(s.runs, stagedRun{n: len(ps), now: now})
	}
	if wasEmpty {
		// Under the stage's lock, where the consumer's last check
		// before parking (grewFrom) looks, so that check either sees
		// these packets or the consumer is counted as waiting here. A
		// consumer asleep until a departure is left to sleep: nothing can
		// leave before then, and it moves these packets in when it wakes.
		f.wakeArrival()
	}
	s.mu.Unlock()
	return true
}

// wakeArrival wakes the consumers of f, or of the sharded front it is a
// shard of, that sleep until an arrival.
func (f *Front[T]) wakeArrival() {
	if f.cs.awaitArrival() {
		select {
		case f.ready <- struct{}{}:
		default:
		}
	}
	if f.parent != nil && f.parent.awaitArrival() {
		select {
		case f.notify <- struct{}{}:
		default:
		}
	}
}

// moveStagedLocked moves every staged packet into the queue, run by run at
// each run's arrival instant, in the order they were handed over, and gives
// the packets the queue refuses to the refusal function. It does nothing on
// a front that is not staged (and is small enough to inline there). The
// caller holds f.mu.
func (f *Front[T]) moveStagedLocked() {
	if f.st != nil {
		f.moveStaged()
	}
}

func (f *Front[T]) moveStaged() {
	s, g := f.st, f.stg
	s.mu.Lock()
	if len(s.pkts) == 0 {
		s.mu.Unlock()
		return
	}
	g.pkts, s.pkts = s.pkts, g.pkts[:0]
	g.runs, s.runs = s.runs, g.runs[:0]
	s.bytes = 0
	s.mu.Unlock()
	off := 0
	for _, r := range g.runs {
		ps, vs := g.pkts[off:off+r.n], g.vts[:r.n]
		f.enqueueLocked(ps, vs, r.now)
		if g.refused != nil {
			for i, v := range vs {
				if !v.Accepted() {
					g.refused(ps[i], v)
				}
			}
		}
		off += r.n
	}
	g.moved += uint64(off)
	clear(g.pkts) // let the payloads go
	g.pkts = g.pkts[:0]
}

// enqueueLocked offers ps to the queue at now, through its burst path if
// it has one, writing the verdicts to vs, and returns the number accepted.
// The caller holds f.mu.
func (f *Front[T]) enqueueLocked(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	if f.bq != nil {
		return f.bq.EnqueueBatch(ps, vs, now)
	}
	return aqm.EnqueueLoop(f.q, ps, vs, now)
}

// stagedLen returns the number and bytes of the staged packets.
func (f *Front[T]) stagedLen() (n, bytes int) {
	if f.st == nil {
		return 0, 0
	}
	f.st.mu.Lock()
	n, bytes = len(f.st.pkts), f.st.bytes
	f.st.mu.Unlock()
	return n, bytes
}

// lenLocked returns the packets queued and staged. The caller holds f.mu.
func (f *Front[T]) lenLocked() int {
	n, _ := f.stagedLen()
	return f.q.Len() + n
}

// OnRefused sets the function that receives each staged packet the queue
// refuses when the consumer moves it in (see [Config.Staged]), with the
// queue's verdict, so that its buffer can be released; it runs under the
// front's lock, in the consumer's call, and must not call the front. Nil
// (the default) releases such packets; the queue's [aqm.Stats] count them
// either way. On a front that is not staged the queue's verdicts go back
// to the producers and OnRefused has no effect.
func (f *Front[T]) OnRefused(fn aqm.DropFunc[T]) {
	f.mu.Lock()
	if f.stg != nil {
		f.stg.refused = fn
	}
	f.mu.Unlock()
}
