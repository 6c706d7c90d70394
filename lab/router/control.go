package router

// This file changes a running router's queue and rate (Reconfigure) without
// losing, duplicating or reordering a packet of a flow.
//
// Each direction's front holds a swapQueue, not the algorithm's queue: an
// indirection through which Reconfigure either reconfigures the queue in
// place (same algorithm: its own Reconfigure, which keeps its state and its
// packets) or replaces it, moving the packets it holds into the new one in
// the order the old one releases them. Reconfigure runs with the router's
// steps paused (accountant.exclusive) and under each front's lock, so no
// packet is read, dequeued or written meanwhile; a packet the consumer took
// out just before is older than every moved one and leaves first.

import (
	"errors"
	"fmt"
	"iter"
	"reflect"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/queues"
)

// swapQueue is a direction's queue behind an indirection that Reconfigure
// can point at a new queue. It always implements aqm.Paced (a zero
// NextDeparture when the queue does not pace itself, which a front reads as
// "not holding back") and aqm.BatchQueue (the queue's own burst path or the
// loop of single calls). Its Stats count from the direction's creation,
// across replacements.
type swapQueue struct {
	q    aqm.Queue[[]byte]
	bq   aqm.BatchQueue[[]byte]
	pq   aqm.Paced
	base aqm.Stats // the counters of the queues replaced, adjusted for the packets moved
	// swaps counts the replacements, in place counts the in-place changes.
	swaps, inPlace int
}

func newSwapQueue(q aqm.Queue[[]byte]) *swapQueue {
	s := &swapQueue{}
	s.set(q)
	return s
}

func (s *swapQueue) set(q aqm.Queue[[]byte]) {
	s.q = q
	s.bq, _ = q.(aqm.BatchQueue[[]byte])
	s.pq, _ = q.(aqm.Paced)
}

var (
	_ aqm.BatchQueue[[]byte] = (*swapQueue)(nil)
	_ aqm.Paced              = (*swapQueue)(nil)
)

func (s *swapQueue) Enqueue(p aqm.Packet[[]byte], now aqm.Time) aqm.Verdict {
	return s.q.Enqueue(p, now)
}
func (s *swapQueue) Dequeue(now aqm.Time) (aqm.Packet[[]byte], bool) { return s.q.Dequeue(now) }
func (s *swapQueue) EnqueueBatch(ps []aqm.Packet[[]byte], vs []aqm.Verdict, now aqm.Time) int {
	if s.bq != nil {
		return s.bq.EnqueueBatch(ps, vs, now)
	}
	return aqm.EnqueueLoop(s.q, ps, vs, now)
}
func (s *swapQueue) DequeueBatch(buf []aqm.Packet[[]byte], now aqm.Time) int {
	if s.bq != nil {
		return s.bq.DequeueBatch(buf, now)
	}
	return aqm.DequeueLoop(s.q, buf, now)
}
func (s *swapQueue) NextDeparture(now aqm.Time) aqm.Time {
	if s.pq != nil {
		return s.pq.NextDeparture(now)
	}
	return 0
}
func (s *swapQueue) Len() int     { return s.q.Len() }
func (s *swapQueue) Backlog() int { return s.q.Backlog() }

// Stats returns the counters of every queue the direction had, the current
// one's length and backlog.
func (s *swapQueue) Stats() aqm.Stats {
	c := s.q.Stats()
	b := s.base
	for _, p := range [][2]*aqm.Count{
		{&c.Enqueued, &b.Enqueued}, {&c.Dequeued, &b.Dequeued}, {&c.Marked, &b.Marked},
		{&c.DroppedOverlimit, &b.DroppedOverlimit}, {&c.DroppedEarly, &b.DroppedEarly},
		{&c.DroppedOverload, &b.DroppedOverload}, {&c.DroppedQueued, &b.DroppedQueued},
	} {
		p[0].Packets += p[1].Packets
		p[0].Bytes += p[1].Bytes
	}
	c.MaxSize = max(c.MaxSize, b.MaxSize)
	return c
}

// statsNames are the names aqm.Stats gives its metrics.
var statsNames = func() map[string]bool {
	m := map[string]bool{}
	for x := range (aqm.Stats{}).Metrics() {
		m[x.Name] = true
	}
	return m
}()

// Metrics lists Stats' metrics, then the queue's own (its Detail), if it
// has any.
func (s *swapQueue) Metrics() iter.Seq[aqm.Metric] {
	st := s.Stats()
	ms, _ := s.q.(aqm.MetricSource)
	var own []aqm.Metric
	if ms != nil {
		for x := range ms.Metrics() {
			if !statsNames[x.Name] {
				own = append(own, x)
			}
		}
	}
	return func(yield func(aqm.Metric) bool) {
		for x := range st.Metrics() {
			if !yield(x) {
				return
			}
		}
		for _, x := range own {
			if !yield(x) {
				return
			}
		}
	}
}

// maxMoveRefusals bounds how often in a row a move asks a paced queue for
// the packets it holds back.
const maxMoveRefusals = 1 << 16

// replace moves every packet of the current queue into q, in the order the
// current one releases them, and makes q current. Each moved packet is
// offered through add, which reports whether q took it. The caller holds the
// front's lock.
func (s *swapQueue) replace(q aqm.Queue[[]byte], now aqm.Time, add func(p aqm.Packet[[]byte]) bool) {
	old := s.q
	var moved, taken aqm.Count
	for refused := 0; old.Len() > 0 && refused < maxMoveRefusals; {
		p, ok := old.Dequeue(now)
		if !ok {
			next := s.NextDeparture(now)
			if !next.After(now) {
				break
			}
			now, refused = next, refused+1
			continue
		}
		refused = 0
		moved.Packets++
		moved.Bytes += uint64(p.Size)
		if add(p) {
			taken.Packets++
			taken.Bytes += uint64(p.Size)
		}
	}
	st := old.Stats()
	st.Dequeued.Packets -= moved.Packets
	st.Dequeued.Bytes -= moved.Bytes
	st.Enqueued.Packets -= taken.Packets
	st.Enqueued.Bytes -= taken.Bytes
	st.DroppedQueued.Packets += moved.Packets - taken.Packets
	st.DroppedQueued.Bytes += moved.Bytes - taken.Bytes
	for _, p := range [][2]*aqm.Count{
		{&s.base.Enqueued, &st.Enqueued}, {&s.base.Dequeued, &st.Dequeued}, {&s.base.Marked, &st.Marked},
		{&s.base.DroppedOverlimit, &st.DroppedOverlimit}, {&s.base.DroppedEarly, &st.DroppedEarly},
		{&s.base.DroppedOverload, &st.DroppedOverload}, {&s.base.DroppedQueued, &st.DroppedQueued},
	} {
		p[0].Packets += p[1].Packets
		p[0].Bytes += p[1].Bytes
	}
	s.base.MaxSize = max(s.base.MaxSize, st.MaxSize)
	s.set(q)
	s.swaps++
}

// unwrap returns the queue a direction's front holds behind its swapQueue
// (every direction's front holds one, so that Reconfigure can replace the
// queue): the algorithm's queue, or its IP wrapper (cakeIP).
func unwrap(q aqm.Queue[[]byte]) aqm.Queue[[]byte] {
	if sw, ok := q.(*swapQueue); ok {
		return sw.q
	}
	return q
}

// reconfigureInPlace calls the algorithm's own Reconfigure with cfg, the
// algorithm's Config as package queues builds it, when the current queue
// is of that algorithm.
func reconfigureInPlace(q aqm.Queue[[]byte], cfg any) error {
	if c, ok := q.(*cakeIP); ok {
		q = c.q
	}
	m := reflect.ValueOf(q).MethodByName("Reconfigure")
	if !m.IsValid() || m.Type().NumIn() != 1 || m.Type().In(0) != reflect.TypeOf(cfg) {
		return errors.New("no Reconfigure for this configuration")
	}
	if err, _ := m.Call([]reflect.Value{reflect.ValueOf(cfg)})[0].Interface().(error); err != nil {
		return err
	}
	return nil
}

// Reconfigure changes the running router's AQM, LimitPackets, Params and
// Rate to cfg's; every other field must be as in Config() (zero fields
// meaning their defaults, as for New), except Clock, OnQueue and Logf,
// which are kept as they are. It validates first: an error names
// the field (an *aqm.ConfigError, joined) and changes nothing. Then, with
// the readers, consumers and delay lines paused for the change, each
// direction's queue is reconfigured in place when the algorithm stays (its
// own Reconfigure: no packet lost, duplicated or reordered, its state
// kept) or replaced by a new queue into which the old one's packets move
// in the order it releases them (its state starts afresh; a packet the new
// queue's limit refuses is dropped and counted as overlimit, and the
// old queue may drop a packet as it releases it, as it would have at that
// instant). A direction's front takes the new rate, or runs unshaped
// for a queue that shapes by itself (CAKE). Rate cannot change between
// zero and non-zero, which changes how directions are run. Directions made
// later use the new configuration. Queue counters (QueueStats.Queue) count
// across replacements.
func (r *Router) Reconfigure(cfg Config) error {
	r.ctl.Lock()
	defer r.ctl.Unlock()
	if err := cfg.Validate(); err != nil {
		return err
	}
	cur := r.Config()
	next := cfg.withDefaults()
	var errs []error
	bad := func(field string, v any, rule string) {
		errs = append(errs, &aqm.ConfigError{Pkg: "router", Field: field, Value: v, Rule: rule})
	}
	fixed := func(field string, a, b any) {
		if a != b {
			bad(field, a, fmt.Sprintf("cannot change while the router runs (it is %v)", b))
		}
	}
	fixed("Delay", next.Delay, cur.Delay)
	fixed("DelayLimit", next.DelayLimit, cur.DelayLimit)
	fixed("MaxQueues", next.MaxQueues, cur.MaxQueues)
	fixed("Prefix4", next.Prefix4, cur.Prefix4)
	fixed("Prefix6", next.Prefix6, cur.Prefix6)
	fixed("Buffers", next.Buffers, cur.Buffers)
	fixed("BufferSize", next.BufferSize, cur.BufferSize)
	fixed("ReadBatch", next.ReadBatch, cur.ReadBatch)
	fixed("Drain", next.Drain, cur.Drain)
	fixed("VnetHdr", next.VnetHdr, cur.VnetHdr)
	fixed("GSO", next.GSO, cur.GSO)
	fixed("Burst", next.Burst, cur.Burst)
	if (next.Rate == 0) != (cur.Rate == 0) {
		bad("Rate", next.Rate, fmt.Sprintf("cannot change between zero (unshaped) and a rate while the router runs (it is %v)", cur.Rate))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	spec, ok := queues.Lookup(next.AQM)
	if !ok {
		return &aqm.ConfigError{Pkg: "router", Field: "AQM", Value: next.AQM, Rule: "is not a queue of package queues"}
	}
	algCfg, err := spec.Config(queues.Options{Rate: next.Rate, LimitPackets: next.LimitPackets})
	if err == nil && next.Params != "" {
		algCfg, err = queues.SetParams(algCfg, next.Params)
	}
	if err != nil {
		return &aqm.ConfigError{Pkg: "router", Field: "Params", Value: next.Params, Rule: err.Error()}
	}
	r.acct.exclusive(func() {
		// The table does not change while the readers are paused.
		for _, d := range r.table.all() {
			r.reconfigureQueue(d, next, algCfg, next.AQM == cur.AQM)
		}
		r.cfg.AQM, r.cfg.Rate, r.cfg.LimitPackets, r.cfg.Params = next.AQM, next.Rate, next.LimitPackets, next.Params
		r.rate.Store(uint64(next.Rate))
	})
	return nil
}

// reconfigureQueue gives the direction d the queue next describes (algCfg
// is its algorithm's configuration): in place when sameAlg and the
// algorithm takes it, else by replacing the queue. It runs with the
// router's steps paused.
func (r *Router) reconfigureQueue(d *Queue, next Config, algCfg any, sameAlg bool) {
	logf := func(format string, args ...any) {
		if r.cfg.Logf != nil {
			r.cfg.Logf("router: %v: "+format, append([]any{d.prefix}, args...)...)
		}
	}
	d.front.WithQueue(func(aq aqm.Queue[[]byte]) {
		sw := aq.(*swapQueue)
		if sameAlg && reconfigureInPlace(sw.q, algCfg) == nil {
			sw.inPlace++
			return
		}
		nq, err := newQueue(next.AQM, next.Rate, next.LimitPackets, next.Params, d.dropQueued)
		if err != nil { // Validate built one with the same configuration
			logf("keeps its queue: %v", err)
			return
		}
		nq, cls := forIP(nq, r.off)
		now := r.clk.Now()
		sw.replace(nq, now, func(pk aqm.Packet[[]byte]) bool {
			m := cls.classify(pk.Payload[min(r.off, len(pk.Payload)):])
			m.Size, m.Segments = pk.Size, pk.Segments
			if pk.ECN == aqm.CE {
				m.ECN = aqm.CE
			}
			if v := nq.Enqueue(aqm.Packet[[]byte]{Payload: pk.Payload, Meta: m}, now); v.Accepted() {
				return true
			}
			r.acct.enterNow()
			d.held.Add(-1)
			d.c.drop(dropOverlimit)
			r.acct.leave()
			r.put(pk.Payload)
			return false
		})
		d.cls = cls
	})
	// Every queue, CAKE included, has a bucket at the rate in its front
	// (frontConfig); the direction's rate is what the GSO rule reads.
	if err := d.front.Reconfigure(frontConfig(next.Rate, next.Burst)); err != nil {
		logf("front: %v", err)
	} else {
		d.rate.Store(uint64(next.Rate))
	}
}

// Reconfigured returns how many times the direction's queue was replaced
// and how many times it was reconfigured in place.
func (d *Queue) Reconfigured() (replaced, inPlace int) {
	d.front.WithQueue(func(q aqm.Queue[[]byte]) {
		if sw, ok := q.(*swapQueue); ok {
			replaced, inPlace = sw.swaps, sw.inPlace
		}
	})
	return replaced, inPlace
}
