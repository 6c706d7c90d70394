package keyed_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/keyed"
)

// kpkt is a packet for key k with payload id.
func kpkt(id uint64, k uint32, size uint32) aqm.Packet[uint64] {
	return aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: size, Hash: k}}
}

// sinkPacket keeps the compiler from optimising a dequeued packet away.
var sinkPacket aqm.Packet[uint64]

// bubbleClock is a clock for synctest bubbles, whose fake time is not the
// process's (see clock.Mono).
func bubbleClock() clock.Clock { return clock.Since(time.Now()) }

// byHash is the key function of the tests: the packet's Hash.
func byHash(p aqm.Packet[uint64]) uint32 { return p.Hash }

func newKeyedFIFO(t testing.TB, limit int, cfg keyed.Config) *keyed.Queue[uint32, uint64] {
	t.Helper()
	k, err := keyed.New(byHash, func(uint32) (aqm.Queue[uint64], error) {
		return fifo.New[uint64](fifo.Config{LimitPackets: limit}, nil)
	}, cfg)
	require.NoError(t, err)
	return k
}

// TestChurn protects conservation and the key bound under churn:
// 1,000 keys come and go in phases (some with more keys than MaxKeys),
// behind a shared rate, with CoDel (dequeue drops) and small FIFOs
// (refusals); every packet is refused, sent or dropped exactly once, the
// totals and each live key's counters balance after every step, keys are
// reclaimed, evicted and rebuilt, and there are never more than MaxKeys.
func TestChurn(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	const universe, maxKeys = 1000, 300
	const (
		unseen = iota
		queued
		refused
		sent
		dropped
	)
	var fate []uint8
	settle := func(id uint64, to uint8) {
		require.Equal(t, uint8(queued), fate[id], "packet %d settled twice", id)
		fate[id] = to
	}
	onDrop := func(p aqm.Packet[uint64], _ aqm.Verdict) { settle(p.Payload, dropped) }
	cfg := keyed.Config{MaxKeys: maxKeys, IdleTime: 5 * time.Millisecond, Rate: 20 * aqm.Mbit}
	k, err := keyed.New(byHash, func(key uint32) (aqm.Queue[uint64], error) {
		if key%2 == 0 {
			return fifo.New(fifo.Config{LimitPackets: 8}, onDrop)
		}
		return codel.New(codel.Config{Control: codel.Control{Target: time.Millisecond, Interval: 10 * time.Millisecond}, LimitPackets: 64}, onDrop)
	}, cfg)
	require.NoError(t, err)

	now := aqm.Time(1)
	var active []uint32
	checkTotals := func() {
		st := k.Stats()
		require.Equal(t, uint64(len(fate)), st.Offered().Packets)
		require.Equal(t, st.Enqueued.Packets, st.Dequeued.Packets+st.DroppedQueued.Packets+uint64(st.Len))
		require.Equal(t, k.Len(), st.Len)
		require.Equal(t, k.Backlog(), st.Backlog)
		d := k.Detail()
		require.Equal(t, d.CreatedKeys, d.ReclaimedKeys+d.EvictedKeys+uint64(d.Keys))
	}
	for step := range 40000 { // 100 µs each: 4 s
		if step%500 == 0 { // a new phase every 50 ms
			n := 100
			if (step/500)%3 == 2 {
				n = 400 // more keys than MaxKeys
			}
			active = active[:0]
			for range n {
				active = append(active, uint32(rng.IntN(universe)))
			}
		}
		if step < 38000 {
			for range rng.IntN(3) {
				key := active[rng.IntN(len(active))]
				id := uint64(len(fate))
				fate = append(fate, queued)
				if v := k.Enqueue(kpkt(id, key, uint32(64+rng.IntN(1437))), now); !v.Accepted() {
					settle(id, refused)
				}
			}
		}
		for {
			p, ok := k.Dequeue(now)
			if !ok {
				break
			}
			settle(p.Payload, sent)
		}
		require.LessOrEqual(t, k.Keys(), maxKeys)
		if step%1000 == 0 {
			checkTotals()
			for _, key := range active[:10] {
				if st, ok := k.KeyStats(key); ok {
					require.Equal(t, st.Enqueued.Packets, st.Dequeued.Packets+st.DroppedQueued.Packets+uint64(st.Len))
				}
			}
		}
		now = now.Add(100 * time.Microsecond)
	}
	for range 100000 { // drain, at the rate: at most 10 s
		if k.Len() == 0 {
			break
		}
		if p, ok := k.Dequeue(now); ok {
			settle(p.Payload, sent)
			continue
		}
		now = now.Add(100 * time.Microsecond)
	}
	require.Zero(t, k.Len(), "every queue drains")
	checkTotals()
	now = now.Add(cfg.IdleTime)
	k.Reclaim(now)
	require.Zero(t, k.Keys())
	checkTotals()
	var n [5]int
	for id, f := range fate {
		require.NotEqual(t, uint8(queued), f, "packet %d unaccounted", id)
		n[f]++
	}
	st, d := k.Stats(), k.Detail()
	require.Equal(t, uint64(n[sent]), st.Dequeued.Packets)
	require.Equal(t, uint64(n[dropped]), st.DroppedQueued.Packets)
	require.Equal(t, uint64(n[refused]), st.Dropped().Packets-st.DroppedQueued.Packets)
	t.Logf("packets %d: sent %d, dropped %d, refused %d; keys created %d, reclaimed %d, evicted %d; refused at the bound %d",
		len(fate), n[sent], n[dropped], n[refused], d.CreatedKeys, d.ReclaimedKeys, d.EvictedKeys, d.RefusedKeyLimit.Packets)
	require.Greater(t, d.CreatedKeys, uint64(universe), "keys are rebuilt after reclamation")
	require.NotZero(t, d.ReclaimedKeys)
	require.NotZero(t, d.EvictedKeys)
	require.NotZero(t, d.RefusedKeyLimit.Packets)
	require.NotZero(t, n[dropped])
}

// drive keeps every key in keys backlogged (topped up to depth packets of
// size(key) bytes) and sends what k lets leave from start for span,
// jumping to each next departure. It returns the bytes each key sent.
func drive(t *testing.T, k *keyed.Queue[uint32, uint64], keys int, size func(int) uint32, start aqm.Time, span time.Duration) []uint64 {
	t.Helper()
	out := make([]uint64, keys)
	now, end := start, start.Add(span)
	top := func() {
		for key := range keys {
			st, ok := k.KeyStats(uint32(key))
			for !ok || st.Len < 4 {
				require.True(t, k.Enqueue(kpkt(0, uint32(key), size(key)), now).Accepted())
				st, ok = k.KeyStats(uint32(key))
			}
		}
	}
	for now.Before(end) {
		top()
		p, ok := k.Dequeue(now)
		if ok {
			out[p.Hash] += uint64(p.Size)
			continue
		}
		next := k.NextDeparture(now)
		require.True(t, next.After(now), "a backlogged keyed queue that refuses names a later departure")
		now = next
	}
	return out
}

// TestSharedRateFair protects fairness under a shared rate: 40 keys
// with packets of 64 to 1468 bytes, all backlogged for 10 s at 10 Mbit/s,
// send the same bytes within deficit round robin's bound (a quantum plus a
// largest packet per key), which gives Jain's index above 0.999, and
// together hold the rate within 1 %.
func TestSharedRateFair(t *testing.T) {
	const keys, rate = 40, 10 * aqm.Mbit
	span := 10 * time.Second
	k := newKeyedFIFO(t, 16, keyed.Config{Rate: rate, IdleTime: time.Hour})
	size := func(key int) uint32 { return uint32(64 + 36*key) }
	out := drive(t, k, keys, size, 1, span)
	var sum, sq float64
	for _, b := range out {
		sum += float64(b)
		sq += float64(b) * float64(b)
	}
	jain := sum * sum / (keys * sq)
	mean := sum / keys
	bound := float64(keyed.DefaultQuantumBytes + 64 + 36*(keys-1))
	for key, b := range out {
		require.InDelta(t, mean, float64(b), bound, "key %d", key)
	}
	want := float64(rate) / 8 * span.Seconds()
	t.Logf("Jain %.6f; total %.0f bytes, rate × time %.0f", jain, sum, want)
	require.GreaterOrEqual(t, jain, 0.999)
	require.InEpsilon(t, want, sum, 0.01)
}

// TestKeyRate protects per-key shaping: 30 backlogged keys at 1
// Mbit/s each, with no shared rate, each send rate × time within 1 % over
// 20 s; with a shared rate below their sum, the shared rate is held and
// split evenly.
func TestKeyRate(t *testing.T) {
	const keys = 30
	span := 20 * time.Second
	size := func(key int) uint32 { return uint32(200 + 40*key) }
	k := newKeyedFIFO(t, 16, keyed.Config{KeyRate: aqm.Mbit, IdleTime: time.Hour})
	out := drive(t, k, keys, size, 1, span)
	want := float64(aqm.Mbit) / 8 * span.Seconds()
	for key, b := range out {
		require.InEpsilon(t, want, float64(b), 0.01, "key %d", key)
	}
	// Shared 15 Mbit/s over 30 keys allowed 1 Mbit/s each: 0.5 Mbit/s each.
	k = newKeyedFIFO(t, 16, keyed.Config{KeyRate: aqm.Mbit, Rate: 15 * aqm.Mbit, IdleTime: time.Hour})
	out = drive(t, k, keys, size, 1, span)
	var sum float64
	for key, b := range out {
		require.InEpsilon(t, want/2, float64(b), 0.01, "key %d", key)
		sum += float64(b)
	}
	require.InEpsilon(t, 15*want, sum, 0.01)
}

// TestBound protects what happens at MaxKeys: with every key
// backlogged a new key is refused and counted (its packet in Stats'
// DroppedOverlimit), and once a key has drained its slot goes to the new
// key, counted as an eviction, with nothing lost.
func TestBound(t *testing.T) {
	k := newKeyedFIFO(t, 8, keyed.Config{MaxKeys: 4, IdleTime: time.Hour})
	for key := range uint32(4) {
		require.True(t, k.Enqueue(kpkt(0, key, 100), 1).Accepted())
	}
	require.Equal(t, aqm.DroppedOverlimit, k.Enqueue(kpkt(0, 9, 100), 1))
	d := k.Detail()
	require.Equal(t, aqm.Count{Packets: 1, Bytes: 100}, d.RefusedKeyLimit)
	require.Equal(t, uint64(1), k.Stats().DroppedOverlimit.Packets)
	p, ok := k.Dequeue(2) // key 0's packet: key 0 is now idle
	require.True(t, ok)
	require.Equal(t, uint32(0), p.Hash)
	require.True(t, k.Enqueue(kpkt(0, 9, 100), 3).Accepted())
	d = k.Detail()
	require.Equal(t, uint64(1), d.EvictedKeys)
	require.Equal(t, 4, d.Keys)
	_, ok = k.KeyStats(0)
	require.False(t, ok, "the idlest key was evicted")
	st := k.Stats()
	require.Equal(t, uint64(6), st.Offered().Packets)
	require.Equal(t, uint64(1), st.Dequeued.Packets)
	require.Equal(t, 4, st.Len)
}

// TestIdleReclaim protects reclamation: a key whose queue stays
// empty for IdleTime is let go by the next call, not before, and its
// counters stay in the totals.
func TestIdleReclaim(t *testing.T) {
	k := newKeyedFIFO(t, 8, keyed.Config{IdleTime: 10 * time.Millisecond})
	k.Enqueue(kpkt(0, 1, 100), 1)
	_, ok := k.Dequeue(1)
	require.True(t, ok)
	k.Dequeue(aqm.Time(1).Add(10*time.Millisecond - 1))
	require.Equal(t, 1, k.Keys())
	k.Dequeue(aqm.Time(1).Add(10 * time.Millisecond))
	require.Zero(t, k.Keys())
	require.Equal(t, uint64(1), k.Detail().ReclaimedKeys)
	require.Equal(t, uint64(1), k.Stats().Dequeued.Packets)
}

// TestAllocs protects the per-packet path from allocating once its
// keys exist: Enqueue and Dequeue over 100 keys, with no rate, per-key
// rates and a shared rate.
func TestAllocs(t *testing.T) {
	for _, cfg := range []keyed.Config{{}, {KeyRate: 10 * aqm.Gbit}, {Rate: 100 * aqm.Gbit, KeyRate: 10 * aqm.Gbit}} {
		cfg.IdleTime = time.Hour
		k := newKeyedFIFO(t, 16, cfg)
		now, i := aqm.Time(1), uint32(0)
		for key := range uint32(100) {
			k.Enqueue(kpkt(0, key, 100), now)
		}
		for k.Len() > 0 {
			k.Dequeue(now)
		}
		require.Zero(t, testing.AllocsPerRun(10000, func() {
			i++
			now += 100
			k.Enqueue(kpkt(0, i%100, 100), now)
			sinkPacket, _ = k.Dequeue(now)
		}), "%+v", cfg)
		require.Equal(t, uint64(100), k.Detail().CreatedKeys)
	}
}

// TestConfig protects validation: each bad field is named in an
// aqm.ConfigError, nil functions are refused, and random configurations
// never panic New, Enqueue or Dequeue.
func TestConfig(t *testing.T) {
	newQ := func(uint32) (aqm.Queue[uint64], error) { return fifo.New[uint64](fifo.Config{}, nil) }
	for field, cfg := range map[string]keyed.Config{
		"MaxKeys":       {MaxKeys: keyed.MaxKeys + 1},
		"IdleTime":      {IdleTime: -1},
		"QuantumBytes":  {QuantumBytes: -1},
		"KeyBurstBytes": {KeyBurstBytes: 1<<30 + 1},
		"BurstBytes":    {BurstBytes: -5},
	} {
		_, err := keyed.New(byHash, newQ, cfg)
		var ce *aqm.ConfigError
		require.ErrorAs(t, err, &ce, field)
		require.Equal(t, field, ce.Field)
		require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	}
	_, err := keyed.New[uint32, uint64](nil, newQ, keyed.Config{})
	require.ErrorIs(t, err, keyed.ErrNilKey)
	_, err = keyed.New(byHash, nil, keyed.Config{})
	require.ErrorIs(t, err, keyed.ErrNilQueue)

	// A failing constructor refuses the packet, counted.
	k, err := keyed.New(byHash, func(uint32) (aqm.Queue[uint64], error) { return nil, errors.New("no") }, keyed.Config{})
	require.NoError(t, err)
	require.Equal(t, aqm.DroppedOverlimit, k.Enqueue(kpkt(0, 1, 10), 1))
	require.Equal(t, uint64(1), k.Detail().RefusedNewQueue.Packets)

	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(max int) int { return rng.IntN(2*max+3) - max - 1 }
	for range 2000 {
		cfg := keyed.Config{
			MaxKeys:       pick(8),
			IdleTime:      time.Duration(pick(1000)),
			QuantumBytes:  pick(3000),
			KeyRate:       aqm.Rate(rng.Uint64N(math.MaxUint64)) >> rng.UintN(64),
			KeyBurstBytes: pick(5000),
			Rate:          aqm.Rate(rng.Uint64N(math.MaxUint64)) >> rng.UintN(64),
			BurstBytes:    pick(5000),
		}
		k, err := keyed.New(byHash, newQ, cfg)
		if err != nil {
			require.ErrorIs(t, err, aqm.ErrInvalidConfig)
			continue
		}
		now := aqm.Time(rng.Int64())
		for range 50 {
			k.Enqueue(kpkt(0, rng.Uint32N(12), rng.Uint32()>>rng.UintN(32)), now)
			k.Dequeue(now)
			k.NextDeparture(now)
			now += aqm.Time(rng.Int64N(1e6) - 1e5) // backwards too
		}
		st := k.Stats()
		require.Equal(t, st.Enqueued.Packets, st.Dequeued.Packets+st.DroppedQueued.Packets+uint64(st.Len))
	}
}

// TestBehindFront protects the composition with a Front: producers
// on their own goroutines, one blocking consumer (Run) that sleeps until
// the keyed queue's next departure (aqm.Paced), a shared rate of 8 Mbit/s held
// within 1 % over 5 s and split evenly between 10 backlogged peers, and
// the front's metrics listing the queue's own under "keyed_" names.
func TestBehindFront(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, peers, d = 8 * aqm.Mbit, 10, 5 * time.Second
		k := newKeyedFIFO(t, 32, keyed.Config{Rate: rate})
		f, err := front.New[uint64](k, bubbleClock(), front.Config{})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		var wg sync.WaitGroup
		for peer := range uint32(peers) {
			wg.Go(func() {
				for ctx.Err() == nil {
					for range 4 {
						_, _ = f.Enqueue(kpkt(0, peer, 1000))
					}
					time.Sleep(2 * time.Millisecond)
				}
			})
		}
		var bytes [peers]uint64
		wg.Go(func() {
			_ = f.Run(ctx, func(ps []aqm.Packet[uint64]) {
				for _, p := range ps {
					bytes[p.Hash] += uint64(p.Size)
				}
			})
		})
		wg.Wait()
		want := float64(rate) / 8 * d.Seconds()
		var sum uint64
		for _, b := range bytes {
			sum += b
			require.InEpsilon(t, want/peers, float64(b), 0.02)
		}
		require.InEpsilon(t, want, float64(sum), 0.01)
		names := map[string]bool{}
		for m := range f.Metrics() {
			require.False(t, names[m.Name], "metric %s listed twice", m.Name)
			names[m.Name] = true
		}
		require.True(t, names["keyed_keys"])
		require.True(t, names["keyed_shared_rate_bits_per_second"])
	})
}

// TestSharded protects the composition with a split-rate Sharded
// front: keys spread over 3 shards by Hash, each shard a keyed queue, one
// 20 Mbit/s rate split over the shards and held within 1 % over 5 s, with
// every packet accounted for.
func TestSharded(t *testing.T) {
	const rate = 20 * aqm.Mbit
	span := 5 * time.Second
	clk := clock.NewManual(1)
	s, err := front.NewSharded(func(int) (aqm.Queue[uint64], error) {
		return newKeyedFIFO(t, 16, keyed.Config{MaxKeys: 64}), nil
	}, clk, front.ShardedConfig{Shards: 3, Seed: 5, SplitRate: true, Config: front.Config{Rate: rate}})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]aqm.Packet[uint64], 32)
	var offered, sent uint64
	for range int(span / (100 * time.Microsecond)) {
		for range 4 { // 4 × 1000 bytes per 100 µs: 320 Mbit/s offered
			_, err := s.Enqueue(kpkt(0, rng.Uint32N(100), 1000))
			require.NoError(t, err)
			offered++
		}
		for i := range s.Config().Shards {
			f, ok := s.Shard(i)
			require.True(t, ok)
			for {
				n, _ := f.TryDequeueBatch(buf)
				for _, p := range buf[:n] {
					sent += uint64(p.Size)
				}
				if n < len(buf) {
					break
				}
			}
		}
		clk.Advance(100 * time.Microsecond)
	}
	require.InEpsilon(t, float64(rate)/8*span.Seconds(), float64(sent), 0.01)
	st := s.Stats()
	require.Equal(t, offered, st.Offered().Packets)
	require.Equal(t, sent, st.Dequeued.Bytes)
	require.Equal(t, st.Enqueued.Packets, st.Dequeued.Packets+st.DroppedQueued.Packets+uint64(st.Len))
}
