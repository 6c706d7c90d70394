package fq

import (
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// BenchmarkFQFamily measures one packet forwarded through the concrete
// FQ-COBALT and FQ-PIE types with n active flows (two packets queued per
// flow; the buckets flows collide in build a queue and see a few
// signals), as BenchmarkPerfConcrete does for FQ-CoDel.
func BenchmarkFQFamily(b *testing.B) {
	for _, n := range []int{1024, 16384} {
		b.Run(fmt.Sprintf("fq-cobalt/flows=%d", n), func(b *testing.B) {
			q, err := NewCobalt[uint64](CobaltConfig{Flows: n, LimitPackets: 4 * n, MemoryLimitBytes: maxCoDelMemoryLimit, Seed: 1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			perfCobalt(b, q, n)
		})
		b.Run(fmt.Sprintf("fq-pie/flows=%d", n), func(b *testing.B) {
			q, err := NewPIE[uint64](PIEConfig{Flows: n, LimitPackets: 4 * n, MemoryLimitBytes: maxCoDelMemoryLimit, Seed: 1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			perfPIE(b, q, n)
		})
	}
}

// perfCobalt and perfPIE are perfCoDel for the other two types, written
// out for each type so that Enqueue and Dequeue are direct calls.
func perfCobalt(b *testing.B, q *Cobalt[uint64], n int) {
	now := aqm.Time(time.Second)
	var seq, forwarded uint64
	flow, flows := uint32(0), uint32(n)
	b.ReportAllocs()
	for i := 0; i < 4*n+20000 || b.Loop(); i++ {
		now += 100
		seq++
		if flow++; flow == flows {
			flow = 0
		}
		q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: flow * 0x9e3779b1}}, now)
		for q.Len() > 2*n {
			if _, ok := q.Dequeue(now); !ok {
				break
			}
			forwarded++
		}
	}
	b.StopTimer()
	if forwarded == 0 {
		b.Fatal("nothing forwarded")
	}
}

func perfPIE(b *testing.B, q *PIE[uint64], n int) {
	now := aqm.Time(time.Second)
	var seq, forwarded uint64
	flow, flows := uint32(0), uint32(n)
	b.ReportAllocs()
	for i := 0; i < 4*n+20000 || b.Loop(); i++ {
		now += 100
		seq++
		if flow++; flow == flows {
			flow = 0
		}
		q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: flow * 0x9e3779b1}}, now)
		for q.Len() > 2*n {
			if _, ok := q.Dequeue(now); !ok {
				break
			}
			forwarded++
		}
	}
	b.StopTimer()
	if forwarded == 0 {
		b.Fatal("nothing forwarded")
	}
}

// BenchmarkFQFamilyBurst is BenchmarkCoDelBurst for FQ-COBALT and FQ-PIE:
// F flows, two packets standing per flow, forwarded by EnqueueBatch then
// DequeueBatch of n packets, named <queue>/flows=F/n; ns/pkt is per packet.
func BenchmarkFQFamilyBurst(b *testing.B) {
	for _, n := range []int{1024, 16384} {
		for _, burst := range []int{1, 8, 32, 128} {
			for _, kind := range []string{"fq-cobalt", "fq-pie"} {
				b.Run(fmt.Sprintf("%s/flows=%d/%d", kind, n, burst), func(b *testing.B) {
					var q aqm.BatchQueue[uint64]
					var err error
					if kind == "fq-cobalt" {
						q, err = NewCobalt[uint64](CobaltConfig{Flows: n, LimitPackets: 4 * n, MemoryLimitBytes: maxCoDelMemoryLimit, Seed: 1}, nil)
					} else {
						q, err = NewPIE[uint64](PIEConfig{Flows: n, LimitPackets: 4 * n, MemoryLimitBytes: maxCoDelMemoryLimit, Seed: 1}, nil)
					}
					if err != nil {
						b.Fatal(err)
					}
					burstRun(b, q, n, burst)
				})
			}
		}
	}
}

func burstRun(b *testing.B, q aqm.BatchQueue[uint64], n, burst int) {
	ps := make([]aqm.Packet[uint64], burst)
	vs := make([]aqm.Verdict, burst)
	out := make([]aqm.Packet[uint64], burst)
	now := ct0
	flow, seq := uint32(0), uint64(0)
	fill := func() {
		for i := range ps {
			seq++
			if flow++; flow == uint32(n) {
				flow = 0
			}
			ps[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: flow * 0x9e3779b1}}
		}
	}
	for q.Len() < 2*n {
		fill()
		now += 100
		q.EnqueueBatch(ps, vs, now)
	}
	round := func() {
		fill()
		now += aqm.Time(100 * burst)
		q.EnqueueBatch(ps, vs, now)
		q.DequeueBatch(out, now)
	}
	for range 4*n/burst + 1000 {
		round()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		round()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(burst), "ns/pkt")
}
