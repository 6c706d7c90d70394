package fq

import (
	"fmt"
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
