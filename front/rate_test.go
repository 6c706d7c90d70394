package front_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/front"
)

// step is one row of a step table: at t0+at, either enqueue a packet of
// size bytes, or ask for one packet and expect ok/wait (and the payload if
// ok).
type step struct {
	at      time.Duration
	enqueue uint32   // size to enqueue; 0: take instead
	rate    aqm.Rate // if non-zero, SetRate(rate) before the operation
	ok      bool
	payload uint64
	wait    time.Duration
}

func runSteps(t *testing.T, f *front.Front[uint64], clk *clock.Manual, steps []step) {
	t.Helper()
	t0 := clock.Epoch
	var seq uint64
	buf := make([]aqm.Packet[uint64], 1)
	for i, st := range steps {
		clk.Set(t0.Add(st.at))
		if st.rate != 0 {
			f.SetRate(st.rate)
		}
		if st.enqueue != 0 {
			seq++
			require.True(t, enq(t, f, pkt(seq, st.enqueue)).Accepted(), "step %d", i)
			continue
		}
		n, wait := f.TryDequeueBatch(buf)
		require.Equal(t, st.ok, n == 1, "step %d: ok", i)
		require.Equal(t, st.wait, wait, "step %d: wait", i)
		if n == 1 {
			require.Equal(t, st.payload, buf[0].Payload, "step %d: payload", i)
		}
	}
}

// TestRateSteps protects the token bucket's timing at fixed instants. At
// 8 Mbit/s a byte takes exactly 1 µs, so a 1000-byte packet takes 1 ms. The
// bucket (3000 bytes) starts full; a packet may leave while the credit is
// ≥ 0, so four packets leave at once (3000 − 4×1000 = −1000 bytes of debt),
// then one per millisecond.
func TestRateSteps(t *testing.T) {
	clk := clock.NewManual(0)
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 100}, nil), clk, front.Config{Rate: 8 * aqm.Mbit, BurstBytes: 3000})
	const ms = time.Millisecond
	var steps []step
	for range 6 {
		steps = append(steps, step{at: 0, enqueue: 1000})
	}
	steps = append(steps,
		step{at: 0, ok: true, payload: 1},                              // credit 3000 → 2000
		step{at: 0, ok: true, payload: 2},                              // → 1000
		step{at: 0, ok: true, payload: 3},                              // → 0
		step{at: 0, ok: true, payload: 4},                              // 0 is not debt → −1000
		step{at: 0, ok: false, wait: ms},                               // 1000 bytes to repay at 1 B/µs
		step{at: 400 * time.Microsecond, wait: 600 * time.Microsecond}, // 400 repaid
		step{at: ms, ok: true, payload: 5},                             // 0 → −1000
		step{at: ms + 1, wait: ms - 1},                                 // 1 ns earns 1e-3 byte
		step{at: 2 * ms, ok: true, payload: 6},                         // 0 → −1000
		step{at: 3 * ms, ok: false, wait: 0},                           // credit 0, queue empty: idle
		step{at: 100 * ms, enqueue: 500},                               // bucket refilled to 3000 meanwhile
		step{at: 100 * ms, ok: true, payload: 7},                       // → 2500
		step{at: 100 * ms, ok: false, wait: 0},
	)
	runSteps(t, f, clk, steps)
}

// TestSetRateSettlesCredit protects rate changes: credit earned before the
// change is settled at the old rate, and the remaining debt is repaid at the
// new rate.
func TestSetRateSettlesCredit(t *testing.T) {
	clk := clock.NewManual(0)
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 100}, nil), clk, front.Config{Rate: 8 * aqm.Mbit, BurstBytes: 1})
	const ms = time.Millisecond
	runSteps(t, f, clk, []step{
		{at: 0, enqueue: 1000}, {at: 0, enqueue: 1000}, {at: 0, enqueue: 1000},
		{at: 0, ok: true, payload: 1}, // credit 1 → −999 bytes
		{at: 0, wait: 999 * time.Microsecond},
		// At 0.5 ms, 500 bytes were earned at 1 B/µs (debt 499); the rate
		// doubles to 2 B/µs, so the rest takes 249.5 µs.
		{at: ms / 2, rate: 16 * aqm.Mbit, wait: 249500 * time.Nanosecond},
		{at: ms/2 + 249500*time.Nanosecond, ok: true, payload: 2}, // debt −1000
		// The rate drops to 1 Mbit/s = 0.125 B/µs: 1000 bytes take 8 ms.
		{at: ms/2 + 249500*time.Nanosecond, rate: aqm.Mbit, wait: 8 * ms},
	})
}

// TestUnlimited protects rate zero: every queued packet leaves at once and
// the bucket never throttles.
func TestUnlimited(t *testing.T) {
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 100}, nil), clock.NewManual(0), front.Config{})
	for i := range 50 {
		require.True(t, enq(t, f, pkt(uint64(i), 1<<30)).Accepted())
	}
	buf := make([]aqm.Packet[uint64], 64)
	n, wait := f.TryDequeueBatch(buf)
	require.Equal(t, 50, n)
	require.Zero(t, wait)
	for i := range n {
		require.Equal(t, uint64(i), buf[i].Payload)
	}
}

// drain runs the non-blocking consumer on a backlogged queue from t0 to
// t0+d with the clock advanced by steps from next, and returns the bytes
// released. The queue is refilled so it never runs empty.
func drain(t *testing.T, f *front.Front[uint64], clk *clock.Manual, d time.Duration, size func() uint32, next func() time.Duration, rateAt func(time.Duration) aqm.Rate) (bytes uint64) {
	t.Helper()
	t0 := clk.Now()
	end := t0.Add(d)
	buf := make([]aqm.Packet[uint64], 16)
	for now := t0; now < end; now = clk.Advance(next()) {
		if rateAt != nil {
			f.SetRate(rateAt(now.Sub(t0)))
		}
		for {
			for f.Len() < 64 {
				require.True(t, enq(t, f, pkt(0, size())).Accepted())
			}
			n, wait := f.TryDequeueBatch(buf)
			for _, p := range buf[:n] {
				bytes += uint64(p.Size)
			}
			if n < len(buf) {
				require.Positive(t, wait, "a backlogged queue waits for credit, never idles")
				break
			}
		}
	}
	return bytes
}

// TestLongRunRateVirtual protects the long-run rate (within 1% in virtual
// time) with a clock that only moves in 1 ms steps, or in irregular steps up
// to the burst time, with random packet sizes, at rates from 64 kbit/s to
// 1 Gbit/s. After a 100 ms warm-up that spends the initial burst, the bytes
// released in a window of at least 1 s and 200 packets are
// rate × window / 8, give or take one packet and the credit's swing; from
// the start, they never exceed that plus the burst and one packet.
func TestLongRunRateVirtual(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	rates := []aqm.Rate{64 * aqm.Kbit, aqm.Mbit, 8 * aqm.Mbit, 100 * aqm.Mbit, aqm.Gbit}
	if testing.Short() {
		rates = []aqm.Rate{64 * aqm.Kbit, 8 * aqm.Mbit, aqm.Gbit}
	}
	for _, rate := range rates {
		d := max(time.Second, time.Duration(200*1500*8*float64(time.Second)/float64(rate)))
		for _, mode := range []string{"1ms-steps", "jittered-steps"} {
			clk := clock.NewManual(0)
			f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 1000}, nil), clk, front.Config{Rate: rate})
			burst := f.Detail().BurstBytes
			next := func() time.Duration { return time.Millisecond }
			if mode == "jittered-steps" {
				// Uniform in [0, 2 ms]: never later than the burst time.
				next = func() time.Duration { return time.Duration(rng.Int64N(int64(2 * time.Millisecond))) }
			}
			size := func() uint32 { return 64 + uint32(rng.IntN(1500-64+1)) }
			warm := drain(t, f, clk, 100*time.Millisecond, size, next, nil)
			require.LessOrEqual(t, float64(warm), float64(rate)/8/10+float64(burst)+1500, "rate %v %s: never above rate·t + burst + one packet", rate, mode)
			got := drain(t, f, clk, d, size, next, nil)
			want := float64(rate) / 8 * d.Seconds()
			require.InEpsilon(t, want, float64(got), 0.01, "rate %v %s", rate, mode)
		}
	}
}

// TestLongRunRateChanging protects runtime rate changes: with the rate
// changed every 50 ms (as an LTE or Starlink rate controller does), the
// bytes released follow the integral of the rate within 1%.
func TestLongRunRateChanging(t *testing.T) {
	clk := clock.NewManual(0)
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 1000}, nil), clk, front.Config{Rate: aqm.Mbit, BurstBytes: 20000})
	rates := []aqm.Rate{5 * aqm.Mbit, 20 * aqm.Mbit, aqm.Mbit, 50 * aqm.Mbit, 10 * aqm.Mbit}
	rateAt := func(el time.Duration) aqm.Rate { return rates[int(el/(50*time.Millisecond))%len(rates)] }
	const d = 10 * time.Second
	got := drain(t, f, clk, d, func() uint32 { return 1200 }, func() time.Duration { return time.Millisecond }, rateAt)
	var sum aqm.Rate // the rate cycles every 250 ms; 10 s is 40 whole cycles
	for _, r := range rates {
		sum += r
	}
	want := float64(sum) * 0.05 * 40 / 8
	require.InEpsilon(t, want, float64(got), 0.01)
}

// TestBackwardTime protects time going backwards: it earns no credit, the
// wait never becomes negative, and credit counts again from the earlier
// reading (the bucket's last refill is re-anchored to it).
func TestBackwardTime(t *testing.T) {
	clk := clock.NewManual(clock.Epoch.Add(time.Hour))
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 10}, nil), clk, front.Config{Rate: 8 * aqm.Mbit, BurstBytes: 1})
	now := clk.Now()
	for range 3 {
		enq(t, f, pkt(0, 1000))
	}
	buf := make([]aqm.Packet[uint64], 1)
	n, _ := f.TryDequeueBatch(buf)
	require.Equal(t, 1, n)
	back := now - aqm.Time(time.Minute)
	clk.Set(back)
	n, wait := f.TryDequeueBatch(buf)
	require.Zero(t, n)
	require.Equal(t, 999*time.Microsecond, wait, "no credit earned going backwards")
	clk.Set(back.Add(998 * time.Microsecond))
	n, wait = f.TryDequeueBatch(buf)
	require.Zero(t, n)
	require.Equal(t, time.Microsecond, wait, "credit counts from the re-anchored reading")
	clk.Set(back.Add(999 * time.Microsecond))
	n, wait = f.TryDequeueBatch(buf)
	require.Equal(t, 1, n)
	require.Zero(t, wait)
}

// TestFarFutureGlitch protects the time policy: after one reading far in
// the future, a shaped front at normal time releases a backlog at its rate
// again at once (before re-anchoring, its bucket earned nothing until the
// clock caught up with the glitch: 0 bytes in the second below).
func TestFarFutureGlitch(t *testing.T) {
	clk := clock.NewManual(0)
	f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 1000}, nil), clk, front.Config{Rate: 8 * aqm.Mbit})
	size := func() uint32 { return 1000 }
	next := func() time.Duration { return time.Millisecond }
	drain(t, f, clk, 100*time.Millisecond, size, next, nil)
	normal := clk.Now()
	clk.Set(normal.Add(1 << 62))
	buf := make([]aqm.Packet[uint64], 64)
	f.TryDequeueBatch(buf) // the glitch: one reading 146 years ahead
	clk.Set(normal.Add(time.Millisecond))
	got := drain(t, f, clk, time.Second, size, next, nil)
	require.InEpsilon(t, 1e6, float64(got), 0.01, "8 Mbit/s for 1 s is 1 MB")
}

// TestRunRateVirtual protects Run's timing in virtual time (testing/synctest,
// where timers fire exactly): with a producer keeping the queue backlogged,
// Run releases rate × duration / 8 bytes within 1%, never more than that
// plus the burst and one packet, and sleeps between departures instead of
// spinning, on a front and on a staged front. synctest also fails the test if Run or the producer leaks a
// goroutine.
func TestRunRateVirtual(t *testing.T) {
	for _, staged := range []bool{false, true} {
		t.Run(fmt.Sprint("staged=", staged), func(t *testing.T) { testRunRateVirtual(t, staged) })
	}
}

func testRunRateVirtual(t *testing.T, staged bool) {
	synctest.Test(t, func(t *testing.T) {
		const rate, d = 10 * aqm.Mbit, 10 * time.Second
		clk := bubbleClock()
		f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 1000}, nil), clk, front.Config{Rate: rate, Staged: staged})
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		var producer sync.WaitGroup
		defer producer.Wait()
		producer.Go(func() { // tops the queue up every millisecond
			for ctx.Err() == nil {
				for f.Len() < 100 {
					enq(t, f, pkt(0, 1250))
				}
				time.Sleep(time.Millisecond)
			}
		})
		var bytes uint64
		var last aqm.Time
		err := f.Run(ctx, func(ps []aqm.Packet[uint64]) {
			now := clk.Now()
			require.GreaterOrEqual(t, now, last, "sends are in time order")
			last = now
			for _, p := range ps {
				bytes += uint64(p.Size)
			}
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		want := float64(rate) / 8 * d.Seconds()
		require.InEpsilon(t, want, float64(bytes), 0.01)
		require.LessOrEqual(t, float64(bytes), want+float64(f.Detail().BurstBytes)+1250)
		// 1250 B at 10 Mbit/s is one packet per ms. Run takes what is due
		// at each wake-up, then looks once more to learn the wait and
		// sleeps: two looks per packet here, never a spin.
		require.Less(t, f.Detail().Wakeups, uint64(2*d/time.Millisecond)+10)
	})
}

// TestRunWakesOnRateChangeAndArrival protects the consumer's sleeping: a rate
// raised from another goroutine cuts a long wait short, and an arrival into
// an empty queue is sent at once, with no polling in between.
func TestRunWakesOnRateChangeAndArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := bubbleClock()
		// 1 kbit/s and a 1-byte burst: after the first 1000-byte packet the
		// next may leave only 8 s later.
		f := newFront(t, newFIFO(t, fifo.Config{LimitPackets: 10}, nil), clk, front.Config{Rate: aqm.Kbit, BurstBytes: 1})
		ctx, cancel := context.WithCancel(t.Context())
		sent := make(chan aqm.Time, 10)
		var runErr error
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		// Both packets are queued before Run starts, so that the count of
		// looks below does not depend on how the arrivals race the first
		// looks.
		t0 := clk.Now()
		enq(t, f, pkt(1, 1000))
		enq(t, f, pkt(2, 1000))
		wg.Go(func() {
			runErr = f.Run(ctx, func(ps []aqm.Packet[uint64]) {
				for range ps {
					sent <- clk.Now()
				}
			})
		})
		require.Equal(t, t0, <-sent, "the first packet leaves at once")
		time.Sleep(10 * time.Millisecond)
		// 10 ms at 1 kbit/s earned 10 bits, leaving a debt of 999×8 − 10 =
		// 7982 bits; at 8 Gbit/s (8 bits per ns) that is 997.75 ns, so the
		// second packet leaves 998 ns after the change.
		f.SetRate(8 * aqm.Gbit)
		require.Equal(t, t0.Add(10*time.Millisecond+998), <-sent)
		synctest.Wait() // Run is idle now
		require.Equal(t, 0, f.Len())
		time.Sleep(5 * time.Second)
		enq(t, f, pkt(3, 1))
		require.Equal(t, t0.Add(10*time.Millisecond+998+5*time.Second), <-sent, "an arrival wakes an idle Run")
		// Looks: one takes packet 1, one finds the 8 s wait, one after the
		// rate change finds the 998 ns wait, one takes packet 2, one finds
		// the queue empty, one takes packet 3, and perhaps one more has
		// found the queue empty again: 7 at most.
		require.LessOrEqual(t, f.Detail().Wakeups, uint64(7), "no polling while idle or throttled")
		cancel()
		wg.Wait()
		require.ErrorIs(t, runErr, context.Canceled)
	})
}
