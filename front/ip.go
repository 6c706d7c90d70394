package front

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/iphdr"
)

// errClassifiesIP is returned by [NewIP] for a queue wrapped by [HashIP]
// that has a ClassifyIP method of its own, such as a CAKE queue: wrapped,
// its host isolation, DiffServ tins and ACK filter would see none of what
// its own classifier finds. Pass such a queue to NewIP as it is.
var errClassifiesIP = errors.New("front: the queue classifies IP packets itself; pass it to NewIP without HashIP")

// IPQueue is a queue of raw IP packets that says how to classify them:
// [IP] calls ClassifyIP for every packet, on its single and its batch path
// alike, before the queue sees the packet, then offers the packet with
// what ClassifyIP found through EnqueueInfo, under the front's lock. C is
// what the queue needs to know beyond [aqm.Meta]. A CAKE queue
// (*cake.Queue[*front.Buf]) is an IPQueue[cake.Info]: its ClassifyIP gives
// host hashes, the DSCP and the TCP ACK summary. Any other queue becomes
// an IPQueue[NoInfo] through [HashIP].
//
// ClassifyIP runs outside the front's lock, in the producer's goroutine,
// possibly on several at once: it must be safe for concurrent use with
// every method of the queue. It must return a usable Meta (Size at least)
// with its error, as iphdr's Meta does; the packet is queued all the same
// and counted in [IPDetail.NotIP].
//
// The front enqueues only through EnqueueInfo (and, for a queue wrapped by
// HashIP, the queue's own EnqueueBatch): a type that embeds a queue and
// overrides its Enqueue must override those as well, or the embedded
// queue's methods run instead.
type IPQueue[C any] interface {
	aqm.Queue[*Buf]
	ClassifyIP(pkt []byte) (aqm.Meta, C, error)
	EnqueueInfo(p aqm.Packet[*Buf], info C, now aqm.Time) aqm.Verdict
}

// NoInfo is the class of a queue wrapped by [HashIP]: nothing beyond its
// [aqm.Meta].
type NoInfo struct{}

// hashedIP is the IPQueue that HashIP makes.
type hashedIP struct {
	aqm.Queue[*Buf]
	h iphdr.Hasher
}

func (q *hashedIP) ClassifyIP(pkt []byte) (aqm.Meta, NoInfo, error) {
	m, err := q.h.Meta(pkt)
	return m, NoInfo{}, err
}

// Metrics lists the wrapped queue's metrics, so that the IP front lists
// them as it would the queue's own.
func (q *hashedIP) Metrics() iter.Seq[aqm.Metric] { return queueMetrics(q.Queue) }

func (q *hashedIP) EnqueueInfo(p aqm.Packet[*Buf], _ NoInfo, now aqm.Time) aqm.Verdict {
	return q.Queue.Enqueue(p, now)
}

// HashIP makes q an [IPQueue] for [NewIP] that classifies each packet with
// h's [iphdr.Hasher.Meta]: Size the IP packet's length, Hash h's keyed
// flow hash (or host hash, by h's mode), ECN the header's codepoint. The
// IP front then enqueues bursts through q's own burst path
// ([aqm.BatchQueue]) when it has one, with every packet already
// classified. Use [iphdr.NewHasher] in production (a secret key);
// [iphdr.NewHasherWithKey] reproduces the hashes for tests.
func HashIP(q aqm.Queue[*Buf], h iphdr.Hasher) IPQueue[NoInfo] {
	return &hashedIP{Queue: q, h: h}
}

// IPConfig configures an [IP] front.
type IPConfig struct {
	// Config is the front's rate, burst and wake slack. Staged must be
	// false. Rate must be zero when the queue paces its own output
	// ([aqm.Paced], as CAKE does with or without a rate): give the rate
	// to the queue (cake.Config.Rate, cake.ConfigForLink) instead, where
	// the shaper sees the tins and the overhead.
	Config
	// Pool receives every buffer the front refuses or drops; nil means a
	// new pool with [PoolConfig]'s defaults, which [IP.Config] returns.
	// Give the same pool's [Pool.Drop] to the queue as its DropFunc.
	// Fixed when the front is made.
	Pool *Pool
	// VnetHdr says every Buf starts with a virtio-net header
	// (iphdr.VnetHdr, as a TUN opened with IFF_VNET_HDR delivers it): the
	// front classifies and marks the IP packet behind it, and gives a GSO
	// super-packet's Meta its segment count (iphdr.GSOSegments) in
	// [aqm.Meta.Segments], so that the queue counts wire packets. The
	// front queues a super-packet whole, and a mark applies to all its
	// segments; to split instead, cut it with iphdr.SplitGSO before
	// Enqueue when [GSOPolicy.Split] says so for the front's rate. The
	// front never coalesces packets, so a mark covers exactly the
	// segments of the packet the queue marked. Size counts IP bytes, the
	// virtio-net header excluded; for a super-packet it is the bytes its
	// segments put on the wire, each with its own IP and transport headers
	// (iphdr.GSOWireSize), so that the rate, byte limits and Stats agree
	// with what the link carries whether the packet is split or kept. A
	// Buf whose header is bad is queued as not IP ([IPDetail.NotIP]).
	// Fixed when the front is made.
	VnetHdr bool
}

// IP is a [Front] for raw IP packets held in [Buf]s: producers hand it
// buffers, it classifies each packet (with the queue's own classifier, or
// iphdr's flow hash through [HashIP]), queues it, and the consumer gets
// the buffers back with Congestion Experienced written into the header of
// every packet the queue marked (iphdr.SetCE, which keeps the IPv4
// checksum right). A buffer the queue refuses, or the front refuses
// because it is closed, goes back to the [Pool] at once: a producer never
// has to release a buffer it gave away. What the front could not read or
// mark is counted in [IPDetail].
//
//	pool, _ := front.NewPool(front.PoolConfig{})
//	q, _ := cake.New(cake.ConfigForLink(50*aqm.Mbit, 20*time.Millisecond), pool.Drop)
//	f, _ := front.NewIP(q, nil, front.IPConfig{Pool: pool}) // CAKE shapes: front rate 0
//	go f.Run(ctx, func(bs []*front.Buf) { for _, b := range bs { tun.Write(b.B) } })
//	b := pool.Get(); n, _ := tun.Read(b.B); b.B = b.B[:n]; f.Enqueue(b)
//
// All methods are safe for concurrent use.
type IP[C any] struct {
	f     *Front[*Buf]
	q     IPQueue[C]
	batch aqm.BatchQueue[*Buf] // the burst path of a queue HashIP wrapped, or nil
	pool  *Pool
	paced bool
	off   int       // bytes before the IP packet: the virtio-net header, or 0
	in    sync.Pool // *ipScratch[C], for EnqueueBatch
	out   sync.Pool // *[RunBatch]aqm.Packet[*Buf], for the dequeues

	// Guarded by f.mu.
	notIP, refused, rewritten, unmarkable aqm.Count
}

// ipChunk is how many packets EnqueueBatch classifies before it takes the
// lock.
const ipChunk = 64

type ipScratch[C any] struct {
	ps  [ipChunk]aqm.Packet[*Buf]
	cs  [ipChunk]C
	bad [ipChunk]bool
}

// NewIP returns an IP front over q that reads time from c (nil: a
// [clock.Coarse], as for [New]) with cfg's rate, burst and slack. It
// returns an error for a nil queue or for a queue with its own classifier
// (a ClassifyIP method, as CAKE has) wrapped by [HashIP], and a [aqm.ConfigError]
// naming Staged or Rate if cfg asks for a staged front or for a rate in
// front of a queue that paces itself, besides cfg's validation errors.
func NewIP[C any](q IPQueue[C], c clock.Clock, cfg IPConfig) (*IP[C], error) {
	if unusable[*Buf](q) {
		return nil, errNilQueue
	}
	inner := aqm.Queue[*Buf](q)
	var batch aqm.BatchQueue[*Buf]
	if h, ok := any(q).(*hashedIP); ok {
		if unusable(h.Queue) {
			return nil, errNilQueue
		}
		if reflect.ValueOf(h.Queue).MethodByName("ClassifyIP").IsValid() {
			return nil, errClassifiesIP
		}
		inner = h.Queue
		batch, _ = h.Queue.(aqm.BatchQueue[*Buf])
	}
	_, paced := inner.(aqm.Paced)
	if err := checkIP(cfg.Config, paced); err != nil {
		return nil, err
	}
	pool := cfg.Pool
	if pool == nil {
		pool, _ = NewPool(PoolConfig{})
	}
	f, err := New(inner, c, cfg.Config)
	if err != nil {
		return nil, err
	}
	x := &IP[C]{f: f, q: q, batch: batch, pool: pool, paced: paced}
	if cfg.VnetHdr {
		x.off = iphdr.VnetHdrLen
	}
	x.in.New = func() any { return new(ipScratch[C]) }
	x.out.New = func() any { return new([RunBatch]aqm.Packet[*Buf]) }
	return x, nil
}

// checkIP reports every reason cfg does not suit an IP front over a queue
// that paces itself (paced) or not.
func checkIP(cfg Config, paced bool) error {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if cfg.Staged {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "Staged", Value: true, Rule: "must be false in an IP front, which classifies each packet before the queue sees it"})
	}
	if paced && cfg.Rate != 0 {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "Rate", Value: cfg.Rate, Rule: "must be 0 when the queue paces its own output (aqm.Paced, as CAKE does): set the rate on the queue"})
	}
	return errors.Join(errs...)
}

// Enqueue classifies b's packet and offers it to the queue at the clock's
// current time, as [Front.Enqueue] does. The front takes b in every case:
// if the verdict refuses the packet (a full queue, or [ErrClosed] after
// Close), b is already back in the pool and must not be used.
func (x *IP[C]) Enqueue(b *Buf) (aqm.Verdict, error) {
	m, info, err := x.classify(b.B)
	p := aqm.Packet[*Buf]{Payload: b, Meta: m}
	f := x.f
	f.mu.Lock()
	if f.closed {
		f.refusedClosed.Add(m.Size)
		f.mu.Unlock()
		x.pool.Put(b)
		return aqm.DroppedOverlimit, ErrClosed
	}
	if err != nil {
		x.notIP.Add(m.Size)
	}
	wasEmpty := f.q.Len() == 0
	v := x.q.EnqueueInfo(p, info, f.read(wasEmpty && f.idle()))
	if !v.Accepted() {
		x.refused.Add(m.Size)
	} else if wasEmpty {
		f.wakeLocked()
	}
	f.mu.Unlock()
	if !v.Accepted() {
		x.pool.Put(b)
	}
	return v, nil
}

// EnqueueBatch classifies and offers bs[i] for i in [0, n), n =
// min(len(bs), len(vs)), writing each verdict into vs[i], at one clock
// reading: exactly what n calls of Enqueue at one instant would do. The
// packets are classified before the lock is taken, in runs of 64, each
// run queued under one lock (through the queue's burst path for a queue
// wrapped by [HashIP]). It returns how many were accepted; as with
// Enqueue, every refused buffer is back in the pool. After Close it
// refuses them all with [aqm.DroppedOverlimit] and returns [ErrClosed].
func (x *IP[C]) EnqueueBatch(bs []*Buf, vs []aqm.Verdict) (int, error) {
	n := min(len(bs), len(vs))
	if n == 0 {
		return 0, nil
	}
	sc := x.in.Get().(*ipScratch[C])
	defer x.in.Put(sc)
	var clk batchClock
	acc, closed := 0, false
	for base := 0; base < n; base += ipChunk {
		m := min(n-base, ipChunk)
		for i := range m {
			b := bs[base+i]
			meta, info, err := x.classify(b.B)
			sc.ps[i] = aqm.Packet[*Buf]{Payload: b, Meta: meta}
			sc.cs[i] = info
			sc.bad[i] = err != nil
		}
		a, cl := x.enqueueRun(sc, vs[base:base+m], &clk)
		acc += a
		closed = closed || cl
	}
	if closed {
		return acc, ErrClosed
	}
	return acc, nil
}

// classify is the queue's ClassifyIP of the IP packet in b, behind its
// virtio-net header with VnetHdr, whose GSO segment count it adds.
func (x *IP[C]) classify(b []byte) (aqm.Meta, C, error) {
	if x.off == 0 {
		return x.q.ClassifyIP(b)
	}
	h, herr := iphdr.ParseVnetHdr(b)
	ip := b[min(x.off, len(b)):]
	m, info, err := x.q.ClassifyIP(ip)
	if herr != nil {
		var zero C
		return aqm.Meta{Size: uint32(len(ip))}, zero, herr
	}
	if err == nil && h.IsGSO() {
		n, gerr := iphdr.GSOSegments(ip, h)
		w, werr := iphdr.GSOWireSize(ip, h)
		if gerr == nil && werr == nil {
			m.Segments = uint16(min(n, 0xffff))
			m.Size = uint32(min(uint64(w), 1<<31))
		}
	}
	return m, info, err
}

// enqueueRun queues the len(vs) classified packets of sc under one lock
// and gives the refused ones back to the pool.
func (x *IP[C]) enqueueRun(sc *ipScratch[C], vs []aqm.Verdict, clk *batchClock) (acc int, closed bool) {
	m := len(vs)
	ps := sc.ps[:m]
	f := x.f
	f.mu.Lock()
	if f.closed {
		for i := range ps {
			f.refusedClosed.Add(ps[i].Size)
			vs[i] = aqm.DroppedOverlimit
		}
		closed = true
	} else {
		wasEmpty := f.q.Len() == 0
		now := clk.at(wasEmpty && f.idle(), f.read)
		if x.batch != nil {
			acc = x.batch.EnqueueBatch(ps, vs, now)
		} else {
			for i := range ps {
				v := x.q.EnqueueInfo(ps[i], sc.cs[i], now)
				vs[i] = v
				if v.Accepted() {
					acc++
				}
			}
		}
		for i := range ps {
			if sc.bad[i] {
				x.notIP.Add(ps[i].Size)
			}
			if !vs[i].Accepted() {
				x.refused.Add(ps[i].Size)
			}
		}
		if wasEmpty && f.q.Len() > 0 {
			f.wakeLocked()
		}
	}
	f.mu.Unlock()
	if acc < m {
		for i := range ps {
			if !vs[i].Accepted() {
				x.pool.Put(ps[i].Payload)
			}
		}
	}
	clear(ps)
	clear(sc.cs[:m])
	return acc, closed
}

// deliver writes CE into the header of every packet of ps the queue
// marked, puts the buffers to hand on into bs (in order), and returns how
// many. A packet marked CE whose header cannot carry it (Not-ECT, or not
// IP) is dropped, as RFC 3168 asks of a packet that may not be marked,
// and its buffer goes back to the pool.
func (x *IP[C]) deliver(ps []aqm.Packet[*Buf], bs []*Buf) int {
	var rewritten, unmarkable aqm.Count
	k := 0
	for i := range ps {
		p := &ps[i]
		if p.ECN == aqm.CE {
			ip := p.Payload.B[min(x.off, len(p.Payload.B)):]
			e, err := iphdr.ECN(ip)
			if err != nil || e == aqm.NotECT {
				unmarkable.Add(p.Size)
				x.pool.Put(p.Payload)
				continue
			}
			if e != aqm.CE {
				_ = iphdr.SetCE(ip) // ECT(0) or ECT(1): cannot fail
				rewritten.Add(p.Size)
			}
		}
		bs[k] = p.Payload
		k++
	}
	if rewritten.Packets|unmarkable.Packets != 0 {
		x.f.mu.Lock()
		x.rewritten = x.rewritten.Plus(rewritten)
		x.unmarkable = x.unmarkable.Plus(unmarkable)
		x.f.mu.Unlock()
	}
	return k
}

// DequeueBatch is [Front.DequeueBatch] for buffers: it blocks until at
// least one packet may leave, then fills bs with up to len(bs) of them
// (at most [RunBatch] per call), CE written where the queue marked them,
// and returns how many. The caller owns the buffers it gets: Put each back
// into the pool once sent.
func (x *IP[C]) DequeueBatch(ctx context.Context, bs []*Buf) (int, error) {
	if len(bs) == 0 {
		return 0, nil
	}
	sc := x.out.Get().(*[RunBatch]aqm.Packet[*Buf])
	defer x.out.Put(sc)
	ps := sc[:min(len(bs), RunBatch)]
	for {
		n, err := x.f.DequeueBatch(ctx, ps)
		if err != nil {
			return 0, err
		}
		k := x.deliver(ps[:n], bs)
		clear(ps[:n])
		if k > 0 {
			return k, nil
		}
	}
}

// TryDequeueBatch is [Front.TryDequeueBatch] for buffers: it fills bs
// with up to len(bs) (at most [RunBatch]) buffers whose packets may leave
// now, and returns how many and, when fewer, how long to wait (zero: the
// queue is empty). The caller owns the buffers it gets.
func (x *IP[C]) TryDequeueBatch(bs []*Buf) (n int, wait time.Duration) {
	if len(bs) == 0 {
		return 0, 0
	}
	sc := x.out.Get().(*[RunBatch]aqm.Packet[*Buf])
	defer x.out.Put(sc)
	ps := sc[:min(len(bs), RunBatch)]
	for {
		m, w := x.f.TryDequeueBatch(ps)
		k := x.deliver(ps[:m], bs)
		clear(ps[:m])
		if k > 0 || m == 0 {
			return k, w
		}
	}
}

// Run hands the queue's packets to send in batches of up to [RunBatch],
// CE written where the queue marked them, at the front's rate (or the
// queue's own pace), until ctx ends (it returns ctx's error) or the front
// is closed and drained (it returns nil). After send returns, Run puts
// every buffer of the batch back into the pool: send must not keep them
// or their bytes. send runs outside the lock and may call Enqueue.
func (x *IP[C]) Run(ctx context.Context, send func([]*Buf)) error {
	ps := make([]aqm.Packet[*Buf], RunBatch)
	bs := make([]*Buf, RunBatch)
	for {
		n, err := x.f.DequeueBatch(ctx, ps)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil
			}
			return err
		}
		k := x.deliver(ps[:n], bs)
		clear(ps[:n])
		if k == 0 {
			continue
		}
		send(bs[:k])
		for _, b := range bs[:k] {
			x.pool.Put(b)
		}
		clear(bs[:k])
	}
}

// Close is [Front.Close]: further packets are refused (their buffers go
// back to the pool) and blocked consumers drain what is queued.
func (x *IP[C]) Close() { x.f.Close() }

// Flush takes every queued packet out now, as [Front.Flush] does, hands
// each to drop, and returns how many. A nil drop puts each buffer back into
// the front's pool (counted in [PoolStats.Dropped]); a non-nil drop owns
// the buffers it gets, as a consumer does.
func (x *IP[C]) Flush(drop aqm.DropFunc[*Buf]) int {
	if drop == nil {
		drop = x.pool.Drop
	}
	return x.f.Flush(drop)
}

// SetRate changes the front's rate as [Front.SetRate] does. It refuses a
// non-zero rate in front of a queue that paces itself with a
// [aqm.ConfigError] naming Rate, and then changes nothing.
func (x *IP[C]) SetRate(r aqm.Rate) error {
	if x.paced && r != 0 {
		return checkIP(Config{Rate: r}, true)
	}
	return x.f.SetRate(r)
}

// Reconfigure validates cfg as [NewIP] does and applies its rate, burst
// and wake slack as [Front.Reconfigure] does. Pool and VnetHdr are fixed
// when the front is made: a nil Pool keeps the pool in effect, and another
// pool or VnetHdr value is refused with an [aqm.ConfigError] naming the
// field. On error nothing changes.
func (x *IP[C]) Reconfigure(cfg IPConfig) error {
	errs := []error{checkIP(cfg.Config, x.paced)}
	if cfg.Pool != nil && cfg.Pool != x.pool {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "Pool", Value: "another pool", Rule: "is fixed when the front is made"})
	}
	if cfg.VnetHdr != (x.off != 0) {
		errs = append(errs, &aqm.ConfigError{Pkg: "front", Field: "VnetHdr", Value: cfg.VnetHdr, Rule: "is fixed when the front is made"})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return x.f.Reconfigure(cfg.Config)
}

// Config returns the configuration in effect: the front's (see
// [Front.Config]), its pool (the default one when none was given) and
// VnetHdr.
func (x *IP[C]) Config() IPConfig {
	return IPConfig{Config: x.f.Config(), Pool: x.pool, VnetHdr: x.off != 0}
}

// WithQueue calls fn with the queue under the front's lock, as
// [Front.WithQueue] does (for a queue wrapped by [HashIP], the queue
// itself). fn must not keep the queue or call the front.
func (x *IP[C]) WithQueue(fn func(q aqm.Queue[*Buf])) { x.f.WithQueue(fn) }

// Stats returns a snapshot of the queue's counters.
func (x *IP[C]) Stats() aqm.Stats { return x.f.Stats() }

// IPDetail is a snapshot of an IP front's own state: the [Front]'s, what
// it did to packets, and its pool's counters.
type IPDetail struct {
	Detail
	// NotIP counts the packets the classifier could not read (not IPv4 or
	// IPv6, or truncated): they were queued with the fallback Meta it gave
	// (their Size, one hash for all of them, Not-ECT).
	NotIP aqm.Count `metric:"unparsed,counter"`
	// Refused counts the packets the queue refused (full, or dropped at
	// arrival); their buffers went back to the pool. Those refused after
	// Close are [Detail.RefusedClosed].
	Refused aqm.Count `metric:"refused,counter"`
	// RewrittenCE counts the packets that left with CE that the front
	// wrote into their IP header because the queue marked them (those that
	// arrived with CE are left as they are and not counted).
	RewrittenCE aqm.Count `metric:"rewritten_ce,counter"`
	// DroppedUnmarkable counts the packets the queue marked whose header
	// could not carry CE (Not-ECT or not IP): they were dropped instead,
	// and their buffers went back to the pool.
	DroppedUnmarkable aqm.Count `metric:"dropped_unmarkable,counter"`
	// Pool is the pool's counters, listed by Metrics with the prefix
	// "front_pool_".
	Pool PoolStats `metric:"pool"`
}

var ipDetailMetrics = metrics.Declare[IPDetail]("front_")

// Detail returns a snapshot of the front's own state.
func (x *IP[C]) Detail() IPDetail {
	x.f.mu.Lock()
	d := x.detailLocked()
	x.f.mu.Unlock()
	return d
}

func (x *IP[C]) detailLocked() IPDetail {
	return IPDetail{
		Detail:            x.f.detailLocked(),
		NotIP:             x.notIP,
		Refused:           x.refused,
		RewrittenCE:       x.rewritten,
		DroppedUnmarkable: x.unmarkable,
		Pool:              x.pool.Stats(),
	}
}

// Metrics lists the queue's metrics followed by the [IPDetail] metrics,
// from one snapshot under the front's lock, as [Front.Metrics] does (for a
// queue wrapped by [HashIP], the queue's own); a *IP is an
// [aqm.MetricSource]. The IPDetail's names begin "front_" as the Front's
// do: the Front's Detail metrics, then unparsed, refused, rewritten_ce and
// dropped_unmarkable in packets and bytes (counters), and the pool's
// pool_buffer_bytes and pool_free_buffers (gauges), pool_allocated_buffers,
// pool_discarded_buffers, pool_dropped_packets and pool_dropped_bytes
// (counters).
func (x *IP[C]) Metrics() iter.Seq[aqm.Metric] {
	x.f.mu.Lock()
	qm, d := queueMetrics(x.f.q), x.detailLocked()
	x.f.mu.Unlock()
	return concat(qm, ipDetailMetrics.Of(d))
}
