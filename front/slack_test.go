package front_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// TestWakeSlackConfig protects the wake slack's rules: the default is the
// larger of 1 ms and a 1514-byte frame's time at the rate, an explicit
// value is kept, both are cut so that the slack's credit leaves room in
// the bucket (none for a burst below a frame), a front with no rate gets
// DefaultWakeSlack, and negative or absurd values are refused naming the
// field.
func TestWakeSlackConfig(t *testing.T) {
	frame := func(r aqm.Rate) time.Duration {
		return time.Duration((1514*8*int64(time.Second) + int64(r) - 1) / int64(r))
	}
	for _, c := range []struct {
		cfg  front.Config
		want time.Duration
	}{
		{front.Config{}, front.DefaultWakeSlack},
		{front.Config{WakeSlack: 7 * time.Millisecond}, 7 * time.Millisecond},
		{front.Config{Rate: 50 * aqm.Mbit}, time.Millisecond},
		{front.Config{Rate: 10 * aqm.Gbit}, time.Millisecond},
		{front.Config{Rate: aqm.Mbit}, frame(aqm.Mbit)}, // 12.112 ms: the default burst holds two frames
		{front.Config{Rate: 50 * aqm.Mbit, WakeSlack: 300 * time.Microsecond}, 300 * time.Microsecond},
		{front.Config{Rate: 50 * aqm.Mbit, WakeSlack: 5 * time.Millisecond}, 2500 * time.Microsecond}, // half the 5 ms burst
		{front.Config{Rate: 8 * aqm.Kbit, BurstBytes: 1}, 0},                                          // no room for a frame
		{front.Config{Rate: 8 * aqm.Mbit, BurstBytes: 1514}, 0},
		{front.Config{Rate: 8 * aqm.Mbit, BurstBytes: 6056, WakeSlack: time.Nanosecond}, time.Nanosecond},
		{front.Config{Rate: 8 * aqm.Mbit, BurstBytes: 6056}, frame(8 * aqm.Mbit)},
	} {
		t.Run(fmt.Sprintf("%v/%d/%v", c.cfg.Rate, c.cfg.BurstBytes, c.cfg.WakeSlack), func(t *testing.T) {
			f := newFront(t, newFIFO(t, fifo.Config{}, nil), nil, c.cfg)
			require.Equal(t, c.want, f.Detail().WakeSlack)
			found := false
			for m := range f.Metrics() {
				if m.Name == "front_wake_slack_seconds" {
					found = true
					require.Equal(t, aqm.Gauge, m.Kind)
					require.InDelta(t, c.want.Seconds(), m.Value, 1e-12)
				}
			}
			require.True(t, found)
		})
	}
	for _, bad := range []time.Duration{-1, front.MaxWakeSlack + 1, time.Hour} {
		err := front.Config{WakeSlack: bad}.Validate()
		var ce *aqm.ConfigError
		require.True(t, errors.As(err, &ce), "%v", bad)
		require.Equal(t, "WakeSlack", ce.Field)
		require.ErrorIs(t, err, aqm.ErrInvalidConfig)
		_, err = front.New[uint64](newFIFO(t, fifo.Config{}, nil), nil, front.Config{WakeSlack: bad})
		require.Error(t, err)
	}
	require.NoError(t, front.Config{WakeSlack: front.MaxWakeSlack}.Validate())
}

// TestWakeSlackCutsWakeups protects the point of the slack, by counting
// work in virtual time: at 50 Mbit/s with 1500-byte packets and a
// backlog, Run with the default slack looks at the queue at most twice per
// millisecond (it sleeps at least the 1 ms slack between batches), at
// least three times less often than with wake-ups at the exact departure
// instants (two looks per packet, 4167 packets a second), and both keep
// the rate within 1%.
func TestWakeSlackCutsWakeups(t *testing.T) {
	const rate, d = 50 * aqm.Mbit, 2 * time.Second
	run := func(slack time.Duration) (looks uint64, bytes uint64) {
		synctest.Test(t, func(t *testing.T) {
			clk := bubbleClock()
			f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 1000}, nil), clk, front.Config{Rate: rate, WakeSlack: slack})
			ctx, cancel := context.WithTimeout(t.Context(), d)
			defer cancel()
			var producer sync.WaitGroup
			defer producer.Wait()
			producer.Go(func() {
				for ctx.Err() == nil {
					for f.Len() < 200 {
						enq(t, f, pkt(0, 1500))
					}
					time.Sleep(time.Millisecond)
				}
			})
			err := f.Run(ctx, func(ps []aqm.Packet[uint64]) {
				for _, p := range ps {
					bytes += uint64(p.Size)
				}
			})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			looks = f.Detail().Wakeups
		})
		return looks, bytes
	}
	lazy, lazyBytes := run(0)
	exact, exactBytes := run(time.Nanosecond)
	want := float64(rate) / 8 * d.Seconds()
	require.InEpsilon(t, want, float64(lazyBytes), 0.01)
	require.InEpsilon(t, want, float64(exactBytes), 0.01)
	t.Logf("looks in %v: %d with the default slack, %d with 1 ns", d, lazy, exact)
	require.LessOrEqual(t, lazy, uint64(2*d/time.Millisecond)+10)
	require.GreaterOrEqual(t, exact, uint64(2*want/1500)-10, "two looks per packet at the exact instants")
	require.GreaterOrEqual(t, exact, 3*lazy)
}

// TestWakeSlackPaced protects the slack behind a queue that paces itself
// (CAKE shaping at 50 Mbit/s, the front at rate 0): the consumer sleeps 1
// ms past CAKE's next departure, CAKE's catch-up sends what became due in
// one batch, the rate holds within 1%, and the looks drop as at a front
// rate.
func TestWakeSlackPaced(t *testing.T) {
	const rate, d = 50 * aqm.Mbit, 2 * time.Second
	run := func(slack time.Duration) (looks, bytes uint64) {
		synctest.Test(t, func(t *testing.T) {
			q := newCountingCake(t, rate)
			f, err := front.New[uint64](q, bubbleClock(), front.Config{WakeSlack: slack})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), d)
			defer cancel()
			var producer sync.WaitGroup
			defer producer.Wait()
			producer.Go(func() {
				for i := uint32(0); ctx.Err() == nil; {
					for f.Len() < 200 {
						i++
						enq(t, f, aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, Hash: i % 4}})
					}
					time.Sleep(time.Millisecond)
				}
			})
			err = f.Run(ctx, func(ps []aqm.Packet[uint64]) {
				for _, p := range ps {
					bytes += uint64(p.Size)
				}
			})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			looks = f.Detail().Wakeups
		})
		return looks, bytes
	}
	lazy, lazyBytes := run(0)
	exact, exactBytes := run(time.Nanosecond)
	want := float64(rate) / 8 * d.Seconds()
	require.InEpsilon(t, want, float64(lazyBytes), 0.01)
	require.InEpsilon(t, want, float64(exactBytes), 0.01)
	t.Logf("looks in %v: %d with the default slack, %d with 1 ns", d, lazy, exact)
	require.LessOrEqual(t, lazy, uint64(2*d/time.Millisecond)+10)
	require.GreaterOrEqual(t, exact, 3*lazy)
}
