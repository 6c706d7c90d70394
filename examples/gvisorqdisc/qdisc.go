package gvisorqdisc

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
	"github.com/aqmkit/aqmkit/queues"
)

// BatchSize is the most packets the dispatcher hands to the lower
// endpoint's WritePackets in one call: 47, as gVisor's fifo qdisc, the
// segments of one 64 KiB GSO write cut at 1,420 bytes.
const BatchSize = 47

// DefaultQueue is the registry queue a zero [Config] uses.
const DefaultQueue = "fq-codel"

// Packet is what the queue holds: a reference to a netstack packet.
type Packet = aqm.Packet[*stack.PacketBuffer]

// Config configures a [QDisc]. The zero Config is FQ-CoDel with its
// defaults and no rate: packets then leave as fast as the lower endpoint
// takes them, and a queue forms only while its WritePackets blocks.
type Config struct {
	// Queue is the registry name of the queue (see [queues.Names]): "fifo",
	// "codel", "fq-codel", "cake", …. Empty means [DefaultQueue].
	Queue string
	// Options configure the queue through the registry. A zero
	// Options.Rate takes Rate, so that the queue's limits are sized for the
	// link; Options.Seed also keys the flow hash.
	Options queues.Options
	// Rate is the rate at which packets leave, in bits per second of
	// pkt.Size() (every header the link carries). Set it a little below the
	// real bottleneck so that the queue forms here. Zero means unlimited.
	// A queue that shapes by itself ([queues.Spec.Shapes], CAKE) paces at
	// Rate and the front in front of it runs unlimited.
	Rate aqm.Rate
	// BurstBytes is the depth of the rate's token bucket; zero means the
	// front's default (2 ms of the rate, at least 3028 bytes).
	BurstBytes int
	// Clock is the clock of the front and the queue; nil means a
	// [clock.Coarse] the front refreshes itself.
	Clock clock.Clock
	// OnDequeue, if not nil, is called with each packet just before the
	// dispatcher hands it to the lower endpoint, on the dispatcher's
	// goroutine, after any CE mark was written into it. The packet must
	// not be kept past the call.
	OnDequeue func(pkt *stack.PacketBuffer)
	// OnDrop, if not nil, is called once for every packet the qdisc drops
	// and will never send, with the reason: refused by WritePacket (on the
	// caller's goroutine, before WritePacket returns ErrNoBufferSpace),
	// dropped by the queue after it accepted it (an AQM drop at dequeue, an
	// eviction to make room), or discarded by Close. Queued drops run under
	// the front's lock, so OnDrop must not call the QDisc. The packet must
	// not be kept past the call: its reference is released after it.
	OnDrop func(pkt *stack.PacketBuffer, why aqm.Verdict)
}

// QDisc is a [stack.QueueingDiscipline] backed by an aqmkit queue behind a
// [front.Front]. Install it with stack.NICOptions{QDisc: q}; the NIC
// closes it when it is removed. All methods are safe for concurrent use.
type QDisc struct {
	lower     stack.LinkWriter
	f         *front.Front[*stack.PacketBuffer]
	h         iphdr.Hasher
	need      need
	onDequeue func(*stack.PacketBuffer)
	onDrop    func(*stack.PacketBuffer, aqm.Verdict)

	drops   atomic.Pointer[dropCounters]
	unsent  atomic.Uint64 // packets the lower endpoint did not take
	marks   atomic.Uint64 // CE marks written into headers
	closing sync.Once
	done    chan struct{}
}

// dropCounters are the NIC counters that queued drops also count in.
type dropCounters struct{ nic, stack *tcpip.StatCounter }

var _ stack.QueueingDiscipline = (*QDisc)(nil)

// ErrNilLower is returned by [New] for a nil lower endpoint.
var ErrNilLower = errors.New("gvisorqdisc: the lower endpoint is nil")

// New returns a QDisc that writes to lower (normally the link endpoint the
// NIC is created with) and starts its dispatcher goroutine. The error
// names a bad field of cfg or an unknown queue.
func New(lower stack.LinkWriter, cfg Config) (*QDisc, error) {
	if lower == nil {
		return nil, ErrNilLower
	}
	name := cfg.Queue
	if name == "" {
		name = DefaultQueue
	}
	spec, ok := queues.Lookup(name)
	opts := cfg.Options
	if opts.Rate == 0 {
		opts.Rate = cfg.Rate
	}
	q := &QDisc{lower: lower, onDequeue: cfg.OnDequeue, onDrop: cfg.OnDrop, done: make(chan struct{})}
	aq, err := queues.New[*stack.PacketBuffer](name, opts, q.dropQueued)
	if err != nil {
		return nil, err
	}
	fcfg := front.Config{Rate: cfg.Rate, BurstBytes: cfg.BurstBytes}
	if ok && spec.Shapes {
		fcfg.Rate = 0
	}
	f, err := front.New(aq, cfg.Clock, fcfg)
	if err != nil {
		return nil, err
	}
	q.f = f
	if spec.Marks && !opts.DisableECN {
		q.need |= needECN
	}
	if flowQueues[spec.Name] {
		q.need |= needHash | needECN
	}
	if m, ok := lower.(interface{ MaxHeaderLength() uint16 }); ok && m.MaxHeaderLength() == 0 && q.need != 0 {
		// A link endpoint reserves its MaxHeaderLength in front of every
		// packet and pushes its header there; with none, no packet it
		// writes carries a link header.
		q.need |= linkless
	}
	if opts.Seed != 0 {
		q.h = iphdr.NewHasherWithKey(opts.Seed, ^opts.Seed)
	} else {
		q.h = iphdr.NewHasher()
	}
	go q.dispatch()
	return q, nil
}

// WritePacket implements [stack.QueueingDiscipline]: it offers pkt to the
// queue, holding a reference to it while it is queued. A packet the queue
// refuses returns [tcpip.ErrNoBufferSpace], which the NIC counts in its
// TxPacketsDroppedNoBufferSpace; after Close, WritePacket returns
// [tcpip.ErrClosedForSend].
func (q *QDisc) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	m := meta(&q.h, pkt, q.need)
	// The reference is taken before Enqueue: the queue may hand the packet
	// to the DropFunc inside Enqueue (an eviction of its own flow's head).
	pkt.IncRef()
	v, err := q.f.Enqueue(Packet{Payload: pkt, Meta: m})
	if v.Accepted() {
		return nil
	}
	if err != nil {
		pkt.DecRef()
		return &tcpip.ErrClosedForSend{}
	}
	if q.onDrop != nil {
		q.onDrop(pkt, v)
	}
	pkt.DecRef()
	return &tcpip.ErrNoBufferSpace{}
}

// dropQueued is the queue's DropFunc: a packet it had accepted leaves
// without being sent.
func (q *QDisc) dropQueued(p Packet, why aqm.Verdict) {
	if c := q.drops.Load(); c != nil {
		c.nic.Increment()
		c.stack.Increment()
	}
	if q.onDrop != nil {
		q.onDrop(p.Payload, why)
	}
	p.Payload.DecRef()
}

// dispatch moves packets from the front to the lower endpoint, up to
// BatchSize at a time, at the rate, until the front is closed and empty.
func (q *QDisc) dispatch() {
	defer close(q.done)
	buf := make([]Packet, BatchSize)
	var batch stack.PacketBufferList
	for {
		n, err := q.f.DequeueBatch(context.Background(), buf)
		if err != nil {
			return // closed and drained
		}
		for i := range buf[:n] {
			pkt := buf[i].Payload
			if buf[i].ECN == aqm.CE && setCE(pkt) {
				q.marks.Add(1)
			}
			if q.onDequeue != nil {
				q.onDequeue(pkt)
			}
			batch.PushBack(pkt)
		}
		clear(buf[:n]) // in one sweep: a store per packet costs more
		if w, _ := q.lower.WritePackets(batch); w < n {
			q.unsent.Add(uint64(n - max(w, 0)))
		}
		batch.Reset() // releases the queue's references
	}
}

// Close implements [stack.QueueingDiscipline]: it refuses new packets,
// discards the queued ones (each to OnDrop, with [aqm.DroppedOverlimit],
// and counted as a drop), and waits for the dispatcher to finish the batch
// it is writing. Close is idempotent.
func (q *QDisc) Close() {
	q.closing.Do(func() {
		q.f.Close()
		q.f.Flush(q.dropQueued)
	})
	<-q.done
}

// CountDrops makes the drops of packets the queue had accepted count in
// the NIC's TxPacketsDroppedNoBufferSpace, per NIC and stack-wide, where
// the packets it refuses already count (the NIC counts WritePacket's
// ErrNoBufferSpace itself). Call it once the NIC exists. Then the NIC's
// Tx.Packets counts what entered the qdisc, and Tx.Packets minus the
// queued drops minus the backlog is what reached the link. It returns
// false if s has no NIC id.
func (q *QDisc) CountDrops(s *stack.Stack, id tcpip.NICID) bool {
	info, ok := s.NICInfo()[id]
	if !ok {
		return false
	}
	q.drops.Store(&dropCounters{nic: info.Stats.TxPacketsDroppedNoBufferSpace, stack: s.Stats().NICs.TxPacketsDroppedNoBufferSpace})
	return true
}

// Stats returns the queue's counters.
func (q *QDisc) Stats() aqm.Stats { return q.f.Stats() }

// Front returns the front the queue sits behind, for its Detail, SetRate
// and WithQueue.
func (q *QDisc) Front() *front.Front[*stack.PacketBuffer] { return q.f }

// Detail is the qdisc's own counters, beyond the queue's and the front's.
type Detail struct {
	// Marked counts the CE marks written into IP headers.
	Marked uint64
	// Unsent counts packets the lower endpoint's WritePackets did not
	// take (it returned fewer than it was given).
	Unsent uint64
}

// Detail returns the qdisc's own counters.
func (q *QDisc) Detail() Detail {
	return Detail{Marked: q.marks.Load(), Unsent: q.unsent.Load()}
}

// Metrics lists the front's metrics (the queue's Stats and Detail, then
// the front's), then ce_written_packets and unsent_packets (counters), so
// that a QDisc is an [aqm.MetricSource] for an exporter.
func (q *QDisc) Metrics() iter.Seq[aqm.Metric] {
	return func(yield func(aqm.Metric) bool) {
		for m := range q.f.Metrics() {
			if !yield(m) {
				return
			}
		}
		d := q.Detail()
		_ = yield(aqm.Metric{Name: "ce_written_packets", Kind: aqm.Counter, Value: float64(d.Marked)}) &&
			yield(aqm.Metric{Name: "unsent_packets", Kind: aqm.Counter, Value: float64(d.Unsent)})
	}
}
