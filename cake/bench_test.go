package cake

import (
	"strconv"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

var (
	sinkVerdict aqm.Verdict
	sinkPacket  aqm.Packet[uint64]
	sinkMeta    aqm.Meta
)

// BenchmarkBurst measures the burst path per packet: each iteration offers
// a burst of n packets with EnqueueBatch and takes n back with
// DequeueBatch around a standing queue, at one time for the burst. The
// ns/pkt metric is the figure to compare.
func BenchmarkBurst(b *testing.B) {
	cases := []struct {
		name  string
		cfg   Config
		flows int
	}{
		{"besteffort/1flow", Config{TinMode: BestEffort, FlowMode: Flows}, 1},
		{"diffserv3/64flows", Config{}, 64},
		{"shaped-10gbit/64flows", Config{Rate: 10 * aqm.Gbit}, 64},
		{"ack-filter/64flows", Config{ACKFilter: ACKFilterConservative}, 64},
	}
	for _, tc := range cases {
		for _, n := range []int{1, 8, 32, 128} {
			b.Run(tc.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				cfg := tc.cfg
				cfg.Seed = 1
				q, err := New[uint64](cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				ps := make([]aqm.Packet[uint64], n)
				vs := make([]aqm.Verdict, n)
				out := make([]aqm.Packet[uint64], n)
				for i := range ps {
					ps[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1000, Hash: uint32(i % tc.flows)}}
				}
				now := aqm.Time(time.Second)
				step := aqm.Time(n) * aqm.Time(time.Microsecond) // 8 Gbit/s of 1000-byte packets
				for i := range 200 {                             // a standing queue of 200 packets
					q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: uint32(i % tc.flows)}}, now)
				}
				for range 20000 / n {
					now += step
					q.EnqueueBatch(ps, vs, now)
					q.DequeueBatch(out, now)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					now += step
					q.EnqueueBatch(ps, vs, now)
					q.DequeueBatch(out, now)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
				sinkVerdict, sinkPacket = vs[0], out[0]
			})
		}
	}
}

// BenchmarkPacket measures one Enqueue and one Dequeue of a standing
// queue, with and without Info (triple isolation over 16 hosts).
func BenchmarkPacket(b *testing.B) {
	for _, info := range []bool{false, true} {
		b.Run("info="+strconv.FormatBool(info), func(b *testing.B) {
			q, _ := New[uint64](Config{Seed: 1}, nil)
			now := aqm.Time(time.Second)
			i := uint32(0)
			step := func() {
				i++
				now += aqm.Time(time.Microsecond)
				p := aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: i % 64}}
				if info {
					sinkVerdict = q.EnqueueInfo(p, Info{SrcHost: i % 16, DstHost: i % 5, DSCP: uint8(i % 64)}, now)
				} else {
					sinkVerdict = q.Enqueue(p, now)
				}
				sinkPacket, _ = q.Dequeue(now)
			}
			for range 100 {
				q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: 7}}, now)
			}
			for range 10000 {
				step()
			}
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
		})
	}
}

// BenchmarkClassify measures parsing a TCP ACK with timestamps.
func BenchmarkClassify(b *testing.B) {
	c := NewClassifier(1, false)
	p := ipv4(hA, hB, 6, 0, tcpSeg{sport: 1, dport: 2, flags: flagACK, opts: []byte{8, 10, 0, 0, 0, 1, 0, 0, 0, 2}}.bytes())
	b.ReportAllocs()
	for b.Loop() {
		sinkMeta, _, _ = c.Classify(p)
	}
}
