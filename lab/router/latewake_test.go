package router

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/queues"
)

// lateWake is one run of the late-wake model: a front and its queue on a
// manual clock, a greedy backlog of four bulk flows kept at 20 full-size
// packets (about what an AQM at a 5 ms target holds at 50 Mb/s) and a
// 100-byte probe every 10 ms, with the consumer woken at the departure
// the front names plus the blocking consumer's 1 ms slack plus, for a
// share lateP of wake-ups, a lateness drawn uniformly from [0, lateMax]:
// the stall of a router on a busy machine.
type lateWake struct {
	name      string
	aqm       string
	queueRate aqm.Rate // the queue's own rate (CAKE shapes itself)
	frontRate aqm.Rate
}

// run returns the delivered share of the rate and the probe's sojourn
// percentiles in ms, over span after a 1 s warm-up.
func (v lateWake) run(t *testing.T, rate aqm.Rate, lateP float64, lateMax, span time.Duration, seed uint64) (share, p50, p99 float64) {
	t.Helper()
	q, err := queues.New[int](v.aqm, queues.Options{Rate: v.queueRate, LimitPackets: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(1)
	f, err := front.New(q, clk, front.Config{Rate: v.frontRate})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	const step, warm, slack = 20 * time.Microsecond, time.Second, time.Millisecond
	end := warm + span
	buf := make([]aqm.Packet[int], front.RunBatch)
	var out uint64
	var sojourn []float64
	var wake, probe time.Duration
	for now := time.Duration(0); now < end; now += step {
		clk.Set(aqm.Time(1 + now))
		for f.Len() < 20 {
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
			wake = now + wait + slack
			if rng.Float64() < lateP {
				wake += time.Duration(rng.Int64N(int64(lateMax) + 1))
			}
		}
	}
	slices.Sort(sojourn)
	at := func(p float64) float64 { return sojourn[int(p*float64(len(sojourn)-1))] }
	return float64(out) * 8 / (float64(rate) * span.Seconds()), at(0.5), at(0.99)
}

// TestLateWakeCatchUp protects the router's choice to let CAKE shape
// itself behind a front at rate 0: when the consumer wakes late, CAKE's
// shaper keeps its lag and sends it from the backlog at the next wake-up,
// so it delivers at least the share of the rate of a queue behind the
// front's token bucket (whose catch-up the 2 ms burst caps) and its probe
// waits no longer; with punctual wake-ups every queue delivers the rate.
// It runs a deterministic model on a manual clock (lateWake), not real
// time.
func TestLateWakeCatchUp(t *testing.T) {
	const rate = 50 * aqm.Mbit
	self := lateWake{"cake, its own shaper, front rate 0", "cake", rate, 0}
	behind := []lateWake{
		{"cake unshaped, front at the rate", "cake", 0, rate},
		{"fq-codel, front at the rate", "fq-codel", 0, rate},
	}
	for _, c := range []struct {
		p   float64
		max time.Duration
	}{{0, 0}, {0.05, 3 * time.Millisecond}, {0.05, 10 * time.Millisecond}, {0.2, 10 * time.Millisecond}} {
		s, p50, p99 := self.run(t, rate, c.p, c.max, 4*time.Second, 1)
		t.Logf("%2.0f%% of wake-ups late by up to %v: %-36s share %.3f, probe sojourn p50 %.2f p99 %.2f ms", 100*c.p, c.max, self.name, s, p50, p99)
		if c.p == 0 && s < 0.99 {
			t.Errorf("punctual wake-ups: %s delivers %.3f of the rate, want at least 0.99", self.name, s)
		}
		for _, v := range behind {
			bs, b50, b99 := v.run(t, rate, c.p, c.max, 4*time.Second, 1)
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
