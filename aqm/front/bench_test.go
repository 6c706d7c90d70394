package front_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/front"
	"github.com/aqmkit/aqmkit/fq"
)

// benchDepth is the depth of every queue and channel in the benchmarks.
const benchDepth = 1024

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
// and a sharded front (4 shards, batches of 32, round-robin consumer). All
// fronts use the default clock.Coarse. Every packet is delivered: a
// producer whose packet is refused yields and offers it again, as a channel
// send blocks.
func BenchmarkFront(b *testing.B) {
	for _, p := range []int{1, 2, 4, 16} {
		b.Run("producers="+strconv.Itoa(p), func(b *testing.B) {
			b.Run("chan", func(b *testing.B) { benchChan(b, p) })
			b.Run("single", func(b *testing.B) { benchFront(b, p, 1, 0) })
			b.Run("batch32", func(b *testing.B) { benchFront(b, p, 32, 0) })
			b.Run("sharded-batch32", func(b *testing.B) { benchFront(b, p, 32, 4) })
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
	Run(context.Context, func([]aqm.Packet[uint64])) error
	Close()
	Stats() aqm.Stats
}

func benchFront(b *testing.B, p, batch, shards int) {
	var f frontLike
	if shards == 0 {
		q, _ := aqm.NewFIFO[uint64](aqm.FIFOConfig{LimitPackets: benchDepth}, nil)
		f, _ = front.New[uint64](q, nil, front.Config{})
	} else {
		f, _ = front.NewSharded(func(int) (aqm.Queue[uint64], error) {
			return aqm.NewFIFO[uint64](aqm.FIFOConfig{LimitPackets: benchDepth / shards}, nil)
		}, nil, front.ShardedConfig{Shards: shards})
	}
	runFront(b, f, p, batch, 0)
}

// runFront runs p producers against f with one consumer in Run. Producers
// offer every packet until it is accepted, yielding when the queue is full,
// so that, as with a channel, every packet is delivered; with credit set,
// they also hold at most credit packets in flight (for queues such as
// FQ-CoDel that make room by dropping queued packets instead of refusing).
func runFront(b *testing.B, f frontLike, p, batch int, credit int64) {
	var received, inflight atomic.Int64
	done := make(chan struct{})
	go func() {
		_ = f.Run(context.Background(), func(ps []aqm.Packet[uint64]) {
			received.Add(int64(len(ps)))
			if credit > 0 {
				inflight.Add(-int64(len(ps)))
			}
		})
		close(done)
	}()
	b.ReportAllocs()
	b.ResetTimer()
	runProducers(b.N, p, func(g, count int) {
		if batch == 1 {
			for i := range count {
				for {
					v, _ := f.Enqueue(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 100, Hash: uint32(g*7919 + i%64)}})
					if v.Accepted() {
						break
					}
					runtime.Gosched()
				}
			}
			return
		}
		ps := make([]aqm.Packet[uint64], batch)
		vs := make([]aqm.Verdict, batch)
		for i := 0; i < count; i += batch {
			m := min(batch, count-i)
			if credit > 0 {
				for inflight.Load()+int64(m) > credit {
					runtime.Gosched()
				}
				inflight.Add(int64(m))
			}
			for j := range m {
				ps[j] = aqm.Packet[uint64]{Payload: uint64(i + j), Meta: aqm.Meta{Size: 100, Hash: uint32(g*7919 + (i+j)%64)}}
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
	f.Close()
	<-done
	b.StopTimer()
	if got := received.Load(); got+int64(f.Stats().DroppedQueued.Packets) != int64(b.N) {
		b.Fatalf("received %d of %d", got, b.N)
	}
}

// BenchmarkFrontFQCoDel compares FQ-CoDel behind a front with FQ-CoDel on
// one thread, per packet: "thread" enqueues a burst of 32 and dequeues it
// on one goroutine (the queue's own cost); "sharded" feeds a sharded front
// of FQ-CoDel queues (one per P, batches of 32) from p producers with one
// round-robin consumer; "front" is one front and one FQ-CoDel queue.
func BenchmarkFrontFQCoDel(b *testing.B) {
	newQ := func(int) (aqm.Queue[uint64], error) {
		return fq.NewCoDel[uint64](fq.CoDelConfig{LimitPackets: 2 * benchDepth, Flows: 1024, Seed: 1}, nil)
	}
	b.Run("thread", func(b *testing.B) {
		// The packets of the front benchmarks' producer 0: 64 flows.
		q, _ := newQ(0)
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
			s, _ := front.NewSharded(newQ, nil, front.ShardedConfig{Shards: 2})
			runFront(b, s, p, 32, benchDepth)
		})
		b.Run("front/producers="+strconv.Itoa(p), func(b *testing.B) {
			q, _ := newQ(0)
			f, _ := front.New(q, nil, front.Config{})
			runFront(b, f, p, 32, benchDepth)
		})
	}
}
