package keyed_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/keyed"
)

// BenchmarkQueue measures one packet through a keyed queue (an Enqueue
// to a key that exists, then a Dequeue) with 10 and 1000 keys, each a
// FIFO, without a rate, with a per-key rate and with a shared one (both
// far above what the loop sends, so that the buckets are consulted but
// never hold a packet back).
func BenchmarkQueue(b *testing.B) {
	for _, keys := range []int{10, 1000} {
		for _, rc := range []struct {
			name string
			cfg  keyed.Config
		}{
			{"none", keyed.Config{}},
			{"key-rate", keyed.Config{KeyRate: 100 * aqm.Gbit}},
			{"shared-rate", keyed.Config{Rate: 1000 * aqm.Gbit}},
		} {
			b.Run("keys="+strconv.Itoa(keys)+"/"+rc.name, func(b *testing.B) {
				cfg := rc.cfg
				cfg.MaxKeys, cfg.IdleTime = keys, time.Hour
				k := newKeyedFIFO(b, 16, cfg)
				now := aqm.Time(1)
				// Two packets per key queued, so that every key stays
				// active and the round robin visits them all.
				for key := range uint32(keys) {
					k.Enqueue(kpkt(0, key, 100), now)
					k.Enqueue(kpkt(0, key, 100), now)
				}
				i := uint32(0)
				b.ReportAllocs()
				for b.Loop() {
					now += 10
					k.Enqueue(kpkt(0, i%uint32(keys), 100), now)
					sinkPacket, _ = k.Dequeue(now)
					i++
				}
			})
		}
	}
}
