package sfq

import (
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// BenchmarkSFQBurst measures the burst path per packet: bursts of n
// arrivals (round robin over the flows) then bursts of n departures, with
// every flow holding about two packets, so the queue stands at 2·flows.
// Divisor 2^20 keeps the flows in distinct buckets. The ns/pkt metric is
// the time per packet forwarded (one arrival and one departure).
func BenchmarkSFQBurst(b *testing.B) {
	for _, flows := range []int{1024, 16384, 65536} {
		for _, n := range []int{1, 8, 32, 128} {
			b.Run(fmt.Sprintf("flows=%d/%d", flows, n), func(b *testing.B) {
				q, err := New[uint64](Config{LimitPackets: 2*flows + 256, Divisor: 1 << 20, Seed: 1}, nil)
				if err != nil {
					b.Fatal(err)
				}
				benchSFQBurst(b, q, flows, n)
			})
		}
	}
}

func benchSFQBurst(b *testing.B, q *Queue[uint64], flows, n int) {
	ps := make([]aqm.Packet[uint64], n)
	vs := make([]aqm.Verdict, n)
	out := make([]aqm.Packet[uint64], n)
	now := aqm.Time(time.Second)
	mask := uint64(flows - 1)
	var seq, sink uint64
	fill := func() {
		for i := range ps {
			seq++
			ps[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: uint32(seq&mask) * 0x9e3779b1}}
		}
	}
	for q.Len() < 2*flows {
		fill()
		aqm.EnqueueBatch(q, ps, vs, now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		now += 100
		fill()
		aqm.EnqueueBatch(q, ps, vs, now)
		k := aqm.DequeueBatch(q, out, now)
		sink += out[k-1].Payload
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
	sfqBenchSink = sink
}
