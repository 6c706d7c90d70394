// Package relay is a UDP relay through an AQM queue behind a shaped front:
// datagrams that arrive on a local socket are queued, released at the
// shaped rate, and
// forwarded to one upstream address with their ECN codepoint (CE if the AQM
// marked them). It is the engine of the udpshaper and l4sdemo examples.
//
// Buffers come from a fixed pool; the queue carries a uint32 index into it,
// so queued packets are invisible to the garbage collector and nothing is
// allocated per datagram.
package relay

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"net/netip"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/examples/internal/ecnsock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/queues"
)

// maxDatagram is the largest datagram relayed; longer ones are truncated by
// the read (an IPv4 UDP payload is at most 65507 bytes, but the examples
// stay below an Ethernet MTU).
const maxDatagram = 2048

// Config configures a Relay.
type Config struct {
	Listen        string   // local address, e.g. "127.0.0.1:0"
	Upstream      string   // where datagrams go
	AQM           string   // a name in package queues
	LimitPackets  int      // queue limit; zero: sized for Rate (see queues.Options)
	Rate          aqm.Rate // shaped rate; zero: unlimited
	BurstBytes    int      // shaper burst; zero: the front's default
	OverheadBytes int      // added to each datagram's size for the rate
	Seed          uint64   // zero (the default): a random secret seed
}

// Counters are the relay's own counts, beside the queue's Stats.
type Counters struct {
	Received  uint64 // datagrams read
	Forwarded uint64 // datagrams written upstream
	Refused   uint64 // refused by the queue at arrival
	Dropped   uint64 // dropped by the queue after acceptance
	NoBuffer  uint64 // arrivals with no free buffer
	SendErrs  uint64 // failed upstream writes
}

// Relay forwards datagrams; see the package doc.
type Relay struct {
	in, out  *net.UDPConn
	q        aqm.Queue[uint32]
	f        *front.Front[uint32]
	bufs     [][]byte
	lens     []int
	free     chan uint32
	seed     maphash.Seed
	ecn      bool
	tos      byte
	overhead int

	received, forwarded, refused, dropped, noBuffer, sendErrs atomic.Uint64
}

// New opens the sockets and builds the queue and its shaped front. Call Run to start
// relaying.
func New(cfg Config) (*Relay, error) {
	laddr, err := net.ResolveUDPAddr("udp4", cfg.Listen)
	if err != nil {
		return nil, err
	}
	raddr, err := net.ResolveUDPAddr("udp4", cfg.Upstream)
	if err != nil {
		return nil, err
	}
	r := &Relay{seed: maphash.MakeSeed()}
	onDrop := func(p aqm.Packet[uint32], _ aqm.Verdict) {
		r.dropped.Add(1)
		r.put(p.Payload)
	}
	r.q, err = queues.New(cfg.AQM, queues.Options{LimitPackets: cfg.LimitPackets, Rate: cfg.Rate, Seed: cfg.Seed}, onDrop)
	if err != nil {
		return nil, err
	}
	r.f, err = front.New(r.q, nil, front.Config{Rate: cfg.Rate, BurstBytes: cfg.BurstBytes})
	if err != nil {
		return nil, err
	}
	// Buffers: one per queued packet, plus the batch Run may hold
	// (front.RunBatch) and the one being read. They are allocated on first
	// use, so memory follows the deepest queue actually reached.
	n := cfg.LimitPackets
	if n == 0 && cfg.Rate > 0 {
		n = cfg.Rate.BufferPackets(0) // what the registry sized the queue to
	}
	if n == 0 {
		n = 16384 // above every algorithm's default limit
	}
	n += front.RunBatch + 64
	r.bufs = make([][]byte, n)
	r.lens = make([]int, n)
	r.free = make(chan uint32, n)
	for i := range n {
		r.free <- uint32(i)
	}
	r.overhead = cfg.OverheadBytes
	if r.in, err = net.ListenUDP("udp4", laddr); err != nil {
		return nil, err
	}
	_ = r.in.SetReadBuffer(4 << 20)
	if r.out, err = net.DialUDP("udp4", nil, raddr); err != nil {
		r.in.Close()
		return nil, err
	}
	r.ecn = ecnsock.EnableRecvTOS(r.in) == nil
	return r, nil
}

// Addr returns the address the relay listens on.
func (r *Relay) Addr() netip.AddrPort { return r.in.LocalAddr().(*net.UDPAddr).AddrPort() }

// Front returns the shaped front, for SetRate, Detail and Metrics.
func (r *Relay) Front() *front.Front[uint32] { return r.f }

// Counters returns the relay's counts.
func (r *Relay) Counters() Counters {
	return Counters{
		Received: r.received.Load(), Forwarded: r.forwarded.Load(), Refused: r.refused.Load(),
		Dropped: r.dropped.Load(), NoBuffer: r.noBuffer.Load(), SendErrs: r.sendErrs.Load(),
	}
}

// Report returns a one-line summary of the counters, the queue's stats and
// the AQM's state.
func (r *Relay) Report() string {
	c := r.Counters()
	st := r.f.Stats()
	var detail string
	r.f.WithQueue(func(q aqm.Queue[uint32]) { detail = detailOf(q) })
	return fmt.Sprintf("rx=%d tx=%d refused=%d dropped=%d marked=%d nobuf=%d queue=%dp/%dB %s",
		c.Received, c.Forwarded, c.Refused, c.Dropped, st.Marked.Packets, c.NoBuffer, st.Len, st.Backlog, detail)
}

func (r *Relay) put(i uint32) { r.free <- i } // never blocks: the channel holds every index

// Run relays until ctx ends, then closes the sockets and the front, returns
// what is still queued to the buffer pool, and returns once every goroutine
// it started has finished.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { // unblock the reader at the end
		<-ctx.Done()
		r.in.Close()
	})
	wg.Go(func() {
		defer cancel()
		r.read()
	})
	err := r.f.Run(ctx, r.send)
	cancel()
	wg.Wait()
	r.f.Close()
	r.f.Flush(func(p aqm.Packet[uint32], _ aqm.Verdict) { r.put(p.Payload) })
	r.out.Close()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

func (r *Relay) read() {
	oob := make([]byte, ecnsock.OOBSize)
	scratch := make([]byte, maxDatagram) // absorbs datagrams read when the pool is empty
	var h maphash.Hash
	h.SetSeed(r.seed)
	for {
		var i uint32
		select {
		case i = <-r.free:
		default:
			// No buffer: read into a scratch buffer and count the loss.
			i = ^uint32(0)
		}
		buf := scratch
		if i != ^uint32(0) {
			if r.bufs[i] == nil {
				r.bufs[i] = make([]byte, maxDatagram)
			}
			buf = r.bufs[i]
		}
		n, oobn, _, from, err := r.in.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if i != ^uint32(0) {
				r.put(i)
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		r.received.Add(1)
		if i == ^uint32(0) {
			r.noBuffer.Add(1)
			continue
		}
		r.lens[i] = n
		ecn := aqm.NotECT
		if r.ecn {
			if tos, ok := ecnsock.TOS(oob[:oobn]); ok {
				ecn = aqm.ECN(tos) & aqm.ECNMask
			}
		}
		// The flow hash covers the sender's address and port.
		h.Reset()
		a := from.Addr().As16()
		h.Write(a[:])
		h.WriteByte(byte(from.Port()))
		h.WriteByte(byte(from.Port() >> 8))
		p := aqm.Packet[uint32]{Payload: i, Meta: aqm.Meta{Size: uint32(n + r.overhead), Hash: uint32(h.Sum64()), ECN: ecn}}
		if v, _ := r.f.Enqueue(p); !v.Accepted() {
			r.refused.Add(1)
			r.put(i)
		}
	}
}

func (r *Relay) send(ps []aqm.Packet[uint32]) {
	for _, p := range ps {
		r.sendOne(p)
	}
}

func (r *Relay) sendOne(p aqm.Packet[uint32]) {
	i := p.Payload
	if tos := byte(p.ECN); r.ecn && tos != r.tos {
		if ecnsock.SetTOS(r.out, tos) == nil {
			r.tos = tos
		}
	}
	if _, err := r.out.Write(r.bufs[i][:r.lens[i]]); err != nil {
		r.sendErrs.Add(1)
	} else {
		r.forwarded.Add(1)
	}
	r.put(i)
}

// detailOf returns the queue's algorithm-specific state as text, if its type
// has a Detail method.
func detailOf(q aqm.Queue[uint32]) string {
	m := reflect.ValueOf(q).MethodByName("Detail")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return ""
	}
	return fmt.Sprintf("%+v", m.Call(nil)[0].Interface())
}
