package codel

import (
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// BenchmarkQueue measures one packet forwarded (Enqueue + Dequeue) on a
// standing queue of depth packets; step sets the sojourn time (depth*step):
// below target ("standing") or far above it ("congested", drop path).
func BenchmarkQueue(b *testing.B) {
	for _, sc := range []struct {
		name string
		step time.Duration
		ecn  aqm.ECN
	}{{"standing", 10 * time.Microsecond, 0}, {"congested", time.Millisecond, 0}, {"congested-ecn", time.Millisecond, aqm.ECT0}} {
		b.Run(fmt.Sprintf("%s/depth=100", sc.name), func(b *testing.B) {
			q, err := New[uint64](Config{LimitPackets: 10000}, nil)
			if err != nil {
				b.Fatal(err)
			}
			now := t0
			var seq uint64
			step := func() {
				now += aqm.Time(sc.step)
				seq++
				q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, ECN: sc.ecn}}, now)
				for q.Len() > 100 {
					sinkPacket, _ = q.Dequeue(now)
				}
			}
			for range 20000 {
				step()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				step()
			}
		})
	}
}

// BenchmarkInvSqrt measures the cached inverse square root update for a
// count step of one, and for a jump.
func BenchmarkInvSqrt(b *testing.B) {
	b.Run("next", func(b *testing.B) {
		var c Controller
		n := uint32(1)
		for b.Loop() {
			n++
			if n > 1<<20 {
				n = 2
				c.count = 0
			}
			c.setCount(n)
		}
	})
	b.Run("jump", func(b *testing.B) {
		var c Controller
		n := uint32(1)
		for b.Loop() {
			n = n*1664525 + 1013904223
			c.count = 0
			c.setCount(n%maxCount + 1)
		}
	})
}

// BenchmarkBurst measures the burst path: each round offers n packets with
// one EnqueueBatch and takes n with one DequeueBatch at a standing depth of
// 100 packets. "standing" keeps the sojourn time below target, "congested"
// far above it (CoDel drops), "congested-ecn" marks instead. It reports
// ns/pkt, the time per packet forwarded (enqueue plus dequeue).
func BenchmarkBurst(b *testing.B) {
	for _, sc := range []struct {
		name string
		step time.Duration // time per packet
		ecn  aqm.ECN
	}{{"standing", 10 * time.Microsecond, 0}, {"congested", time.Millisecond, 0}, {"congested-ecn", time.Millisecond, aqm.ECT0}} {
		for _, n := range []int{1, 8, 32, 128} {
			b.Run(fmt.Sprintf("%s/%d", sc.name, n), func(b *testing.B) {
				q, err := New[uint64](Config{LimitPackets: 10000}, nil)
				if err != nil {
					b.Fatal(err)
				}
				ps := make([]aqm.Packet[uint64], n)
				vs := make([]aqm.Verdict, n)
				buf := make([]aqm.Packet[uint64], n)
				for i := range ps {
					ps[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500, ECN: sc.ecn}}
				}
				now := t0
				round := func() {
					now += aqm.Time(n) * aqm.Time(sc.step)
					aqm.EnqueueBatch[uint64](q, ps, vs, now)
					for q.Len() > 100 {
						aqm.DequeueBatch[uint64](q, buf[:min(n, q.Len()-100)], now)
					}
				}
				for range 20000/n + 100 {
					round()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					round()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
			})
		}
	}
}
