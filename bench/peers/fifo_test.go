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
	aqmfifo "github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// depth is every queue's length in packets (runsc uses 1000 for fifo), and
// the most packets in flight from the producers to the link writer.
const depth = 1024

// chunk is how many packets a producer reserves room for at once, and the
// size of an EnqueueBatch.
const chunk = 32

// consumerBatch is the most packets a consumer hands to the link writer at
// once: gVisor's fifo.BatchSize, used by the fronts' consumers too.
const consumerBatch = fifo.BatchSize

// sink is the lower link writer: it counts the packets it is handed and
// gives their room in the in-flight window back to the producers. The fifo
// dispatcher releases its references itself after WritePackets returns
// (batch.Reset); the fronts' consumers release them in take.
type sink struct {
	n        atomic.Int64
	inflight atomic.Int64
}

func (s *sink) WritePackets(pl stack.PacketBufferList) (int, tcpip.Error) {
	n := pl.Len()
	s.done(n)
	return n, nil
}

func (s *sink) take(ps []aqm.Packet[*stack.PacketBuffer]) {
	for _, p := range ps {
		p.Payload.DecRef()
	}
	s.done(len(ps))
}

func (s *sink) done(n int) {
	s.inflight.Add(-int64(n))
	s.n.Add(int64(n))
}

// reserve holds a producer back until m more packets fit in the in-flight
// window of depth packets. As a channel send blocks, no queue is ever
// offered more than it holds, so no packet is refused or retried in any of
// the benchmarked queues, and every packet is delivered. It costs one
// atomic add per chunk on each side, the same in every row.
func (s *sink) reserve(m int) {
	for s.inflight.Add(int64(m)) > depth {
		s.inflight.Add(-int64(m))
		runtime.Gosched()
	}
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
// one front fed with batches. The designs are the same in every row: every
// queue is a drop-tail FIFO of 1024 packets; producers reserve room for 32
// packets at a time in one window of 1024 packets in flight (see
// sink.reserve), so nothing is ever refused; every consumer hands the
// writer at most fifo.BatchSize (47) packets at once; packets are
// reference-counted PacketBuffers in both (IncRef on enqueue, DecRef after
// the writer). One op is one packet.
func BenchmarkPeers(b *testing.B) {
	shards := runtime.GOMAXPROCS(0)
	for _, p := range []int{1, 2, 4, 16} {
		b.Run("producers="+strconv.Itoa(p), func(b *testing.B) {
			b.Run("gvisor-fifo", func(b *testing.B) { benchGVisor(b, p, shards) })
			b.Run("sharded-batch32", func(b *testing.B) { benchSharded(b, p, shards, chunk) })
			b.Run("sharded-single", func(b *testing.B) { benchSharded(b, p, shards, 1) })
			b.Run("front-batch32", func(b *testing.B) { benchSharded(b, p, 0, chunk) })
		})
	}
}

// newPackets returns chunk packets for each of p producers; producer g's
// packet j has the flow hash g·0x9e3779b1 + j in every row, so each chunk
// spreads over the shards (or dispatchers) alike.
func newPackets(p int) [][]*stack.PacketBuffer {
	pkts := make([][]*stack.PacketBuffer, p)
	for g := range pkts {
		pkts[g] = make([]*stack.PacketBuffer, chunk)
		for j := range pkts[g] {
			pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 64})
			pkt.Hash = uint32(g)*0x9e3779b1 + uint32(j)
			pkts[g][j] = pkt
		}
	}
	return pkts
}

func release(pkts [][]*stack.PacketBuffer) {
	for _, ps := range pkts {
		for _, pkt := range ps {
			pkt.DecRef()
		}
	}
}

func benchGVisor(b *testing.B, p, shards int) {
	var s sink
	q := fifo.New(&s, shards, depth)
	pkts := newPackets(p)
	var refused atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	split(b.N, p, func(g, count int) {
		for i := 0; i < count; i += chunk {
			m := min(chunk, count-i)
			s.reserve(m)
			for _, pkt := range pkts[g][:m] {
				if q.WritePacket(pkt) != nil {
					refused.Add(1)
				}
			}
		}
	})
	for s.n.Load() < int64(b.N)-refused.Load() {
		runtime.Gosched()
	}
	b.StopTimer()
	q.Close()
	release(pkts)
	if r := refused.Load(); r != 0 {
		b.Fatalf("gVisor fifo refused %d of %d packets", r, b.N)
	}
}

// fronts is what the benchmark needs of a Front or a Sharded front.
type fronts interface {
	Enqueue(aqm.Packet[*stack.PacketBuffer]) (aqm.Verdict, error)
	EnqueueBatch([]aqm.Packet[*stack.PacketBuffer], []aqm.Verdict) (int, error)
	Close()
}

// consume is a consumer loop handing at most consumerBatch packets at once
// to s, until the front is closed and drained.
func consume(f *front.Front[*stack.PacketBuffer], s *sink) {
	buf := make([]aqm.Packet[*stack.PacketBuffer], consumerBatch)
	for {
		n, err := f.DequeueBatch(context.Background(), buf)
		if err != nil {
			return
		}
		s.take(buf[:n])
		clear(buf[:n])
	}
}

// benchSharded runs a sharded front of shards shards (0: one plain front)
// with one consumer per shard, fed in batches of batch.
func benchSharded(b *testing.B, p, shards, batch int) {
	var s sink
	newQ := func(int) (aqm.Queue[*stack.PacketBuffer], error) {
		return aqmfifo.New[*stack.PacketBuffer](aqmfifo.Config{LimitPackets: depth}, nil)
	}
	var f fronts
	var consumers sync.WaitGroup
	if shards == 0 {
		q, _ := newQ(0)
		one, _ := front.New(q, nil, front.Config{})
		consumers.Go(func() { consume(one, &s) })
		f = one
	} else {
		sh, _ := front.NewSharded(newQ, nil, front.ShardedConfig{Shards: shards})
		for i := range sh.Config().Shards {
			one, _ := sh.Shard(i)
			consumers.Go(func() { consume(one, &s) })
		}
		f = sh
	}
	pkts := newPackets(p)
	var refused atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	split(b.N, p, func(g, count int) {
		ps := make([]aqm.Packet[*stack.PacketBuffer], chunk)
		vs := make([]aqm.Verdict, chunk)
		for i := 0; i < count; i += chunk {
			m := min(chunk, count-i)
			s.reserve(m)
			for j, pkt := range pkts[g][:m] {
				ps[j] = aqm.Packet[*stack.PacketBuffer]{Payload: pkt.IncRef(), Meta: aqm.Meta{Size: 1500, Hash: pkt.Hash}}
			}
			acc := 0
			if batch == 1 {
				for j := range m {
					if v, _ := f.Enqueue(ps[j]); v.Accepted() {
						acc++
					}
				}
			} else {
				acc, _ = f.EnqueueBatch(ps[:m], vs[:m])
			}
			refused.Add(int64(m - acc))
		}
	})
	for s.n.Load() < int64(b.N)-refused.Load() {
		runtime.Gosched()
	}
	b.StopTimer()
	f.Close()
	consumers.Wait()
	release(pkts)
	if r := refused.Load(); r != 0 {
		b.Fatalf("the front refused %d of %d packets", r, b.N)
	}
}
