package front_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

func newSharded(t testing.TB, c clock.Clock, cfg front.ShardedConfig, qcfg fifo.Config, onDrop aqm.DropFunc[uint64]) *front.Sharded[uint64] {
	t.Helper()
	s, err := front.NewSharded(func(int) (aqm.Queue[uint64], error) { return fifo.New(qcfg, onDrop) }, c, cfg)
	require.NoError(t, err)
	return s
}

// TestShardedDistribution protects the flow-to-shard map: one hash always
// goes to one shard, random hashes spread evenly, sequential hashes (the
// low bits a careless hash leaves) spread too, a zero Seed draws a secret
// key (two fronts map differently), and a fixed Seed is reproducible.
func TestShardedDistribution(t *testing.T) {
	const shards, n = 16, 64000
	s := newSharded(t, nil, front.ShardedConfig{Shards: shards}, fifo.Config{}, nil)
	require.Equal(t, shards, s.Shards())
	rng := rand.New(rand.NewPCG(1, 2))
	for _, gen := range []func(i int) uint32{
		func(int) uint32 { return rng.Uint32() },
		func(i int) uint32 { return uint32(i) },
		func(i int) uint32 { return uint32(i) << 16 },
	} {
		var count [shards]int
		for i := range n {
			h := gen(i)
			k := s.ShardOf(h)
			require.Equal(t, k, s.ShardOf(h))
			count[k]++
		}
		for k, c := range count {
			require.InEpsilon(t, n/shards, c, 0.1, "shard %d: %v", k, count)
		}
	}
	other := newSharded(t, nil, front.ShardedConfig{Shards: shards}, fifo.Config{}, nil)
	a := newSharded(t, nil, front.ShardedConfig{Shards: shards, Seed: 42}, fifo.Config{}, nil)
	b := newSharded(t, nil, front.ShardedConfig{Shards: shards, Seed: 42}, fifo.Config{}, nil)
	differ := 0
	for h := range uint32(1000) {
		require.Equal(t, a.ShardOf(h), b.ShardOf(h), "a fixed seed is reproducible")
		if s.ShardOf(h) != other.ShardOf(h) {
			differ++
		}
	}
	require.Greater(t, differ, 500, "two zero-seed fronts draw different keys")
	def := newSharded(t, nil, front.ShardedConfig{}, fifo.Config{}, nil)
	require.Equal(t, min(runtime.GOMAXPROCS(0), front.MaxShards), def.Shards())
}

// TestShardedEnqueueBatchIsLoop protects the sharded burst path: on random
// bursts it gives exactly the verdicts, per-shard Stats and dequeued
// packets of the same packets offered one by one, with identically seeded
// fronts, and the aggregated Stats equal the sum of the shards'.
func TestShardedEnqueueBatchIsLoop(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	clk := clock.NewManual(0)
	cfg := front.ShardedConfig{Shards: 5, Seed: seed | 1}
	fifo := fifo.Config{LimitPackets: 40}
	a := newSharded(t, clk, cfg, fifo, nil)
	b := newSharded(t, clk, cfg, fifo, nil)
	bufA, bufB := make([]aqm.Packet[uint64], 300), make([]aqm.Packet[uint64], 300)
	var id uint64
	for range 200 {
		clk.Advance(time.Duration(rng.IntN(1000)) * time.Microsecond)
		n := rng.IntN(301)
		ps := make([]aqm.Packet[uint64], n)
		for i := range ps {
			id++
			ps[i] = aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: uint32(rng.IntN(1500)), Hash: uint32(rng.IntN(12))}}
		}
		vs := make([]aqm.Verdict, n)
		acc, err := a.EnqueueBatch(ps, vs)
		require.NoError(t, err)
		want := 0
		for i, p := range ps {
			v, err := b.Enqueue(p)
			require.NoError(t, err)
			require.Equal(t, v, vs[i], "packet %d", i)
			if v.Accepted() {
				want++
			}
		}
		require.Equal(t, want, acc)
		var sum aqm.Stats
		for k := range a.Shards() {
			require.Equal(t, b.ShardAt(k).Stats(), a.ShardAt(k).Stats(), "shard %d", k)
			st := a.ShardAt(k).Stats()
			sum.Enqueued = sum.Enqueued.Plus(st.Enqueued)
			sum.Dequeued = sum.Dequeued.Plus(st.Dequeued)
			sum.DroppedOverlimit = sum.DroppedOverlimit.Plus(st.DroppedOverlimit)
			sum.Len += st.Len
			sum.Backlog += st.Backlog
			sum.MaxSize = max(sum.MaxSize, st.MaxSize)
		}
		require.Equal(t, sum, a.Stats())
		k := rng.IntN(300)
		na, _ := a.TryDequeueBatch(bufA[:k])
		nb, _ := b.TryDequeueBatch(bufB[:k])
		require.Equal(t, bufB[:nb], bufA[:na])
	}
}

// TestShardedConservation protects the sharded front under -race: batched
// and single producers on many flows, one round-robin consumer; every
// packet is received or dropped exactly once, each flow keeps its order,
// the aggregated Stats add up, and no goroutine is left behind.
func TestShardedConservation(t *testing.T) {
	before := runtime.NumGoroutine()
	const producers, each, flows = 6, 3000, 64
	seen := make([]atomic.Int32, producers*each)
	var dropped atomic.Int64
	onDrop := func(p aqm.Packet[uint64], _ aqm.Verdict) {
		dropped.Add(1)
		seen[p.Payload].Add(1)
	}
	s := newSharded(t, nil, front.ShardedConfig{Shards: 4}, fifo.Config{LimitPackets: 32, HeadDrop: true}, onDrop)
	var received atomic.Int64
	done := make(chan error)
	go func() {
		last := map[uint64]uint64{}
		done <- s.Run(context.Background(), func(ps []aqm.Packet[uint64]) {
			for _, p := range ps {
				key := uint64(p.Hash)<<32 | p.Payload/each
				if l, ok := last[key]; ok && p.Payload <= l {
					t.Errorf("flow %d of producer %d: %d after %d", p.Hash, p.Payload/each, p.Payload, l)
				}
				last[key] = p.Payload
				seen[p.Payload].Add(1)
				received.Add(1)
			}
		})
	}()
	var refused atomic.Int64
	var wg sync.WaitGroup
	for g := range producers {
		wg.Go(func() {
			ps := make([]aqm.Packet[uint64], 0, 40)
			vs := make([]aqm.Verdict, 40)
			for i := range each {
				id := uint64(g*each + i)
				p := aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: 100, Hash: uint32(id % flows)}}
				if g%2 == 0 {
					v, err := s.Enqueue(p)
					require.NoError(t, err)
					if !v.Accepted() {
						refused.Add(1)
						seen[id].Add(1)
					}
					continue
				}
				ps = append(ps, p)
				if len(ps) == cap(ps) || i == each-1 {
					n, err := s.EnqueueBatch(ps, vs)
					require.NoError(t, err)
					accepted := 0
					for j := range ps {
						if vs[j].Accepted() {
							accepted++
						}
						if !vs[j].Accepted() {
							refused.Add(1)
							seen[ps[j].Payload].Add(1)
						}
					}
					require.Equal(t, accepted, n)
					ps = ps[:0]
				}
			}
		})
	}
	wg.Wait()
	s.Close()
	require.NoError(t, <-done)
	require.EqualValues(t, producers*each, received.Load()+dropped.Load()+refused.Load())
	for i := range seen {
		require.EqualValues(t, 1, seen[i].Load(), "packet %d", i)
	}
	st := s.Stats()
	require.EqualValues(t, received.Load(), st.Dequeued.Packets)
	require.EqualValues(t, received.Load()+dropped.Load(), st.Enqueued.Packets)
	require.EqualValues(t, dropped.Load(), st.DroppedQueued.Packets)
	require.Zero(t, st.Len)
	d := s.Detail()
	require.True(t, d.Closed)
	got := map[string]float64{}
	for m := range s.Metrics() {
		got[m.Name] = m.Value
	}
	require.EqualValues(t, received.Load(), got["sent_packets"])
	requireNoLeak(t, before)
}

// TestShardedSharedRate protects the one rate shared by all shards, in
// virtual time: with every shard backlogged, one per-shard consumer each
// releases rate × duration in total (within 1%), and the round-robin
// consumer also shares the rate about equally among the shards.
func TestShardedSharedRate(t *testing.T) {
	for _, perShard := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			const rate, d = 8 * aqm.Mbit, 5 * time.Second
			s := newSharded(t, bubbleClock(), front.ShardedConfig{Shards: 4, Seed: 7, Config: front.Config{Rate: rate}}, fifo.Config{LimitPackets: 1000}, nil)
			// One flow hash per shard.
			hashes := make([]uint32, s.Shards())
			for h, found := uint32(0), 0; found < len(hashes); h++ {
				if k := s.ShardOf(h); hashes[k] == 0 {
					hashes[k] = h + 1<<31
					found++
				}
			}
			for k := range hashes {
				for s.ShardOf(hashes[k]) != k {
					hashes[k]++
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), d)
			defer cancel()
			var wg sync.WaitGroup
			wg.Go(func() {
				for ctx.Err() == nil {
					for _, h := range hashes {
						for s.ShardAt(s.ShardOf(h)).Len() < 50 {
							_, _ = s.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: h}})
						}
					}
					time.Sleep(time.Millisecond)
				}
			})
			var bytes [4]atomic.Uint64
			if perShard {
				for k := range s.Shards() {
					wg.Go(func() {
						_ = s.ShardAt(k).Run(ctx, func(ps []aqm.Packet[uint64]) {
							for _, p := range ps {
								bytes[k].Add(uint64(p.Size))
							}
						})
					})
				}
			} else {
				wg.Go(func() {
					_ = s.Run(ctx, func(ps []aqm.Packet[uint64]) {
						for _, p := range ps {
							bytes[s.ShardOf(p.Hash)].Add(uint64(p.Size))
						}
					})
				})
			}
			wg.Wait()
			total := 0.0
			for k := range bytes {
				total += float64(bytes[k].Load())
			}
			want := float64(rate) / 8 * d.Seconds()
			require.InEpsilon(t, want, total, 0.01, "per-shard consumers %v", perShard)
			if !perShard {
				for k := range bytes {
					require.InEpsilon(t, want/4, float64(bytes[k].Load()), 0.05, "shard %d", k)
				}
			}
			s.SetRate(2 * rate)
			require.Equal(t, 2*rate, s.Config().Rate)
			require.Equal(t, 2*rate, s.ShardAt(3).Config().Rate, "one rate for all shards")
		})
	}
}

// TestShardedCloseUnblocks protects Close on a sharded front: a blocked
// round-robin consumer and blocked per-shard consumers are released with
// ErrClosed, later packets are refused with ErrClosed, and Flush empties
// every shard.
func TestShardedCloseUnblocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSharded(t, bubbleClock(), front.ShardedConfig{Shards: 3}, fifo.Config{}, nil)
		errs := make(chan error, 4)
		go func() {
			_, err := s.DequeueBatch(context.Background(), make([]aqm.Packet[uint64], 4))
			errs <- err
		}()
		for k := range s.Shards() {
			go func() {
				_, err := s.ShardAt(k).DequeueBatch(context.Background(), make([]aqm.Packet[uint64], 4))
				errs <- err
			}()
		}
		synctest.Wait()
		s.Close()
		s.Close()
		for range 4 {
			require.ErrorIs(t, <-errs, front.ErrClosed)
		}
		_, err := s.Enqueue(pkt(1, 1))
		require.ErrorIs(t, err, front.ErrClosed)
		vs := make([]aqm.Verdict, 2)
		_, err = s.EnqueueBatch([]aqm.Packet[uint64]{pkt(1, 1), pkt(2, 1)}, vs)
		require.ErrorIs(t, err, front.ErrClosed)
		require.Equal(t, aqm.DroppedOverlimit, vs[1])
		require.Equal(t, aqm.Count{Packets: 3, Bytes: 3}, s.Detail().RefusedClosed)
	})
	s := newSharded(t, nil, front.ShardedConfig{Shards: 3}, fifo.Config{}, nil)
	for h := range uint32(30) {
		_, _ = s.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Hash: h, Size: 1}})
	}
	s.Close()
	require.Equal(t, 30, s.Flush(nil))
	require.Zero(t, s.Len())
	_, err := s.DequeueBatch(t.Context(), make([]aqm.Packet[uint64], 4))
	require.ErrorIs(t, err, front.ErrClosed)
}
