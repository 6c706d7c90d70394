package pie

import (
	"fmt"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

var benchSink uint64

// BenchmarkQueue measures one packet forwarded (Enqueue plus Dequeue at a
// standing depth of 100) with time as a counter: "standing" keeps the delay
// at 1 ms (no AQM action), "congested" at ~100 ms (the drop path runs),
// each with timestamps and with the rate estimator, plus derandomization.
func BenchmarkQueue(b *testing.B) {
	type sc struct {
		name string
		step time.Duration
		cfg  Config
	}
	for _, s := range []sc{
		{"standing", 10 * time.Microsecond, Config{}},
		{"standing/rate", 10 * time.Microsecond, Config{Control: Control{RateEstimator: true}}},
		{"congested", time.Millisecond, Config{}},
		{"congested/rate", time.Millisecond, Config{Control: Control{RateEstimator: true}}},
		{"congested/derand", time.Millisecond, Config{Control: Control{Derandomize: true}}},
		{"congested/bytemode", time.Millisecond, Config{Control: Control{ByteMode: true}}},
	} {
		b.Run(s.name, func(b *testing.B) {
			s.cfg.LimitPackets = 10000
			q, err := New[uint64](s.cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			now := aqm.Time(time.Second)
			var seq, sink uint64
			step := func() {
				now += aqm.Time(s.step)
				seq++
				q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500}}, now)
				for q.Len() > 100 {
					p, _ := q.Dequeue(now)
					sink += p.Payload
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
			benchSink = sink
		})
	}
}

// BenchmarkDropEarly measures the per-packet decision alone at p = 0.05.
func BenchmarkDropEarly(b *testing.B) {
	for _, derand := range []bool{false, true} {
		name := "random"
		if derand {
			name = "derandomized"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{Control: Control{Derandomize: derand}}
			_ = cfg.Validate()
			pp := cfg.derive()
			var c Controller
			c.init(&pp, 1)
			c.p, c.old, c.burst = probCeil(0.05), int64(time.Second), 0
			n := uint64(0)
			for b.Loop() {
				if c.dropEarly(&pp, 1500, 1<<20) {
					n++
					c.accu = 0
				}
			}
			benchSink = n
		})
	}
}

// BenchmarkBurst measures the burst path: each round offers n packets with
// one EnqueueBatch and takes n with one DequeueBatch at a standing depth of
// 100 packets. "standing" keeps the delay at 1 ms (no AQM action),
// "congested" at about 100 ms (early drops), "standing-rate" uses the
// departure-rate estimator. It reports ns/pkt, the time per packet forwarded
// (enqueue plus dequeue).
func BenchmarkBurst(b *testing.B) {
	for _, sc := range []struct {
		name string
		step time.Duration // time per packet
		cfg  Config
	}{
		{"standing", 10 * time.Microsecond, Config{}},
		{"congested", time.Millisecond, Config{}},
		{"standing-rate", 10 * time.Microsecond, Config{Control: Control{RateEstimator: true}}},
	} {
		for _, n := range []int{1, 8, 32, 128} {
			b.Run(fmt.Sprintf("%s/%d", sc.name, n), func(b *testing.B) {
				cfg := sc.cfg
				cfg.LimitPackets, cfg.Seed = 10000, 1
				q, err := New[uint64](cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				ps := make([]aqm.Packet[uint64], n)
				vs := make([]aqm.Verdict, n)
				buf := make([]aqm.Packet[uint64], n)
				for i := range ps {
					ps[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500}}
				}
				now := aqm.Time(time.Second)
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
