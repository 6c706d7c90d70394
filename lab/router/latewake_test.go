package router

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/queues"
)

// lateWake is one run of the late-wake model: a front and its queue on a
// manual clock, a greedy backlog of four bulk flows kept at 5 ms of
// full-size packets at the rate (what an AQM at a 5 ms target holds; 20
// packets at 50 Mb/s) and a 100-byte probe every 10 ms, with the consumer woken after the sleep
// function's answer for the wait the front names.
type lateWake struct {
	name      string
	aqm       string
	queueRate aqm.Rate // the queue's own rate (CAKE shapes itself)
	fc        front.Config
}

// uniformLate is the first sleep model: the wait plus the blocking
// consumer's 1 ms slack plus, for a share lateP of wake-ups, a lateness
// drawn uniformly from [0, lateMax]: the stall of a router on a busy
// machine.
func uniformLate(lateP float64, lateMax time.Duration) func(*rand.Rand, time.Duration) time.Duration {
	return func(rng *rand.Rand, wait time.Duration) time.Duration {
		d := wait + time.Millisecond
		if rng.Float64() < lateP {
			d += time.Duration(rng.Int64N(int64(lateMax) + 1))
		}
		return d
	}
}

// goRuntimeSleep is how long a Go timer of d takes to fire in a process
// with nothing else to run, on Linux: the runtime sleeps in epoll_wait,
// whose timeout is whole milliseconds (its netpoll turns a delay under
// 1 ms into 1 ms and truncates longer ones), and looks at its timers each
// time it returns, so a 1.2 ms timer fires after two 1 ms waits. Each
// wait overshoots by the kernel's 50 µs timer slack.
func goRuntimeSleep(d time.Duration) time.Duration {
	var slept time.Duration
	for slept < d {
		w := max((d - slept).Truncate(time.Millisecond), time.Millisecond)
		slept += w + 50*time.Microsecond
	}
	return slept
}

// run returns the delivered share of the rate and the probe's sojourn
// percentiles in ms, over span after a 1 s warm-up.
func (v lateWake) run(t *testing.T, rate aqm.Rate, sleep func(*rand.Rand, time.Duration) time.Duration, span time.Duration, seed uint64) (share, p50, p99 float64) {
	t.Helper()
	q, err := queues.New[int](v.aqm, queues.Options{Rate: v.queueRate, LimitPackets: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(1)
	f, err := front.New(q, clk, v.fc)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	const step, warm = 10 * time.Microsecond, time.Second
	end := warm + span
	backlog := int(uint64(rate) / 200 / 12000) // 5 ms of 1500-byte packets
	buf := make([]aqm.Packet[int], front.RunBatch)
	var out uint64
	var sojourn []float64
	var wake, probe time.Duration
	for now := time.Duration(0); now < end; now += step {
		clk.Set(aqm.Time(1 + now))
		for f.Len() < backlog {
			f.Enqueue(aqm.Packet[int]{Payload: -1, Meta: aqm.Meta{Size: 1500, Hash: uint32(1 + rng.IntN(4))}})
		}
		if now >= probe {
			f.Enqueue(aqm.Packet[int]{Payload: int(now), Meta: aqm.Meta{Size: 100, Hash: 999}})
			probe += 10 * time.Millisecond
		}
		if now < wake {
			continue
		}
		var wait time.Duration
		for {
			n, w := f.TryDequeueBatch(buf)
			for _, p := range buf[:n] {
				if now < warm {
					continue
				}
				out += uint64(p.Size)
				if p.Payload >= 0 {
					sojourn = append(sojourn, float64(now-time.Duration(p.Payload))/1e6)
				}
			}
			if wait = w; n < len(buf) {
				break
			}
		}
		wake = now + step
		if wait > 0 {
			wake = now + sleep(rng, wait)
		}
	}
	slices.Sort(sojourn)
	at := func(p float64) float64 { return sojourn[int(p*float64(len(sojourn)-1))] }
	return float64(out) * 8 / (float64(rate) * span.Seconds()), at(0.5), at(0.99)
}

// TestLateWakeCatchUp protects CAKE's catch-up on its own, behind a front
// at rate 0: when the consumer wakes late, CAKE's shaper keeps its lag and
// sends it from the backlog at the next wake-up, so it delivers at least
// the share of the rate of a queue behind the front's token bucket with a
// 2 ms burst (which caps its catch-up) and its probe
// waits no longer; with punctual wake-ups every queue delivers the rate.
// It runs a deterministic model on a manual clock (lateWake), not real
// time.
func TestLateWakeCatchUp(t *testing.T) {
	const rate = 50 * aqm.Mbit
	self := lateWake{"cake, its own shaper, front rate 0", "cake", rate, front.Config{}}
	twoMs := int(rate / 8 / 500) // a 2 ms bucket, the size this comparison is about
	behind := []lateWake{
		{"cake unshaped, front at the rate", "cake", 0, front.Config{Rate: rate, BurstBytes: twoMs}},
		{"fq-codel, front at the rate", "fq-codel", 0, front.Config{Rate: rate, BurstBytes: twoMs}},
	}
	for _, c := range []struct {
		p   float64
		max time.Duration
	}{{0, 0}, {0.05, 3 * time.Millisecond}, {0.05, 10 * time.Millisecond}, {0.2, 10 * time.Millisecond}} {
		s, p50, p99 := self.run(t, rate, uniformLate(c.p, c.max), 4*time.Second, 1)
		t.Logf("%2.0f%% of wake-ups late by up to %v: %-36s share %.3f, probe sojourn p50 %.2f p99 %.2f ms", 100*c.p, c.max, self.name, s, p50, p99)
		if c.p == 0 && s < 0.99 {
			t.Errorf("punctual wake-ups: %s delivers %.3f of the rate, want at least 0.99", self.name, s)
		}
		for _, v := range behind {
			bs, b50, b99 := v.run(t, rate, uniformLate(c.p, c.max), 4*time.Second, 1)
			t.Logf("%2.0f%% of wake-ups late by up to %v: %-36s share %.3f, probe sojourn p50 %.2f p99 %.2f ms", 100*c.p, c.max, v.name, bs, b50, b99)
			if c.p == 0 && bs < 0.99 {
				t.Errorf("punctual wake-ups: %s delivers %.3f of the rate, want at least 0.99", v.name, bs)
			}
			if s < bs-0.005 {
				t.Errorf("%v%% late by up to %v: %s delivers %.3f of the rate, below %s's %.3f", 100*c.p, c.max, self.name, s, v.name, bs)
			}
			if p99 > b99+1 {
				t.Errorf("%v%% late by up to %v: %s probe p99 %.2f ms, over %s's %.2f ms + 1", 100*c.p, c.max, self.name, p99, v.name, b99)
			}
		}
	}
}

// TestBurstCoversRuntimeTimers protects the router's front burst
// (Config.Burst): with Go's millisecond timer rounding, the consumer's
// 1 ms wake slack and a little scheduling jitter (exponential, mean
// 0.1 ms), each direction's front at 50 and 200 Mb/s still delivers the
// rate, as CAKE's own shaper does (the library's default front, now the
// same 5 ms, is logged beside them). It
// runs the deterministic model of lateWake with goRuntimeSleep.
func TestBurstCoversRuntimeTimers(t *testing.T) {
	jittered := func(slack time.Duration) func(*rand.Rand, time.Duration) time.Duration {
		return func(rng *rand.Rand, wait time.Duration) time.Duration {
			return goRuntimeSleep(wait+slack) + time.Duration(rng.ExpFloat64()*float64(100*time.Microsecond))
		}
	}
	for _, rate := range []aqm.Rate{50 * aqm.Mbit, 200 * aqm.Mbit} {
		fc := frontConfig(rate, DefaultBurst)
		f, err := front.New(fifoFor(t), clock.NewManual(1), fc)
		if err != nil {
			t.Fatal(err)
		}
		slack := f.Detail().WakeSlack
		router := lateWake{"fq-codel behind the router's front", "fq-codel", 0, fc}
		s, p50, p99 := router.run(t, rate, jittered(slack), 3*time.Second, 1)
		t.Logf("%v: %s (burst %d bytes, slack %v): share %.3f, probe p50 %.2f p99 %.2f ms", rate, router.name, fc.BurstBytes, slack, s, p50, p99)
		if s < 0.995 {
			t.Errorf("%v: the router's front delivers %.3f of the rate with Go's timers, want at least 0.995", rate, s)
		}
		lib := lateWake{"fq-codel behind the library's default front", "fq-codel", 0, front.Config{Rate: rate}}
		ls, l50, l99 := lib.run(t, rate, jittered(time.Millisecond), 3*time.Second, 1)
		t.Logf("%v: %s: share %.3f, probe p50 %.2f p99 %.2f ms", rate, lib.name, ls, l50, l99)
		cake := lateWake{"cake, its own shaper", "cake", rate, frontConfig(rate, DefaultBurst)}
		cs, c50, c99 := cake.run(t, rate, jittered(time.Millisecond), 3*time.Second, 1)
		t.Logf("%v: %s: share %.3f, probe p50 %.2f p99 %.2f ms", rate, cake.name, cs, c50, c99)
		if cs < 0.995 {
			t.Errorf("%v: CAKE delivers %.3f of the rate with Go's timers, want at least 0.995", rate, cs)
		}
	}
}

// fifoFor is a queue to read a front's effective wake slack from.
func fifoFor(t *testing.T) aqm.Queue[int] {
	q, err := queues.New[int]("fifo", queues.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestFrontConfig protects the bucket each direction's front gets: Burst at
// the rate in bytes (at least the front's smallest burst, at most its
// largest), also for a queue that paces itself, none unshaped, and Burst's
// bounds in Validate.
func TestFrontConfig(t *testing.T) {
	for _, c := range []struct {
		rate  aqm.Rate
		burst time.Duration
		want  front.Config
	}{
		{50 * aqm.Mbit, DefaultBurst, front.Config{Rate: 50 * aqm.Mbit, BurstBytes: 31250}},
		{200 * aqm.Mbit, DefaultBurst, front.Config{Rate: 200 * aqm.Mbit, BurstBytes: 125000}},
		{aqm.Mbit, DefaultBurst, front.Config{Rate: aqm.Mbit, BurstBytes: front.DefaultMinBurstBytes}},
		{400 * aqm.Gbit, MaxBurst, front.Config{Rate: 400 * aqm.Gbit, BurstBytes: front.MaxBurstBytes}},
		{40 * aqm.Gbit, 10 * time.Millisecond, front.Config{Rate: 40 * aqm.Gbit, BurstBytes: 50_000_000}},
		{0, DefaultBurst, front.Config{}},
	} {
		if got := frontConfig(c.rate, c.burst); got != c.want {
			t.Errorf("frontConfig(%v, %v) = %+v, want %+v", c.rate, c.burst, got, c.want)
		}
	}
	for _, b := range []time.Duration{-1, MaxBurst + 1} {
		if err := (Config{Burst: b}).Validate(); err == nil || !strings.Contains(err.Error(), "Burst") {
			t.Errorf("Validate(Burst %v) = %v, want an error naming Burst", b, err)
		}
	}
	if err := (Config{Burst: MaxBurst}).Validate(); err != nil {
		t.Errorf("Validate(Burst %v) = %v", MaxBurst, err)
	}
}
