package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// maxPacket is the largest IP packet the gateway carries; longer reads are
// truncated (an Ethernet MTU is 1500).
const maxPacket = 2048

// config is what the gateway needs: the link, and the pool of buffers.
type config struct {
	Rate     aqm.Rate      // the link's rate; CAKE shapes to it
	Overhead cake.Overhead // the link's framing (a tc-cake preset)
	Slots    int           // packet buffers; the queue never holds more
	Seed     uint64        // zero: secret random hash keys
}

// limitFor is CAKE's packet limit for a pool of n buffers: a batch of
// buffers below it, so that a packet in flight to the socket never leaves
// an arrival without a buffer while CAKE holds its full limit; CAKE's own
// overload dropping (from the longest flow queue), not the pool, then
// decides who loses when the queue is full.
func limitFor(n int) int { return max(n-front.RunBatch, (n+1)/2) }

// gateway is the home-gateway queue: raw IP packets in, classified by
// CAKE's classifier (flow and destination-host hashes, DSCP), queued in a
// CAKE with diffserv4 tins and dual-dsthost fairness that shapes to the
// link rate, and released by a front that sleeps until CAKE's next
// departure. Buffers come from a fixed pool: the queue carries a uint32
// slot index, so nothing is allocated per packet.
type gateway struct {
	q    *cake.Queue[uint32]
	f    *front.Front[uint32]
	bufs [][]byte // slot → buffer of maxPacket bytes
	lens []int    // slot → packet length
	free chan uint32
	// dropped counts packets CAKE dropped after accepting them; read
	// under the front's lock (WithQueue) or after the consumer stopped.
	dropped uint64
}

func newGateway(cfg config, clk clock.Clock) (*gateway, error) {
	if cfg.Slots <= 0 {
		return nil, fmt.Errorf("gateway: Slots (%d) must be positive", cfg.Slots)
	}
	g := &gateway{
		bufs: make([][]byte, cfg.Slots),
		lens: make([]int, cfg.Slots),
		free: make(chan uint32, cfg.Slots),
	}
	slab := make([]byte, cfg.Slots*maxPacket)
	for i := range g.bufs {
		g.bufs[i] = slab[i*maxPacket : (i+1)*maxPacket : (i+1)*maxPacket]
		g.free <- uint32(i)
	}
	ccfg := cfg.Overhead.Apply(cake.Config{
		Rate:         cfg.Rate,
		TinMode:      cake.DiffServ4,
		FlowMode:     cake.DualDstHost,
		LimitPackets: limitFor(cfg.Slots),
		Seed:         cfg.Seed,
	})
	q, err := cake.New(ccfg, func(p aqm.Packet[uint32], _ aqm.Verdict) {
		g.dropped++
		g.release(p.Payload)
	})
	if err != nil {
		return nil, err
	}
	g.q = q
	// The front has no rate of its own: CAKE shapes (with the framing
	// overhead) and tells the front when its next packet may leave.
	g.f, err = front.New[uint32](&classifying{q: q, cls: cake.NewClassifier(cfg.Seed, false), g: g}, clk, front.Config{})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// classifying is the queue the front sees: CAKE behind the classifier. Its
// Enqueue reads the packet in the slot the payload names and hands CAKE
// the Meta and Info the classifier found; the front calls it under its
// lock, so the classifier is never used concurrently. It implements
// aqm.Paced, so the front waits for CAKE's shaper.
type classifying struct {
	q   *cake.Queue[uint32]
	cls *cake.Classifier
	g   *gateway
}

var (
	_ aqm.Queue[uint32] = (*classifying)(nil)
	_ aqm.Paced         = (*classifying)(nil)
)

func (c *classifying) Enqueue(p aqm.Packet[uint32], now aqm.Time) aqm.Verdict {
	m, info, err := c.cls.Classify(c.g.bufs[p.Payload][:c.g.lens[p.Payload]])
	if err != nil {
		return aqm.DroppedOverlimit // not an IP packet: refused, the caller keeps it
	}
	p.Meta = m
	return c.q.EnqueueInfo(p, info, now)
}

func (c *classifying) Dequeue(now aqm.Time) (aqm.Packet[uint32], bool) { return c.q.Dequeue(now) }
func (c *classifying) NextDeparture(now aqm.Time) aqm.Time             { return c.q.NextDeparture(now) }
func (c *classifying) Len() int                                        { return c.q.Len() }
func (c *classifying) Backlog() int                                    { return c.q.Backlog() }
func (c *classifying) Stats() aqm.Stats                                { return c.q.Stats() }

// errNoBuffer is returned by receive when every buffer is in use.
var errNoBuffer = errors.New("gateway: no free buffer")

// slot takes a free buffer for a packet to be read into, or reports false.
func (g *gateway) slot() (uint32, []byte, bool) {
	select {
	case s := <-g.free:
		return s, g.bufs[s], true
	default:
		return 0, nil, false
	}
}

// release returns a slot to the pool.
func (g *gateway) release(s uint32) { g.free <- s }

// enqueue offers the n bytes read into slot s; a refused packet's slot is
// released at once.
func (g *gateway) enqueue(s uint32, n int) aqm.Verdict {
	g.lens[s] = min(n, maxPacket)
	v, err := g.f.Enqueue(aqm.Packet[uint32]{Payload: s})
	if err != nil || !v.Accepted() {
		g.release(s)
	}
	return v
}

// receive copies pkt into a buffer and offers it.
func (g *gateway) receive(pkt []byte) (aqm.Verdict, error) {
	s, buf, ok := g.slot()
	if !ok {
		return aqm.DroppedOverlimit, errNoBuffer
	}
	return g.enqueue(s, copy(buf, pkt)), nil
}

// packet returns the bytes of a dequeued packet, with CE set in its IP
// header if CAKE marked it.
func (g *gateway) packet(p aqm.Packet[uint32]) []byte {
	b := g.bufs[p.Payload][:g.lens[p.Payload]]
	if p.ECN == aqm.CE {
		_ = iphdr.SetCE(b) // CAKE marks only ECN-capable packets
	}
	return b
}

// take is the non-blocking consumer: the packets that may leave now, and
// otherwise how long until one may (zero: the queue is empty).
func (g *gateway) take(buf []aqm.Packet[uint32]) (int, time.Duration) {
	return g.f.TryDequeueBatch(buf)
}

// run sends packets at the shaped rate until ctx ends or the gateway is
// closed and drained; send must not keep the bytes.
func (g *gateway) run(ctx context.Context, send func([]byte)) error {
	return g.f.Run(ctx, func(ps []aqm.Packet[uint32]) {
		for _, p := range ps {
			send(g.packet(p))
			g.release(p.Payload)
		}
	})
}

// report is a one-line summary of the queue: per tin, packets that
// arrived, drops and marks, and the peak and average delay.
func (g *gateway) report() string {
	var s string
	g.f.WithQueue(func(aqm.Queue[uint32]) {
		d := g.q.Detail()
		s = fmt.Sprintf("backlog %d pkts", g.q.Len())
		for _, t := range d.Tins[:d.NumTins] {
			s += fmt.Sprintf(" | %s: %d pkts, %d drops, %d marks", t.Name, t.Packets, t.Dropped, t.Marked)
			if t.BacklogPackets > 0 {
				// CAKE's delay averages move only while packets leave, so
				// an idle tin would show the delay of its last busy moment.
				s += fmt.Sprintf(", delay pk %v av %v", t.PeakDelay, t.AvgDelay)
			} else {
				s += ", idle"
			}
		}
	})
	return s
}
