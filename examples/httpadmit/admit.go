package main

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// AdmitConfig configures an Admitter.
type AdmitConfig struct {
	// Workers is how many requests run at once; the rest wait in the queue.
	Workers int
	// Queue is "codel" (the default) or "fifo", an unbounded drop-tail
	// queue for comparison.
	Queue string
	// Target and Interval are CoDel's; zero means 5 ms and 20 ms. The
	// interval is shorter than CoDel's 100 ms for packets: requests do not
	// back off like TCP, so CoDel must raise its drop rate within a few
	// hundred milliseconds.
	Target, Interval time.Duration
	// LIFO serves the newest waiting request first while the queue is
	// overloaded; see Admitter.
	LIFO bool
	// LimitRequests bounds the queue; zero means 100000.
	LimitRequests int
}

// WaitHeader is the response header that carries the request's queue wait.
const WaitHeader = "X-Queue-Wait"

// waiter is one request waiting for admission; its verdict arrives on ch.
type waiter struct {
	ch chan bool // true: admitted, false: shed (503); buffered, capacity 1
}

// Admitter is an admission front for an http.Handler. Each request takes a
// ticket in a CoDel queue (the request's wait is the ticket's sojourn time)
// and waits. A dispatcher goroutine takes a ticket whenever one of Workers
// slots is free: CoDel may drop tickets at that moment, and their requests
// are answered 503 at once; the delivered ticket's request runs.
//
// With LIFO, while the delivered ticket has waited longer than Target (a
// standing queue), the dispatcher runs the newest waiting request instead,
// and the delivered one, the oldest, is answered 503 at once: under overload
// it would be served last and is the likeliest to have been given up by its
// client. This is the adaptive LIFO that Facebook pairs with CoDel-style
// short queue timeouts.
type Admitter struct {
	cfg  AdmitConfig
	next http.Handler
	f    *front.Front[uint64]
	clk  clock.Clock
	slot chan struct{} // one token per free worker

	mu      sync.Mutex
	waiters map[uint64]*waiter
	order   []uint64 // ticket ids in arrival order, with dead ids removed lazily
	nextID  uint64

	admitted, shed, abandoned atomic.Uint64
}

// NewAdmitter returns an admitter in front of next. Start its dispatcher
// with Run.
func NewAdmitter(next http.Handler, cfg AdmitConfig) (*Admitter, error) {
	if cfg.Workers <= 0 {
		return nil, errors.New("httpadmit: Workers must be positive")
	}
	if cfg.LimitRequests == 0 {
		cfg.LimitRequests = 100000
	}
	if cfg.Target == 0 {
		cfg.Target = 5 * time.Millisecond
	}
	if cfg.Interval == 0 {
		cfg.Interval = 20 * time.Millisecond
	}
	a := &Admitter{cfg: cfg, next: next, clk: clock.NewMono(), waiters: map[uint64]*waiter{}, slot: make(chan struct{}, cfg.Workers)}
	for range cfg.Workers {
		a.slot <- struct{}{}
	}
	var q aqm.Queue[uint64]
	var err error
	switch cfg.Queue {
	case "", "codel":
		// Every request counts as one byte, so the one-MTU guard (MTUBytes)
		// means "do not drop while at most one request waits behind".
		q, err = codel.New(codel.Config{Control: codel.Control{Target: cfg.Target, Interval: cfg.Interval, MTUBytes: 1}, LimitPackets: cfg.LimitRequests}, a.onDrop)
	case "fifo":
		q, err = fifo.New(fifo.Config{LimitPackets: cfg.LimitRequests}, a.onDrop)
	default:
		err = errors.New("httpadmit: unknown queue " + strconv.Quote(cfg.Queue))
	}
	if err != nil {
		return nil, err
	}
	if a.f, err = front.New(q, a.clk, front.Config{}); err != nil {
		return nil, err
	}
	return a, nil
}

// onDrop answers a ticket CoDel dropped. It runs under the front's lock and
// only signals.
func (a *Admitter) onDrop(p aqm.Packet[uint64], _ aqm.Verdict) { a.settle(p.Payload, false) }

// settle removes the ticket's waiter, if still there, and gives it its
// verdict. It reports whether a waiter was there.
func (a *Admitter) settle(id uint64, admit bool) bool {
	a.mu.Lock()
	w, ok := a.waiters[id]
	delete(a.waiters, id)
	a.mu.Unlock()
	if ok {
		if admit {
			a.admitted.Add(1)
		} else {
			a.shed.Add(1)
		}
		w.ch <- admit
	}
	return ok
}

// newest removes and returns the newest live waiter's id.
func (a *Admitter) newest() (uint64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.order) > 0 {
		id := a.order[len(a.order)-1]
		a.order = a.order[:len(a.order)-1]
		if _, ok := a.waiters[id]; ok {
			return id, true
		}
	}
	return 0, false
}

// ServeHTTP queues the request, waits for its verdict, and runs it or
// answers 503.
func (a *Admitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := a.clk.Now()
	wt := &waiter{ch: make(chan bool, 1)}
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	a.waiters[id] = wt
	a.order = append(a.order, id)
	for len(a.order) > 0 { // drop dead ids at the front, so order stays small
		if _, ok := a.waiters[a.order[0]]; ok {
			break
		}
		a.order = a.order[1:]
	}
	a.mu.Unlock()
	if v, _ := a.f.Enqueue(aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: 1}}); !v.Accepted() {
		a.settle(id, false)
	}
	var admit bool
	select {
	case admit = <-wt.ch:
	case <-r.Context().Done():
		a.mu.Lock()
		_, still := a.waiters[id]
		delete(a.waiters, id)
		a.mu.Unlock()
		if still {
			a.abandoned.Add(1)
			return // the client is gone; its ticket is skipped when it comes up
		}
		admit = <-wt.ch // the verdict raced with the cancellation
	}
	wait := a.clk.Now().Sub(start)
	w.Header().Set(WaitHeader, strconv.FormatInt(int64(wait), 10))
	if !admit {
		http.Error(w, "overloaded, try again later", http.StatusServiceUnavailable)
		return
	}
	defer func() { a.slot <- struct{}{} }() // free the worker slot
	a.next.ServeHTTP(w, r)
}

// Run dispatches tickets until ctx ends; it then closes the queue, answers
// 503 to every request still waiting, and returns.
func (a *Admitter) Run(ctx context.Context) {
	defer func() {
		a.f.Close() // later requests are refused at Enqueue
		a.f.Flush(a.onDrop)
	}()
	for {
		select {
		case <-a.slot:
		case <-ctx.Done():
			return
		}
		for {
			var buf [1]aqm.Packet[uint64]
			if _, err := a.f.DequeueBatch(ctx, buf[:]); err != nil {
				a.slot <- struct{}{}
				return
			}
			p := buf[0]
			id := p.Payload
			if a.cfg.LIFO && p.Enqueued.Since(a.clk.Now()) > a.cfg.Target {
				if newest, ok := a.newest(); ok && newest != id {
					a.settle(id, false)
					id = newest
				}
			}
			if a.settle(id, true) {
				break // the slot now belongs to the admitted request
			}
			// The client left (or was already served out of order): next.
		}
	}
}

// Counts returns the admitted, shed and abandoned request counts.
func (a *Admitter) Counts() (admitted, shed, abandoned uint64) {
	return a.admitted.Load(), a.shed.Load(), a.abandoned.Load()
}
