package peers

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/qdisc/fifo"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/front"
)

// depth is every queue's length in packets (runsc uses 1000 for fifo).
const depth = 1024

// sink is the lower link writer: it counts the packets it is handed. The
// fifo dispatcher releases its references itself after WritePackets
// returns (batch.Reset); the front's consumer releases them in take.
type sink struct{ n atomic.Int64 }

func (s *sink) WritePackets(pl stack.PacketBufferList) (int, tcpip.Error) {
	n := pl.Len()
	s.n.Add(int64(n))
	return n, nil
}

func (s *sink) take(ps []aqm.Packet[*stack.PacketBuffer]) {
	for _, p := range ps {
		p.Payload.DecRef()
	}
	s.n.Add(int64(len(ps)))
}

// split runs count packets on each of p producers; b.Loop cannot spread a
// benchmark over goroutines, so one op is one packet of b.N.
func split(n, p int, produce func(g, count int)) {
	var wg sync.WaitGroup
	for g := range p {
		count := n / p
		if g == 0 {
			count += n % p
		}
		wg.Go(func() { produce(g, count) })
	}
	wg.Wait()
}

// BenchmarkPeers moves packets from p producers to a counting link writer
// through gVisor's fifo qdisc (GOMAXPROCS dispatchers, as runsc runs it;
// one WritePacket per packet, the only API it has) and through aqmkit's
// fronts: a sharded front with the same number of shards and one consumer
// goroutine each, fed with EnqueueBatch of 32 or one packet at a time, and
// one front fed with batches. Every queue is a drop-tail FIFO of 1024
// packets, every packet is delivered (a refused packet is offered again
// after a yield), and packets are reference-counted PacketBuffers in both
// (IncRef on enqueue, DecRef by the writer). One op is one packet.
func BenchmarkPeers(b *testing.B) {
	shards := runtime.GOMAXPROCS(0)
	for _, p := range []int{1, 2, 4, 16} {
		b.Run("producers="+strconv.Itoa(p), func(b *testing.B) {
			b.Run("gvisor-fifo", func(b *testing.B) { benchGVisor(b, p, shards) })
			b.Run("sharded-batch32", func(b *testing.B) { benchSharded(b, p, shards, 32) })
			b.Run("sharded-single", func(b *testing.B) { benchSharded(b, p, shards, 1) })
			b.Run("front-batch32", func(b *testing.B) { benchSharded(b, p, 0, 32) })
		})
	}
}

func newPackets(p int) []*stack.PacketBuffer {
	pkts := make([]*stack.PacketBuffer, p)
	for g := range pkts {
		pkts[g] = stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 64})
		pkts[g].Hash = uint32(g)
	}
	return pkts
}

func benchGVisor(b *testing.B, p, shards int) {
	var s sink
	q := fifo.New(&s, shards, depth)
	pkts := newPackets(p)
	b.ReportAllocs()
	b.ResetTimer()
	split(b.N, p, func(g, count int) {
		pkt := pkts[g]
		for range count {
			for q.WritePacket(pkt) != nil {
				runtime.Gosched()
			}
		}
	})
	for s.n.Load() < int64(b.N) {
		runtime.Gosched()
	}
	b.StopTimer()
	q.Close()
	for _, pkt := range pkts {
		pkt.DecRef()
	}
}

// fronts is what the benchmark needs of a Front or a Sharded front.
type fronts interface {
	Enqueue(aqm.Packet[*stack.PacketBuffer]) (aqm.Verdict, error)
	EnqueueBatch([]aqm.Packet[*stack.PacketBuffer], []aqm.Verdict) (int, error)
	Close()
}

// benchSharded runs a sharded front of shards shards (0: one plain front)
// with one consumer per shard, fed in batches of batch.
func benchSharded(b *testing.B, p, shards, batch int) {
	var s sink
	newQ := func(int) (aqm.Queue[*stack.PacketBuffer], error) {
		return aqm.NewFIFO[*stack.PacketBuffer](aqm.FIFOConfig{LimitPackets: depth}, nil)
	}
	var f fronts
	var consumers sync.WaitGroup
	consume := func(run func(context.Context, func([]aqm.Packet[*stack.PacketBuffer])) error) {
		consumers.Go(func() { _ = run(context.Background(), s.take) })
	}
	if shards == 0 {
		q, _ := newQ(0)
		one, _ := front.New(q, nil, front.Config{})
		consume(one.Run)
		f = one
	} else {
		sh, _ := front.NewSharded(newQ, nil, front.ShardedConfig{Shards: shards})
		for i := range sh.Shards() {
			consume(sh.Shard(i).Run)
		}
		f = sh
	}
	pkts := newPackets(p)
	b.ReportAllocs()
	b.ResetTimer()
	split(b.N, p, func(g, count int) {
		pkt := pkts[g]
		hash := uint32(g) * 0x9e3779b1
		if batch == 1 {
			for range count {
				pkt.IncRef()
				for {
					v, _ := f.Enqueue(aqm.Packet[*stack.PacketBuffer]{Payload: pkt, Meta: aqm.Meta{Size: 1500, Hash: hash}})
					if v.Accepted() {
						break
					}
					runtime.Gosched()
				}
			}
			return
		}
		ps := make([]aqm.Packet[*stack.PacketBuffer], batch)
		vs := make([]aqm.Verdict, batch)
		for i := 0; i < count; i += batch {
			m := min(batch, count-i)
			for j := range m {
				pkt.IncRef()
				ps[j] = aqm.Packet[*stack.PacketBuffer]{Payload: pkt, Meta: aqm.Meta{Size: 1500, Hash: hash + uint32(j)}}
			}
			rest := ps[:m]
			for {
				acc, _ := f.EnqueueBatch(rest, vs)
				if acc == len(rest) {
					break
				}
				k := 0
				for j := range rest {
					if !vs[j].Accepted() {
						rest[k] = rest[j]
						k++
					}
				}
				rest = rest[:k]
				runtime.Gosched()
			}
		}
	})
	for s.n.Load() < int64(b.N) {
		runtime.Gosched()
	}
	b.StopTimer()
	f.Close()
	consumers.Wait()
	for _, pkt := range pkts {
		pkt.DecRef()
	}
}
