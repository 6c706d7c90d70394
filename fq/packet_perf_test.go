package fq

import (
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/sfq"
)

// BenchmarkPerfConcrete measures one packet forwarded through the concrete
// FQ-CoDel and SFQ types with n active flows (two packets queued per flow,
// no drops), like BenchmarkCoDel and BenchmarkSFQ, counting the dequeued
// packets. Compare with bench's BenchmarkPacket for the cost of the
// aqm.Queue interface.
func BenchmarkPerfConcrete(b *testing.B) {
	for _, n := range []int{1, 64, 1024, 16384, 65536} {
		b.Run(fmt.Sprintf("fq-codel/flows=%d", n), func(b *testing.B) {
			q, err := NewCoDel[uint64](CoDelConfig{Flows: max(1024, n), LimitPackets: 4 * n, MemoryLimitBytes: maxCoDelMemoryLimit, Seed: 1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			perfCoDel(b, q, n)
		})
		b.Run(fmt.Sprintf("sfq/flows=%d", n), func(b *testing.B) {
			q, err := sfq.New[uint64](sfq.Config{LimitPackets: 2*n + 16, Divisor: 1 << 20, Seed: 1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			perfSFQ(b, q, n)
		})
	}
}

// perfCoDel and perfSFQ forward packets of n flows round robin, one every
// 100 ns of virtual time, keeping 2n queued. They are written out for each
// type: a generic loop would call the methods through a dictionary, not
// inline Dequeue, and so pay the stall this benchmark leaves out.
func perfCoDel(b *testing.B, q *CoDel[uint64], n int) {
	now := aqm.Time(time.Second)
	var seq, forwarded uint64
	flow, flows := uint32(0), uint32(n)
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

func perfSFQ(b *testing.B, q *sfq.Queue[uint64], n int) {
	now := aqm.Time(time.Second)
	var seq, forwarded uint64
	flow, flows := uint32(0), uint32(n)
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
