package router

// This file holds everything the router does to packet bytes: the buffer
// pool, classification (iphdr for every queue, CAKE's own classifier for
// CAKE) and writing CE into a marked packet's header. An IP-aware front in
// package front can take these over; the rest of the router sees only
// pool.get, pool.put, classify and markCE.

import (
	"sync/atomic"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/iphdr"
)

// pool is a bounded free list of equal-sized packet buffers. It makes a new
// buffer only when the list is empty and fewer than limit exist, so in
// steady state every buffer is reused and nothing is allocated per packet.
type pool struct {
	free  chan []byte
	size  int
	limit int64
	made  atomic.Int64
}

func newPool(size, limit int) *pool {
	return &pool{free: make(chan []byte, limit), size: size, limit: int64(limit)}
}

// get returns a buffer of the pool's size, or false when all limit buffers
// are in use.
func (p *pool) get() ([]byte, bool) {
	select {
	case b := <-p.free:
		return b, true
	default:
	}
	if p.made.Add(1) > p.limit {
		p.made.Add(-1)
		return nil, false
	}
	return make([]byte, p.size), true
}

// put returns a buffer that get gave out. It never blocks: the list holds
// every buffer the pool may make.
func (p *pool) put(b []byte) { p.free <- b[:p.size] }

// put returns a buffer to the pool it came from: the segment pool for
// segment buffers, the read pool for the rest.
func (r *Router) put(b []byte) {
	if r.seg != nil && cap(b) == r.seg.size {
		r.seg.put(b)
		return
	}
	r.pool.put(b)
}

// inUse returns how many buffers are out of the pool.
func (p *pool) inUse() int { return int(p.made.Load()) - len(p.free) }

// classifier turns a packet into the aqm.Meta its queue reads.
type classifier struct {
	h        iphdr.Hasher
	sizeOnly bool // the queue classifies by itself (CAKE)
}

// classify returns p's Meta: size, keyed flow hash and ECN codepoint. For a
// queue that classifies by itself only the size is filled in.
func (c *classifier) classify(p []byte) aqm.Meta {
	if c.sizeOnly {
		return aqm.Meta{Size: uint32(len(p))}
	}
	m, _ := c.h.Meta(p) // never fails to give a usable Meta
	return m
}

// markCE writes CE into the header of a packet that left its queue with
// aqm.CE, fixing the IPv4 checksum. It reports whether the packet was
// ECN-capable (queues mark only such packets).
func markCE(p []byte) bool { return iphdr.SetCE(p) == nil }

// forIP adapts a queue to raw IP payloads. A CAKE queue is put behind CAKE's
// classifier, which gives it the host hashes, DSCP and TCP summary it needs
// for host isolation, tins and its ACK filter; other queues need only the
// Meta that classify gives. It returns the queue to use and the classifier
// for its packets.
// Payloads hold off bytes (the virtio-net header) before the IP packet.
func forIP(q aqm.Queue[[]byte], off int) (aqm.Queue[[]byte], classifier) {
	if c, ok := q.(*cake.Queue[[]byte]); ok {
		return &cakeIP{q: c, cls: cake.NewClassifier(0, false), off: off}, classifier{sizeOnly: true}
	}
	return q, classifier{h: iphdr.NewHasher()}
}

// cakeIP is a CAKE queue behind CAKE's classifier. Its Enqueue reads the
// packet's headers and hands CAKE the Meta and Info the classifier found,
// with the router's Size and Segments;
// the front calls it under its lock, so the classifier is never used
// concurrently. It implements aqm.Paced, so the front waits for CAKE's
// shaper.
type cakeIP struct {
	q   *cake.Queue[[]byte]
	cls *cake.Classifier
	off int // bytes before the IP packet in each payload
}

var (
	_ aqm.Queue[[]byte] = (*cakeIP)(nil)
	_ aqm.Paced         = (*cakeIP)(nil)
)

func (c *cakeIP) Enqueue(p aqm.Packet[[]byte], now aqm.Time) aqm.Verdict {
	ip := p.Payload[min(c.off, len(p.Payload)):]
	m, info, err := c.cls.Classify(ip)
	if err != nil {
		// Not a parseable IP packet: CAKE queues it as one flow of best
		// effort, not ECN-capable, so it can be dropped but never marked.
		return c.q.Enqueue(aqm.Packet[[]byte]{Payload: p.Payload, Meta: aqm.Meta{Size: p.Size, Segments: p.Segments}}, now)
	}
	// The router's Size and Segments stand: for a kept super-packet they
	// count its segments' wire bytes, which the classifier cannot know.
	m.Size, m.Segments = p.Size, p.Segments
	p.Meta = m
	return c.q.EnqueueInfo(p, info, now)
}

func (c *cakeIP) Dequeue(now aqm.Time) (aqm.Packet[[]byte], bool) { return c.q.Dequeue(now) }
func (c *cakeIP) NextDeparture(now aqm.Time) aqm.Time             { return c.q.NextDeparture(now) }
func (c *cakeIP) Len() int                                        { return c.q.Len() }
func (c *cakeIP) Backlog() int                                    { return c.q.Backlog() }
func (c *cakeIP) Stats() aqm.Stats                                { return c.q.Stats() }

// validate reports whether p is a whole IPv4 or IPv6 packet, and if not,
// why it is dropped (malformed).
func validate(p []byte) (reason, bool) {
	if _, err := iphdr.ECN(p); err == nil {
		return 0, true
	}
	return malformed(p), false
}
