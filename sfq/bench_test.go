package sfq

import (
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

var sfqBenchSink uint64

// BenchmarkSFQ measures one packet forwarded (Enqueue plus Dequeue) with N
// active flows holding two packets each, and the overflow path (every
// arrival evicts the longest flow's head). Divisor 2^20 keeps the N flows in
// distinct buckets, so flows=N means N active slots.
func BenchmarkSFQ(b *testing.B) {
	for _, n := range []int{1, 64, 1024, 65536} {
		b.Run(fmt.Sprintf("flows=%d", n), func(b *testing.B) {
			q, err := New[uint64](Config{LimitPackets: 2*n + 16, Divisor: 1 << 20, Seed: 1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			benchSFQ(b, q, n, 2*n)
		})
	}
	b.Run("overflow/flows=1024", func(b *testing.B) {
		q, err := New[uint64](Config{LimitPackets: 2048, Divisor: 1 << 20, HeadDrop: true, Seed: 1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		benchSFQ(b, q, 1024, 1<<30) // never dequeues: every arrival evicts
	})
	b.Run("perturb=1ms/flows=1024", func(b *testing.B) {
		q, err := New[uint64](Config{LimitPackets: 2048 + 16, Divisor: 1 << 20, PerturbPeriod: time.Millisecond, Seed: 1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		benchSFQ(b, q, 1024, 2048)
	})
}

// benchSFQ runs the packet loop: packets of flows round robin, one every
// 100 ns of virtual time, dequeuing while more than depth are queued.
func benchSFQ(b *testing.B, q *Queue[uint64], flows, depth int) {
	now := aqm.Time(time.Second)
	var seq, sink uint64
	step := func() {
		now += 100
		seq++
		q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: uint32(seq%uint64(flows)) * 0x9e3779b1}}, now)
		for q.Len() > depth {
			p, _ := q.Dequeue(now)
			sink += p.Payload
		}
	}
	for range 4 * (depth%(1<<30) + flows) {
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	sfqBenchSink = sink
}
