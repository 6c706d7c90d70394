package front_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// TestIPFlushToCaller protects the one Flush shape on an IP front: a
// non-nil drop receives every queued buffer and owns it (the pool is not
// credited), as Front.Flush hands its packets to drop.
func TestIPFlushToCaller(t *testing.T) {
	pool := newPool(t)
	q, err := fifo.New[*front.Buf](fifo.Config{}, pool.Drop)
	require.NoError(t, err)
	f, err := front.NewIP(front.HashIP(q, iphdr.NewHasher()), nil, front.IPConfig{Pool: pool})
	require.NoError(t, err)
	for range 3 {
		v, err := f.Enqueue(buf(pool, v4pkt(hostA, peer, 17, 0, udpSeg(1, 2, 100))))
		require.NoError(t, err)
		require.True(t, v.Accepted())
	}
	var got []*front.Buf
	require.Equal(t, 3, f.Flush(func(p aqm.Packet[*front.Buf], _ aqm.Verdict) { got = append(got, p.Payload) }))
	require.Len(t, got, 3)
	require.Zero(t, f.Len())
	require.Zero(t, pool.Stats().Dropped.Packets, "the caller owns flushed buffers")
}

// configFields returns the Field of every aqm.ConfigError in err.
func configFields(err error) []string {
	var fields []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var ce *aqm.ConfigError
		if errors.As(e, &ce) {
			fields = append(fields, ce.Field)
		}
	}
	walk(err)
	return fields
}

// TestIPConfigRoundTrip protects the one config shape of an IP front:
// Reconfigure takes what NewIP takes and Config returns, changes the rate,
// and refuses a new Pool or VnetHdr, changing nothing.
func TestIPConfigRoundTrip(t *testing.T) {
	pool := newPool(t)
	q, err := fifo.New[*front.Buf](fifo.Config{}, pool.Drop)
	require.NoError(t, err)
	f, err := front.NewIP(front.HashIP(q, iphdr.NewHasher()), nil, front.IPConfig{Config: front.Config{Rate: aqm.Mbit}, Pool: pool, VnetHdr: true})
	require.NoError(t, err)
	cfg := f.Config()
	require.Same(t, pool, cfg.Pool)
	require.True(t, cfg.VnetHdr)
	cfg.Rate = 2 * aqm.Mbit
	require.NoError(t, f.Reconfigure(cfg))
	require.Equal(t, 2*aqm.Mbit, f.Config().Rate)
	cfg.Pool = nil // keeps the pool
	require.NoError(t, f.Reconfigure(cfg))
	require.Same(t, pool, f.Config().Pool)

	err = f.Reconfigure(front.IPConfig{Config: front.Config{Rate: 3 * aqm.Mbit}, Pool: newPool(t)})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.ElementsMatch(t, []string{"Pool", "VnetHdr"}, configFields(err))
	require.Equal(t, 2*aqm.Mbit, f.Config().Rate, "nothing changed")
}

// TestShardedConfigRoundTrip protects the one config shape of a Sharded
// front: Reconfigure takes what NewSharded takes and Config returns, with
// the defaults and seed filled in; the fixed fields are refused when
// changed and kept when zero.
func TestShardedConfigRoundTrip(t *testing.T) {
	newQ := func(int) (aqm.Queue[int], error) { return fifo.New[int](fifo.Config{}, nil) }
	s, err := front.NewSharded(newQ, nil, front.ShardedConfig{Shards: 3, SplitRate: true, Config: front.Config{Rate: aqm.Mbit}})
	require.NoError(t, err)
	cfg := s.Config()
	require.Equal(t, 3, cfg.Shards)
	require.True(t, cfg.SplitRate)
	require.NotZero(t, cfg.SplitPeriod, "default filled in")
	require.NotZero(t, cfg.Seed, "drawn seed filled in")
	cfg.Rate = 4 * aqm.Mbit
	require.NoError(t, s.Reconfigure(cfg))
	require.Equal(t, 4*aqm.Mbit, s.Config().Rate)
	require.NoError(t, s.Reconfigure(front.ShardedConfig{SplitRate: true, Config: front.Config{Rate: 5 * aqm.Mbit}}), "zero keeps the fixed fields")
	require.Equal(t, 5*aqm.Mbit, s.Config().Rate)

	err = s.Reconfigure(front.ShardedConfig{Shards: 2, Seed: cfg.Seed + 1, SplitPeriod: cfg.SplitPeriod + time.Millisecond, Config: front.Config{Rate: aqm.Mbit}})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.ElementsMatch(t, []string{"Shards", "Seed", "SplitPeriod", "SplitRate"}, configFields(err))
	require.Equal(t, 5*aqm.Mbit, s.Config().Rate, "nothing changed")
}

// TestShardOutOfRange protects Sharded.Shard from a bad index: it reports
// false instead of panicking, and returns every shard in range.
func TestShardOutOfRange(t *testing.T) {
	newQ := func(int) (aqm.Queue[int], error) { return fifo.New[int](fifo.Config{}, nil) }
	s, err := front.NewSharded(newQ, nil, front.ShardedConfig{Shards: 2, Seed: 1})
	require.NoError(t, err)
	for _, i := range []int{-1, 2, 1 << 30} {
		f, ok := s.Shard(i)
		require.False(t, ok, "shard %d", i)
		require.Nil(t, f)
	}
	for i := range s.Config().Shards {
		f, ok := s.Shard(i)
		require.True(t, ok)
		require.NotNil(t, f)
	}
}
