package front_test

import (
	"context"
	"math/rand/v2"
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

// splitRig is a split-rate sharded front on a manual clock, with one hash
// per shard and what each shard sent.
type splitRig struct {
	s     *front.Sharded[uint64]
	clk   *clock.Manual
	hash  []uint32
	sent  []uint64
	offer []uint64
	buf   []aqm.Packet[uint64]
}

func newSplitRig(t *testing.T, shards int, rate aqm.Rate) *splitRig {
	t.Helper()
	clk := clock.NewManual(1)
	s := newSharded(t, clk, front.ShardedConfig{Shards: shards, Seed: 11, SplitRate: true, Config: front.Config{Rate: rate}},
		fifo.Config{LimitPackets: 64}, nil)
	r := &splitRig{s: s, clk: clk, hash: make([]uint32, shards), sent: make([]uint64, shards), offer: make([]uint64, shards),
		buf: make([]aqm.Packet[uint64], 32)}
	have := make([]bool, shards)
	for found, h := 0, uint32(0); found < shards; h++ {
		if i := s.ShardOf(h); !have[i] {
			r.hash[i], have[i] = h, true
			found++
		}
	}
	return r
}

// run plays span in steps of 100 µs; each step demand(step, shard) gives
// the bytes shard is offered (in 1000-byte packets, the fraction carried
// over), then every shard's consumer takes what it may. It returns the
// bytes sent by each shard in the last measure steps.
func (r *splitRig) run(t *testing.T, span time.Duration, measure time.Duration, demand func(step, shard int) float64) []uint64 {
	t.Helper()
	const step = 100 * time.Microsecond
	steps, from := int(span/step), int((span-measure)/step)
	carry := make([]float64, len(r.hash))
	out := make([]uint64, len(r.hash))
	for k := range steps {
		for i := range r.hash {
			carry[i] += demand(k, i)
			for carry[i] >= 1000 {
				carry[i] -= 1000
				r.offer[i] += 1000
				_, err := r.s.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: r.hash[i]}})
				require.NoError(t, err)
			}
		}
		for i := range r.hash {
			for {
				n, _ := r.s.ShardAt(i).TryDequeueBatch(r.buf)
				for _, p := range r.buf[:n] {
					r.sent[i] += uint64(p.Size)
					if k >= from {
						out[i] += uint64(p.Size)
					}
				}
				if n < len(r.buf) {
					break
				}
			}
		}
		r.clk.Advance(step)
	}
	return out
}

// perStep is the bytes a rate sends in one 100 µs step.
func perStep(rate aqm.Rate) float64 { return float64(rate) / 8 / 10000 }

// TestSplitRateHolds protects the split rate's total: under even load,
// a 90/10 skew, one shard alone and shards switching on and off at random
// every 20 ms, the sum of what all shards send over 10 s is the rate ×
// time within 1 %, and every packet is accounted for.
func TestSplitRateHolds(t *testing.T) {
	const shards, rate = 4, 100 * aqm.Mbit
	span := 10 * time.Second
	on := make([]bool, shards)
	rng := rand.New(rand.NewPCG(5, 6))
	for name, demand := range map[string]func(step, shard int) float64{
		"even":   func(_, _ int) float64 { return 1.5 * perStep(rate) / shards },
		"skewed": func(_, i int) float64 { return 1.5 * perStep(rate) * []float64{0.9, 0.1, 0, 0}[i] },
		"one":    func(_, i int) float64 { return map[bool]float64{true: 2 * perStep(rate)}[i == 2] },
		"switching": func(k, i int) float64 {
			if k%200 == 0 && i == 0 {
				for j := range on {
					on[j] = rng.IntN(2) == 0
				}
				on[rng.IntN(shards)] = true
			}
			if on[i] {
				return 1.2 * perStep(rate)
			}
			return 0
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newSplitRig(t, shards, rate)
			out := r.run(t, span+time.Second, span, demand)
			var sum uint64
			for _, b := range out {
				sum += b
			}
			want := float64(rate) / 8 * span.Seconds()
			t.Logf("sent %d bytes (%v per shard), rate × time %.0f: %+.3f %%", sum, out, want, 100*(float64(sum)/want-1))
			require.InEpsilon(t, want, float64(sum), 0.01)
			st := r.s.Stats()
			var offered uint64
			for i := range shards {
				offered += r.offer[i]
				sst := r.s.ShardAt(i).Stats()
				require.Equal(t, r.sent[i], sst.Dequeued.Bytes, "shard %d", i)
				require.Equal(t, sst.Enqueued.Packets, sst.Dequeued.Packets+sst.DroppedQueued.Packets+uint64(sst.Len))
			}
			require.Equal(t, offered, st.Offered().Bytes)
		})
	}
}

// TestSplitRateFollowsDemand protects the shares: on a saturated link a
// shard offered three times another's load gets about three times its
// share (as one queue at the link would give them), a shard alone gets
// the whole rate, and an idle shard's share goes to the busy one.
func TestSplitRateFollowsDemand(t *testing.T) {
	const rate = 100 * aqm.Mbit
	span := 5 * time.Second
	r := newSplitRig(t, 2, rate)
	out := r.run(t, span+time.Second, span, func(_, i int) float64 {
		return 2 * perStep(rate) * []float64{0.75, 0.25}[i]
	})
	ratio := float64(out[0]) / float64(out[1])
	t.Logf("3:1 demand: sent %v, ratio %.3f", out, ratio)
	require.InDelta(t, 3, ratio, 0.3)
	require.InEpsilon(t, float64(rate)/8*span.Seconds(), float64(out[0]+out[1]), 0.01)

	out = r.run(t, span+time.Second, span, func(_, i int) float64 {
		return []float64{2 * perStep(rate), 0}[i]
	})
	t.Logf("one busy: sent %v; shares %v / %v", out, r.s.ShardAt(0).Detail().Rate, r.s.ShardAt(1).Detail().Rate)
	require.InEpsilon(t, float64(rate)/8*span.Seconds(), float64(out[0]), 0.01)
	require.Zero(t, out[1])
	require.Less(t, uint64(r.s.ShardAt(1).Detail().Rate), uint64(rate/100), "the idle shard's share went to the busy one")
	require.Equal(t, rate, r.s.Detail().Rate)
}

// TestSplitRateConfig protects the split's settings: a bad SplitPeriod is
// named, SetRate changes the total that the shards' shares sum to, and
// the shards' shares always sum to the rate.
func TestSplitRateConfig(t *testing.T) {
	for _, p := range []time.Duration{-1, time.Microsecond, time.Second} {
		var ce *aqm.ConfigError
		require.ErrorAs(t, front.ShardedConfig{SplitRate: true, SplitPeriod: p}.Validate(), &ce)
		require.Equal(t, "SplitPeriod", ce.Field)
	}
	r := newSplitRig(t, 3, 30*aqm.Mbit)
	sum := func() (s aqm.Rate) {
		for i := range 3 {
			r.s.ShardAt(i).TryDequeueBatch(r.buf) // applies the latest share
			s += r.s.ShardAt(i).Detail().Rate
		}
		return s
	}
	require.Equal(t, 30*aqm.Mbit, sum())
	r.run(t, 100*time.Millisecond, 0, func(_, i int) float64 { return float64(i) * perStep(30*aqm.Mbit) })
	require.Equal(t, 30*aqm.Mbit, sum())
	r.s.SetRate(12 * aqm.Mbit)
	require.Equal(t, 12*aqm.Mbit, sum())
	require.Equal(t, 12*aqm.Mbit, r.s.Config().Rate)
	require.Equal(t, 12*aqm.Mbit, r.s.ShardAt(2).Config().Rate, "a shard reports the total rate")
	r.run(t, 100*time.Millisecond, 0, func(_, i int) float64 { return 2 * perStep(12*aqm.Mbit) })
	require.Equal(t, 12*aqm.Mbit, sum())
	out := r.run(t, 2*time.Second, time.Second, func(_, i int) float64 { return 2 * perStep(12*aqm.Mbit) })
	require.InEpsilon(t, float64(12*aqm.Mbit)/8, float64(out[0]+out[1]+out[2]), 0.01)
}

// TestSplitRateAllocs protects the split rate's per-packet path from
// allocating, rebalances included.
func TestSplitRateAllocs(t *testing.T) {
	r := newSplitRig(t, 4, 100*aqm.Gbit)
	ps := make([]aqm.Packet[uint64], 16)
	vs := make([]aqm.Verdict, 16)
	for i := range ps {
		ps[i] = aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, Hash: r.hash[i%4]}}
	}
	require.Zero(t, testing.AllocsPerRun(2000, func() {
		r.clk.Advance(500 * time.Microsecond)
		sinkN, sinkErr = r.s.EnqueueBatch(ps, vs)
		for i := range 4 {
			sinkN, _ = r.s.ShardAt(i).TryDequeueBatch(r.buf)
		}
	}))
}

// TestSplitRateBlockingConsumers protects the split rate with real
// blocking consumers (per shard, and the round-robin one) on a synthetic
// clock: with shards switching between busy and idle every 100 ms, the
// consumers asleep on old shares are woken when their share grows, and
// the sum of what all shards send over 5 s holds the rate within 1 %.
func TestSplitRateBlockingConsumers(t *testing.T) {
	for _, perShard := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			const rate, d = 8 * aqm.Mbit, 5 * time.Second
			s := newSharded(t, bubbleClock(), front.ShardedConfig{Shards: 3, Seed: 7, SplitRate: true, Config: front.Config{Rate: rate}},
				fifo.Config{LimitPackets: 100}, nil)
			hash := make([]uint32, 3)
			have := make([]bool, 3)
			for h, found := uint32(0), 0; found < 3; h++ {
				if k := s.ShardOf(h); !have[k] {
					hash[k], have[k] = h, true
					found++
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), d)
			defer cancel()
			var wg sync.WaitGroup
			wg.Go(func() {
				for ms := 0; ctx.Err() == nil; ms++ {
					for k, h := range hash {
						// Shard 0 always, shards 1 and 2 in turns of 100 ms.
						if k == 0 || (ms/100)%2 == k-1 {
							for s.ShardAt(k).Len() < 30 {
								_, _ = s.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000, Hash: h}})
							}
						}
					}
					time.Sleep(time.Millisecond)
				}
			})
			var bytes atomic.Uint64
			count := func(ps []aqm.Packet[uint64]) {
				for _, p := range ps {
					bytes.Add(uint64(p.Size))
				}
			}
			if perShard {
				for k := range s.Shards() {
					wg.Go(func() { _ = s.ShardAt(k).Run(ctx, count) })
				}
			} else {
				wg.Go(func() { _ = s.Run(ctx, count) })
			}
			wg.Wait()
			want := float64(rate) / 8 * d.Seconds()
			t.Logf("per shard %v: sent %d bytes, rate × time %.0f", perShard, bytes.Load(), want)
			require.InEpsilon(t, want, float64(bytes.Load()), 0.01, "per-shard consumers %v", perShard)
		})
	}
}
