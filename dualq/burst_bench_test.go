package dualq_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

// BenchmarkBurst measures the burst path per packet: bursts of n arrivals
// then bursts of n departures over a standing queue of 100 packets, for
// L4S traffic (native step and coupled marks), Classic traffic, and an even
// mix of both (the scheduler alternates). The ns/pkt metric is the time
// per packet forwarded (one arrival and one departure).
func BenchmarkBurst(b *testing.B) {
	for _, sc := range []struct {
		name string
		ecn  [2]aqm.ECN // alternated packet by packet
	}{
		{"l4s", [2]aqm.ECN{aqm.ECT1, aqm.ECT1}},
		{"classic", [2]aqm.ECN{aqm.ECT0, aqm.ECT0}},
		{"mixed", [2]aqm.ECN{aqm.ECT1, aqm.NotECT}},
	} {
		for _, n := range []int{1, 8, 32, 128} {
			b.Run(fmt.Sprintf("%s/%d", sc.name, n), func(b *testing.B) {
				q, err := dualq.New[uint64](dualq.Config{Seed: 1}, nil)
				if err != nil {
					b.Fatal(err)
				}
				ps := make([]aqm.Packet[uint64], n)
				vs := make([]aqm.Verdict, n)
				out := make([]aqm.Packet[uint64], n)
				now := aqm.Time(time.Second)
				var seq, sink uint64
				fill := func() {
					for i := range ps {
						seq++
						ps[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, ECN: sc.ecn[seq&1]}}
					}
				}
				for q.Len() < 100 {
					now += 10 * aqm.Time(time.Microsecond)
					fill()
					aqm.EnqueueBatch(q, ps, vs, now)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					now += aqm.Time(n) * 10 * aqm.Time(time.Microsecond)
					fill()
					aqm.EnqueueBatch(q, ps, vs, now)
					k := aqm.DequeueBatch(q, out, now)
					sink += out[k-1].Payload
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
				sinkPacket.Payload = sink
			})
		}
	}
}
