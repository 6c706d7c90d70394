package front_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// Producers enqueue from their own goroutines; one consumer runs Run, which
// hands it batches, until Close, after draining what was queued.
func Example() {
	q, _ := fifo.New[string](fifo.Config{LimitPackets: 100}, nil)
	f, _ := front.New(q, nil, front.Config{}) // nil: a clock.Coarse the front refreshes
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		wg.Go(func() { f.Enqueue(aqm.Packet[string]{Payload: name, Meta: aqm.Meta{Size: 100}}) })
	}
	wg.Wait()
	f.Close()
	_, err := f.Enqueue(aqm.Packet[string]{Payload: "late"})
	fmt.Println("after Close:", err)
	n := 0
	err = f.Run(context.Background(), func(ps []aqm.Packet[string]) { n += len(ps) })
	fmt.Println(n, "packets sent, Run returned", err)
	// Output:
	// after Close: front: closed
	// 3 packets sent, Run returned <nil>
}

// An event loop pulls what the rate allows with TryDequeueBatch and learns
// how long to sleep. At 8 Mbit/s a byte takes 1 µs: a full bucket of 3000
// bytes lets three 1000-byte packets leave at once, then a fourth that puts
// the bucket 1000 bytes in debt, repaid in 1 ms.
func ExampleFront_TryDequeueBatch() {
	q, _ := fifo.New[int](fifo.Config{}, nil)
	clk := clock.NewManual(0)
	f, _ := front.New(q, clk, front.Config{Rate: 8 * aqm.Mbit, BurstBytes: 3000})
	for i := range 6 {
		f.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000}})
	}
	buf := make([]aqm.Packet[int], 8)
	for range 3 {
		n, wait := f.TryDequeueBatch(buf)
		fmt.Println("sent", n, "then wait", wait)
		clk.Advance(wait)
	}
	// Output:
	// sent 4 then wait 1ms
	// sent 1 then wait 1ms
	// sent 1 then wait 0s
}

// A shaped link: packets leave at the rate, a blocking consumer sleeps
// between departures, and the rate changes at runtime.
func ExampleFront_SetRate() {
	q, _ := fifo.New[int](fifo.Config{}, nil)
	f, _ := front.New(q, nil, front.Config{Rate: 100 * aqm.Mbit})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go func() {
		for i := range 10 {
			f.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1500}})
		}
		f.SetRate(aqm.Gbit) // a rate controller's update
		f.Close()
	}()
	sent := 0
	_ = f.Run(ctx, func(ps []aqm.Packet[int]) { sent += len(ps) })
	fmt.Println(sent, "packets at", f.Config().Rate)
	// Output:
	// 10 packets at 1gbit
}

// A sharded front for producers on many cores: one FIFO per shard, chosen
// by flow hash; here one round-robin consumer drains all shards after
// Close, and the aggregated Stats count every packet.
func ExampleSharded() {
	s, _ := front.NewSharded(func(int) (aqm.Queue[int], error) {
		return fifo.New[int](fifo.Config{LimitPackets: 100}, nil)
	}, nil, front.ShardedConfig{Shards: 4})
	var wg sync.WaitGroup
	for g := range 4 { // four producers, 25 flows each
		wg.Go(func() {
			ps := make([]aqm.Packet[int], 25)
			for i := range ps {
				ps[i] = aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100, Hash: uint32(g*25 + i)}}
			}
			s.EnqueueBatch(ps, make([]aqm.Verdict, len(ps)))
		})
	}
	wg.Wait()
	s.Close()
	n := 0
	_ = s.Run(context.Background(), func(ps []aqm.Packet[int]) { n += len(ps) })
	fmt.Println(n, "packets sent;", s.Stats().Dequeued.Packets, "counted over", s.Config().Shards, "shards")
	// Output:
	// 100 packets sent; 100 counted over 4 shards
}
