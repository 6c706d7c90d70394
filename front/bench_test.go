package front_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/front"
)

// benchDepth is the depth of every queue and channel in the benchmarks.
const benchDepth = 1024

// consumerBatch is the most packets a front's consumer takes at once in
// the concurrent benchmarks: gVisor's fifo.BatchSize, as in the side by
// side benchmark of module bench/peers, whose design these follow.
const consumerBatch = 47

// runProducers splits n packets among p producer goroutines and waits for
// them. b.Loop cannot spread one benchmark's iterations over goroutines, so
// these benchmarks divide b.N themselves; one op is one packet.
func runProducers(n, p int, produce func(g, count int)) {
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

// BenchmarkFront measures the per-packet cost of moving packets from p
// concurrent producers to one consumer, against a buffered channel of the
// same depth in the same run: single-packet Enqueue, EnqueueBatch of 32,
// and a sharded front (one shard per P, batches of 32, one consumer per
// shard). All
// fronts use the default clock.Coarse. Every packet is delivered: the
// producers are held back while the queue is full (see runFront), as a
// channel send blocks.
func BenchmarkFront(b *testing.B) {
	for _, p := range []int{1, 2, 4, 16} {
		b.Run("producers="+strconv.Itoa(p), func(b *testing.B) {
			b.Run("chan", func(b *testing.B) { benchChan(b, p) })
			b.Run("single", func(b *testing.B) { benchFront(b, p, 1, 0) })
			b.Run("batch32", func(b *testing.B) { benchFront(b, p, 32, 0) })
			b.Run("sharded-batch32", func(b *testing.B) { benchFront(b, p, 32, runtime.GOMAXPROCS(0)) })
		})
	}
}

func benchChan(b *testing.B, p int) {
	ch := make(chan aqm.Packet[uint64], benchDepth)
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	b.ReportAllocs()
	b.ResetTimer()
	runProducers(b.N, p, func(g, count int) {
		for i := range count {
			ch <- aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 100, Hash: uint32(g)}}
		}
	})
	close(ch)
	<-done
}

// frontLike is what the benchmarks need of a Front or a Sharded front.
type frontLike interface {
	Enqueue(aqm.Packet[uint64]) (aqm.Verdict, error)
	EnqueueBatch([]aqm.Packet[uint64], []aqm.Verdict) (int, error)
	DequeueBatch(context.Context, []aqm.Packet[uint64]) (int, error)
	Close()
	Stats() aqm.Stats
}

func benchFront(b *testing.B, p, batch, shards int) {
	var f frontLike
	if shards == 0 {
		q, _ := fifo.New[uint64](fifo.Config{LimitPackets: benchDepth}, nil)
		f, _ = front.New[uint64](q, nil, front.Config{})
	} else {
		f, _ = front.NewSharded(func(int) (aqm.Queue[uint64], error) {
			return fifo.New[uint64](fifo.Config{LimitPackets: benchDepth}, nil)
		}, nil, front.ShardedConfig{Shards: shards})
	}
	runFront(b, f, new(flight), p, batch)
}

// flight counts the packets of a concurrent benchmark that left the front,
// sent or dropped, and how many are in flight.
type flight struct{ received, inflight atomic.Int64 }

func (fl *flight) left(n int) {
	fl.received.Add(int64(n))
	fl.inflight.Add(-int64(n))
}

// drop is a DropFunc: a packet the AQM drops leaves too, so its producer
// is not held back for it.
func (fl *flight) drop(aqm.Packet[uint64], aqm.Verdict) { fl.left(1) }

// consume takes packets from f in batches of up to consumerBatch and hands
// them to send until f is closed and drained.
func consume(f interface {
	DequeueBatch(context.Context, []aqm.Packet[uint64]) (int, error)
}, send func([]aqm.Packet[uint64])) {
	buf := make([]aqm.Packet[uint64], consumerBatch)
	for {
		n, err := f.DequeueBatch(context.Background(), buf)
		if err != nil {
			return
		}
		send(buf[:n])
	}
}

// runFront runs p producers against f with one consumer (see consume).
// Like the senders on a channel, producers are held back when the queue is
// full: each reserves room for 32 packets in a shared count of packets in
// flight (at most benchDepth, yielding while there is none), so no packet
// is ever refused and every packet leaves: delivered, or dropped by an AQM
// whose DropFunc is fl.drop. The reservation costs one atomic add per 32
// packets on each side.
func runFront(b *testing.B, f frontLike, fl *flight, p, batch int) {
	const chunk = 32
	send := func(ps []aqm.Packet[uint64]) { fl.left(len(ps)) }
	var consumers sync.WaitGroup
	if s, ok := f.(*front.Sharded[uint64]); ok {
		// One consumer per shard, as gVisor runs one dispatcher per queue
		// and Linux one qdisc per transmit queue.
		for i := range s.Shards() {
			consumers.Go(func() { consume(s.ShardAt(i), send) })
		}
	} else {
		consumers.Go(func() { consume(f, send) })
	}
	b.ReportAllocs()
	b.ResetTimer()
	runProducers(b.N, p, func(g, count int) {
		ps := make([]aqm.Packet[uint64], chunk)
		vs := make([]aqm.Verdict, chunk)
		for i := 0; i < count; i += chunk {
			m := min(chunk, count-i)
			for fl.inflight.Add(int64(m)) > benchDepth {
				fl.inflight.Add(-int64(m))
				runtime.Gosched()
			}
			for j := range m {
				ps[j] = aqm.Packet[uint64]{Payload: uint64(i + j), Meta: aqm.Meta{Size: 100, Hash: uint32(g*7919 + (i+j)%64)}}
			}
			if batch == 1 {
				for j := range m {
					_, _ = f.Enqueue(ps[j])
				}
			} else {
				_, _ = f.EnqueueBatch(ps[:m], vs[:m])
			}
		}
	})
	f.Close()
	consumers.Wait()
	b.StopTimer()
	if got := fl.received.Load(); got != int64(b.N) {
		b.Fatalf("received %d of %d: %+v", got, b.N, f.Stats())
	}
}

// BenchmarkFrontFQCoDel compares FQ-CoDel behind a front with FQ-CoDel on
// one thread, per packet: "thread" enqueues a burst of 32 and dequeues it
// on one goroutine (the queue's own cost); "sharded" feeds a sharded front
// of FQ-CoDel queues (one per P, batches of 32, one consumer per shard)
// from p producers; "front" is one front and one FQ-CoDel queue. The
// "-staged" rows are the same with Config.Staged, where each queue's work
// runs on its consumer.
func BenchmarkFrontFQCoDel(b *testing.B) {
	newQueue := func(onDrop aqm.DropFunc[uint64]) func(int) (aqm.Queue[uint64], error) {
		return func(int) (aqm.Queue[uint64], error) {
			return fq.NewCoDel[uint64](fq.CoDelConfig{LimitPackets: 2 * benchDepth, Flows: 1024, Seed: 1}, onDrop)
		}
	}
	b.Run("thread", func(b *testing.B) {
		// The packets of the front benchmarks' producer 0: 64 flows.
		q, _ := newQueue(nil)(0)
		ps := make([]aqm.Packet[uint64], 32)
		vs := make([]aqm.Verdict, 32)
		buf := make([]aqm.Packet[uint64], 32)
		now := aqm.Time(1)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			for j := range ps {
				ps[j] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 100, Hash: uint32(i % 64)}}
				i++
			}
			now += 1000
			aqm.EnqueueBatch(q, ps, vs, now)
			aqm.DequeueBatch(q, buf, now)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/pkt")
	})
	for _, p := range []int{1, 2, 4, 16} {
		b.Run("sharded/producers="+strconv.Itoa(p), func(b *testing.B) {
			// A consumer starved by a loaded machine lets sojourns
			// grow past CoDel's target: its drops leave the front too.
			fl := new(flight)
			s, _ := front.NewSharded(newQueue(fl.drop), nil, front.ShardedConfig{Shards: runtime.GOMAXPROCS(0)})
			runFront(b, s, fl, p, 32)
		})
		b.Run("sharded-staged/producers="+strconv.Itoa(p), func(b *testing.B) {
			fl := new(flight)
			s, _ := front.NewSharded(newQueue(fl.drop), nil, front.ShardedConfig{Shards: runtime.GOMAXPROCS(0), Config: front.Config{Staged: true}})
			s.OnRefused(fl.drop)
			runFront(b, s, fl, p, 32)
		})
		b.Run("front-staged/producers="+strconv.Itoa(p), func(b *testing.B) {
			fl := new(flight)
			q, _ := newQueue(fl.drop)(0)
			f, _ := front.New(q, nil, front.Config{Staged: true})
			f.OnRefused(fl.drop)
			runFront(b, f, fl, p, 32)
		})
		b.Run("front/producers="+strconv.Itoa(p), func(b *testing.B) {
			fl := new(flight)
			q, _ := newQueue(fl.drop)(0)
			f, _ := front.New(q, nil, front.Config{})
			runFront(b, f, fl, p, 32)
		})
	}
}

// BenchmarkFrontUncontended measures the CPU cost per packet of the front's
// paths on one goroutine, free of scheduling: 32 packets in (one by one,
// or as one batch) and 32 out with one DequeueBatch, against 32 sends and
// 32 receives on a buffered channel of the same depth. ns/pkt is per
// packet.
func BenchmarkFrontUncontended(b *testing.B) {
	ps := make([]aqm.Packet[uint64], 32)
	for i := range ps {
		ps[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 100, Hash: uint32(i)}}
	}
	vs := make([]aqm.Verdict, 32)
	buf := make([]aqm.Packet[uint64], 32)
	ctx := context.Background()
	perPacket := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/pkt")
	}
	b.Run("chan", func(b *testing.B) {
		ch := make(chan aqm.Packet[uint64], benchDepth)
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range ps {
				ch <- p
			}
			for range ps {
				sinkPacket = <-ch
			}
		}
		perPacket(b)
	})
	newF := func() *front.Front[uint64] {
		q, _ := fifo.New[uint64](fifo.Config{LimitPackets: benchDepth}, nil)
		f, _ := front.New[uint64](q, nil, front.Config{})
		return f
	}
	b.Run("single", func(b *testing.B) {
		f := newF()
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range ps {
				sinkVerdict, sinkErr = f.Enqueue(p)
			}
			sinkN, sinkErr = f.DequeueBatch(ctx, buf)
		}
		perPacket(b)
	})
	b.Run("batch32", func(b *testing.B) {
		f := newF()
		b.ReportAllocs()
		for b.Loop() {
			sinkN, sinkErr = f.EnqueueBatch(ps, vs)
			sinkN, sinkErr = f.DequeueBatch(ctx, buf)
		}
		perPacket(b)
	})
	b.Run("sharded-batch32", func(b *testing.B) {
		s, _ := front.NewSharded(func(int) (aqm.Queue[uint64], error) {
			return fifo.New[uint64](fifo.Config{LimitPackets: benchDepth}, nil)
		}, nil, front.ShardedConfig{Shards: 4})
		b.ReportAllocs()
		for b.Loop() {
			sinkN, sinkErr = s.EnqueueBatch(ps, vs)
			sinkN, sinkErr = s.DequeueBatch(ctx, buf)
		}
		perPacket(b)
	})
}
