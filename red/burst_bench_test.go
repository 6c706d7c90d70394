package red

import (
	"strconv"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// BenchmarkBurst measures the burst path per packet: each iteration offers
// a burst of n packets with EnqueueBatch and takes n back with
// DequeueBatch, so the queue stays at its standing level, at one time for
// the burst. The ns/pkt metric is the figure to compare.
func BenchmarkBurst(b *testing.B) {
	cases := []struct {
		name  string
		cfg   Config
		level int
	}{
		{"red/below", Config{MinThreshold: 150, MaxThreshold: 450, Weight: 0.002}, 100},
		{"red/band", Config{MinThreshold: 50, MaxThreshold: 150, Weight: 0.002}, 100},
		{"gentle/ramp", Config{Gentle: true, MinThreshold: 20, MaxThreshold: 60, Weight: 0.002}, 100},
		{"ared/band", Config{Gentle: true, Adaptive: true, MinThreshold: 50, MaxThreshold: 150, Weight: 0.002}, 100},
	}
	for _, tc := range cases {
		for _, n := range []int{1, 8, 32, 128} {
			b.Run(tc.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				cfg := tc.cfg
				cfg.LimitPackets, cfg.Seed = 10000, 1
				q, err := New[uint64](cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				ps := make([]aqm.Packet[uint64], n)
				vs := make([]aqm.Verdict, n)
				out := make([]aqm.Packet[uint64], n)
				for i := range ps {
					ps[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1000}}
				}
				now := aqm.Time(time.Second)
				step := aqm.Time(n) * aqm.Time(10*time.Microsecond)
				for range 20000 / n { // warm up: the average reaches its level
					now += step
					aqm.EnqueueBatch[uint64](q, ps, vs, now)
					if k := q.Len() - tc.level; k > 0 {
						aqm.DequeueBatch[uint64](q, out[:min(k, n)], now)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					now += step
					aqm.EnqueueBatch[uint64](q, ps, vs, now)
					if k := q.Len() - tc.level; k > 0 {
						aqm.DequeueBatch[uint64](q, out[:min(k, n)], now)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
				sinkVerdict, sinkPacket = vs[0], out[0]
			})
		}
	}
}
