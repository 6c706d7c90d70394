package dualq_test

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

// BenchmarkPacket measures one Enqueue plus the Dequeues that keep the
// queue at its depth, per packet forwarded, for Classic (drop path when
// congested) and L4S (step and coupled marks) traffic.
func BenchmarkPacket(b *testing.B) {
	for _, bc := range []struct {
		name  string
		ecn   aqm.ECN
		depth int
		step  time.Duration
	}{
		{"classic/idle", aqm.ECT0, 0, time.Microsecond},
		{"classic/standing", aqm.ECT0, 100, 10 * time.Microsecond},
		{"classic/congested", aqm.NotECT, 100, time.Millisecond},
		{"l4s/standing", aqm.ECT1, 100, 10 * time.Microsecond},
		{"l4s/congested", aqm.ECT1, 100, time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q, err := dualq.New[uint64](dualq.Config{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			now := aqm.Time(time.Second)
			var i uint64
			step := func() {
				now += aqm.Time(bc.step)
				i++
				q.Enqueue(aqm.Packet[uint64]{Payload: i, Meta: aqm.Meta{Size: 1500, ECN: bc.ecn}}, now)
				for q.Len() > bc.depth {
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
