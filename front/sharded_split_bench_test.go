package front_test

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// BenchmarkShardedRate compares the shared bucket (one lock all shards
// take per look) with the split rate (a bucket per shard) under parallel
// producers and consumers: each of GOMAXPROCS goroutines owns one shard
// and moves packets through it, an Enqueue and a one-packet
// TryDequeueBatch per op, at a rate far above what it sends, so that the
// bucket is consulted on every packet and never holds one back. With one
// shard, it shows what the split costs where nothing is contended.
func BenchmarkShardedRate(b *testing.B) {
	for _, shards := range []int{1, runtime.GOMAXPROCS(0)} {
		for _, split := range []bool{false, true} {
			name := "shared"
			if split {
				name = "split"
			}
			b.Run("shards="+strconv.Itoa(shards)+"/"+name, func(b *testing.B) {
				s, err := front.NewSharded(func(int) (aqm.Queue[uint64], error) {
					return fifo.New[uint64](fifo.Config{LimitPackets: 256}, nil)
				}, nil, front.ShardedConfig{Shards: shards, Seed: 3, SplitRate: split, Config: front.Config{Rate: 1000 * aqm.Gbit}})
				if err != nil {
					b.Fatal(err)
				}
				hash := make([]uint32, shards)
				have := make([]bool, shards)
				for found, h := 0, uint32(0); found < shards; h++ {
					if i := s.ShardOf(h); !have[i] {
						hash[i], have[i] = h, true
						found++
					}
				}
				var next atomic.Int32
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := int(next.Add(1)-1) % shards
					f := s.ShardAt(i)
					p := aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: hash[i]}}
					buf := make([]aqm.Packet[uint64], 1)
					for pb.Next() {
						s.Enqueue(p)
						f.TryDequeueBatch(buf)
					}
				})
			})
		}
	}
}
