package red

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
)

// BenchmarkQueue measures one packet forwarded (Enqueue plus the Dequeue
// that keeps the queue at its level) on the concrete type, per region.
func BenchmarkQueue(b *testing.B) {
	cases := []struct {
		name  string
		cfg   Config
		level int
		step  time.Duration
	}{
		{"red/below", Config{MinThreshold: 150, MaxThreshold: 450, Weight: 0.002}, 100, 10 * time.Microsecond},
		{"red/band", Config{MinThreshold: 50, MaxThreshold: 150, Weight: 0.002}, 100, 10 * time.Microsecond},
		{"red/forced", Config{MinThreshold: 20, MaxThreshold: 60, Weight: 0.002}, 100, 10 * time.Microsecond},
		{"red/idle", Config{MinThreshold: 150, MaxThreshold: 450, Weight: 0.002}, 0, 10 * time.Microsecond},
		{"red/idle-decay", Config{MinThreshold: 150, MaxThreshold: 450, Weight: 0.002}, 0, 10 * time.Microsecond},
		{"red/band-wait", Config{MinThreshold: 50, MaxThreshold: 150, Weight: 0.002, Wait: true}, 100, 10 * time.Microsecond},
		{"red/bytes-band", Config{ByteMode: true, MinThreshold: 50_000, MaxThreshold: 150_000, Weight: 0.002}, 100, 10 * time.Microsecond},
		{"gentle/ramp", Config{Gentle: true, MinThreshold: 20, MaxThreshold: 60, Weight: 0.002}, 100, 10 * time.Microsecond},
		{"gentle/ramp-wait", Config{Gentle: true, MinThreshold: 20, MaxThreshold: 60, Weight: 0.002, Wait: true}, 100, 10 * time.Microsecond},
		{"red/bytes-band-wait", Config{ByteMode: true, MinThreshold: 50_000, MaxThreshold: 150_000, Weight: 0.002, Wait: true}, 100, 10 * time.Microsecond},
		{"ared/band", Config{Gentle: true, Adaptive: true, MinThreshold: 50, MaxThreshold: 150, Weight: 0.002}, 100, 10 * time.Microsecond},
	}
	// ring is the floor: the same loop over a bare ring push and pop.
	b.Run("ring", func(b *testing.B) {
		var r ring.Ring[aqm.Packet[uint64]]
		r.Init(10000)
		for i := range 100 {
			r.PushBack(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1000}})
		}
		var seq uint64
		var p aqm.Packet[uint64]
		for b.Loop() {
			seq++
			r.PushBack(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1000}})
			for r.Len() > 100 {
				p, _ = r.PopFront()
			}
		}
		sinkPacket = p
	})
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			tc.cfg.LimitPackets = 10000
			q, err := New[uint64](tc.cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			now := aqm.Time(time.Second)
			var seq uint64
			decay := tc.name == "red/idle-decay"
			for range 20000 { // warm up: the average reaches its level
				now += aqm.Time(tc.step)
				seq++
				q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1000}}, now)
				for q.Len() > tc.level {
					q.Dequeue(now)
				}
			}
			var v aqm.Verdict
			var p aqm.Packet[uint64]
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				now += aqm.Time(tc.step)
				seq++
				if decay {
					q.avg = 1 // force the exp on every arrival: the worst case of the idle path
				}
				v = q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1000}}, now)
				for q.Len() > tc.level {
					p, _ = q.Dequeue(now)
				}
			}
			sinkVerdict, sinkPacket = v, p
		})
	}
}
