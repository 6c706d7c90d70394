package fq

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// BenchmarkCoDel measures one packet forwarded (Enqueue + Dequeue) through
// FQ-CoDel with n active flows, two packets queued per flow, sojourn below
// target; the table size follows n (at least 1024) so every flow has its own
// queue. Growth from 1 to 65536 flows shows cache effects only: no work per
// packet is proportional to the number of flows.
func BenchmarkCoDel(b *testing.B) {
	for _, n := range []int{1, 64, 1024, 16384, 65536} {
		b.Run(fmt.Sprintf("flows=%d", n), func(b *testing.B) {
			q, err := NewCoDel[uint64](CoDelConfig{Flows: max(1024, n), LimitPackets: 4 * n, MemoryLimitBytes: maxCoDelMemoryLimit, Seed: 1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			now := ct0
			seq := uint64(0)
			step := func() {
				seq++
				now += aqm.Time(100 * time.Nanosecond)
				q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: uint32(seq % uint64(n))}}, now)
				for q.Len() > 2*n {
					coDelSinkPacket, _ = q.Dequeue(now)
				}
			}
			for range 4*n + 20000 {
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

// BenchmarkCoDelHashFlood measures the cost of a hash flood: 1500-byte
// packets with fresh hashes (cycling over 10^6) arrive at twice the dequeue
// rate, so the queue sits at its default 10240-packet limit and nearly every
// arrival ends in an overload drop while each flow queue holds only a packet
// or two. flood reports ns per arrival (an Enqueue, half a Dequeue and the
// overload drop); steady is the same queue and hashes at one arrival per
// dequeue with 2048 packets standing, below the limit, in ns per packet
// (an Enqueue and a Dequeue).
func BenchmarkCoDelHashFlood(b *testing.B) {
	for _, mode := range []string{"flood", "steady", "flood-burst"} {
		for _, n := range []int{1024, 16384, 65536} {
			b.Run(fmt.Sprintf("%s/flows=%d", mode, n), func(b *testing.B) {
				q, err := NewCoDel[uint64](CoDelConfig{Flows: n, Seed: 1}, nil)
				if err != nil {
					b.Fatal(err)
				}
				now := ct0
				i := uint32(0)
				arrive := func() {
					if i++; i == 1_000_000 {
						i = 0
					}
					now += 750
					coDelSinkVerdict = q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, Hash: i * 2654435761}}, now)
				}
				if mode == "steady" {
					for range 2048 {
						arrive()
					}
					for range 100000 {
						arrive()
						coDelSinkPacket, _ = q.Dequeue(now)
					}
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						arrive()
						coDelSinkPacket, _ = q.Dequeue(now)
					}
					return
				}
				if mode == "flood-burst" {
					ps := make([]aqm.Packet[uint64], 32)
					vs := make([]aqm.Verdict, 32)
					out := make([]aqm.Packet[uint64], 16)
					burst := func() {
						for j := range ps {
							if i++; i == 1_000_000 {
								i = 0
							}
							ps[j] = aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, Hash: i * 2654435761}}
						}
						now += 750 * 32
						q.EnqueueBatch(ps, vs, now)
						q.DequeueBatch(out, now)
					}
					for range 100000 / 32 {
						burst()
					}
					if q.Detail().EvictedOverlimit == 0 {
						b.Fatal("no overload")
					}
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						burst()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/arrival")
					return
				}
				odd := false
				step := func() {
					arrive()
					if odd = !odd; odd {
						coDelSinkPacket, _ = q.Dequeue(now)
					}
				}
				for range 100000 {
					step()
				}
				if q.Detail().EvictedOverlimit == 0 {
					b.Fatal("no overload")
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					step()
				}
			})
		}
	}
}

// BenchmarkCoDelBurst measures the burst path: F flows (one hash each, two
// packets standing per flow, sojourn below target) forwarded by
// EnqueueBatch then DequeueBatch of n packets, named fq-codel/flows=F/n;
// ns/op is per burst and ns/pkt per packet.
func BenchmarkCoDelBurst(b *testing.B) {
	for _, n := range []int{1024, 16384, 65536} {
		for _, burst := range []int{1, 8, 32, 128} {
			b.Run(fmt.Sprintf("fq-codel/flows=%d/%d", n, burst), func(b *testing.B) {
				q, err := NewCoDel[uint64](CoDelConfig{Flows: n, LimitPackets: 4 * n, MemoryLimitBytes: maxCoDelMemoryLimit, Seed: 1}, nil)
				if err != nil {
					b.Fatal(err)
				}
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
			})
		}
	}
}

// BenchmarkMemoryLatency measures the machine, not the queue: ns per load of
// a dependent random walk over size bytes, one load per 64-byte line, in a
// freshly allocated array. Run it beside BenchmarkCoDelHashFlood: at 65536
// flows the flow table is 4 MiB and each arrival reads about one and a half
// random flow lines, so the flood's growth with Flows follows what a random
// load in 4 MiB costs on the machine at the time.
func BenchmarkMemoryLatency(b *testing.B) {
	for _, size := range []int{256 << 10, 4 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			lines := size / 64
			next := make([]uint32, lines*16) // one uint32 used per line
			perm := rand.New(rand.NewPCG(1, 2)).Perm(lines)
			for i, l := range perm {
				next[l*16] = uint32(perm[(i+1)%lines] * 16)
			}
			p := uint32(0)
			for range lines {
				p = next[p]
			}
			b.ResetTimer()
			for range b.N {
				p = next[p]
			}
			memorySink = p
		})
	}
}

var memorySink uint32
