package clock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/stretchr/testify/require"
)

// TestMonoNeverZeroAndMonotonic protects the real clock's two promises.
func TestMonoNeverZeroAndMonotonic(t *testing.T) {
	m := clock.NewMono()
	prev := m.Now()
	require.GreaterOrEqual(t, prev, clock.Epoch)
	for range 1000 {
		now := m.Now()
		require.GreaterOrEqual(t, now, prev)
		prev = now
	}
}

// TestManual protects Set/Advance and the zero value reading Epoch.
func TestManual(t *testing.T) {
	var m clock.Manual
	require.Equal(t, clock.Epoch, m.Now())
	require.Equal(t, clock.Epoch.Add(time.Second), m.Advance(time.Second))
	m.Set(42)
	require.Equal(t, aqm.Time(42), m.Now())
	require.Equal(t, aqm.Time(40), m.Advance(-2))
	m.Set(0)
	require.Equal(t, clock.Epoch, m.Now(), "zero means unset, so it reads Epoch")
	require.Equal(t, aqm.Time(7), clock.NewManual(7).Now())
}

// TestMonoSharedEpoch protects the process-wide epoch: two Mono clocks
// created at different times read the same instant.
func TestMonoSharedEpoch(t *testing.T) {
	a := clock.NewMono()
	time.Sleep(time.Millisecond)
	b := clock.NewMono()
	var zero clock.Mono
	ra := a.Now()
	rb := b.Now()
	rz := zero.Now()
	require.LessOrEqual(t, ra, rb, "b was created later but reads the same clock")
	require.LessOrEqual(t, rb, rz)
	require.Less(t, rz.Sub(ra), time.Second, "the readings are moments apart, not a creation gap")

}

// TestSince protects the relative clock: it reads Epoch at its start and
// advances with time.Since, in a synctest bubble.
func TestSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.Since(time.Now())
		require.Equal(t, clock.Epoch, c.Now())
		time.Sleep(3 * time.Second)
		require.Equal(t, clock.Epoch.Add(3*time.Second), c.Now())
	})
}

// TestCoarse protects the concurrent cached clock: Now returns the last
// refresh without reading the source, readings never go backwards even when
// a refresher publishes an older reading, and Run refreshes it on a ticker.
func TestCoarse(t *testing.T) {
	var src atomic.Int64
	src.Store(int64(clock.Epoch))
	c := clock.NewCoarse(clock.Func(func() aqm.Time { return aqm.Time(src.Load()) }))
	require.Equal(t, clock.Epoch, c.Now())
	src.Add(int64(time.Millisecond))
	require.Equal(t, clock.Epoch, c.Now(), "no refresh yet")
	require.Equal(t, clock.Epoch.Add(time.Millisecond), c.Refresh())
	require.Equal(t, clock.Epoch.Add(time.Millisecond), c.Now())
	src.Store(int64(clock.Epoch)) // the source steps back
	require.Equal(t, clock.Epoch.Add(time.Millisecond), c.Refresh(), "never backwards")
	require.Equal(t, clock.Epoch.Add(time.Millisecond), c.Now())
	require.NotZero(t, clock.NewCoarse(nil).Now(), "nil source means Mono")

	synctest.Test(t, func(t *testing.T) {
		c := clock.NewCoarse(clock.Since(time.Now()))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- c.Run(ctx, 10*time.Millisecond) }()
		time.Sleep(35 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, clock.Epoch.Add(30*time.Millisecond), c.Now(), "three ticks")
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}

// TestCoarseConcurrent protects the atomic publication under -race: many
// refreshers and readers, and every reader sees a non-decreasing sequence.
func TestCoarseConcurrent(t *testing.T) {
	c := clock.NewCoarse(clock.NewMono())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				c.Refresh()
			}
		})
		wg.Go(func() {
			prev := c.Now()
			for range 1000 {
				now := c.Now()
				if now < prev {
					t.Errorf("went back from %d to %d", prev, now)
					return
				}
				prev = now
			}
		})
	}
	wg.Wait()
}

// TestCoarseAllocs protects Now and Refresh from allocating.
func TestCoarseAllocs(t *testing.T) {
	c := clock.NewCoarse(nil)
	require.Zero(t, testing.AllocsPerRun(100, func() { c.Refresh(); _ = c.Now() }))
}

// BenchmarkNow compares one reading of Mono and of Coarse, from all Ps at
// once.
func BenchmarkNow(b *testing.B) {
	for _, bc := range []struct {
		name string
		c    clock.Clock
	}{{"Mono", clock.NewMono()}, {"Coarse", clock.NewCoarse(nil)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var s aqm.Time
				for pb.Next() {
					s += bc.c.Now()
				}
				sinkTime = s
			})
		})
	}
}

var sinkTime aqm.Time
