package red

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const t0 = aqm.Time(time.Second)

// at returns the instant t0+d.
func at(d time.Duration) aqm.Time { return t0 + aqm.Time(d) }

// step is one row of a step table: an operation at a fixed instant and
// what must follow.
type step struct {
	at   aqm.Time
	op   byte // 'e' enqueue, 'd' dequeue
	size uint32
	ecn  aqm.ECN
	want aqm.Verdict // for 'e'
	avg  float64     // average after the step; NaN: not checked
}

func runSteps(t *testing.T, q *Queue[int], steps []step) {
	t.Helper()
	for i, s := range steps {
		switch s.op {
		case 'e':
			v := q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: s.size, ECN: s.ecn}}, s.at)
			require.Equalf(t, s.want, v, "step %d: verdict", i)
		case 'd':
			_, ok := q.Dequeue(s.at)
			require.Truef(t, ok, "step %d: dequeue", i)
		}
		if !math.IsNaN(s.avg) {
			require.InDeltaf(t, s.avg, q.Detail().Avg, 1e-12, "step %d: average", i)
		}
	}
}

var nan = math.NaN()

// filled returns the effective configuration of c, every default filled
// in, as Queue.Config reports it (without drawing a seed). It panics if c
// is invalid.
func filled(c Config) Config {
	eff, _, err := c.derive()
	if err != nil {
		panic(err)
	}
	return eff
}

// TestValidateNamesEveryField protects the error contract: every bad field
// is named in one joined error that wraps aqm.ErrInvalidConfig.
func TestValidateNamesEveryField(t *testing.T) {
	c := Config{MinThreshold: -1, MaxThreshold: -2, MaxP: 2, Weight: -0.1, LimitPackets: -5, LimitBytes: -1,
		LinkRate: maxLinkRate + 1, MeanPacketBytes: -1, TargetDelay: -1, AdaptInterval: -1}
	before := c
	err := c.Validate()
	require.Equal(t, before, c, "Validate must not change its receiver")
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, f := range []string{"MinThreshold", "MaxThreshold", "MaxP", "Weight", "LimitPackets", "LimitBytes",
		"LinkRate", "MeanPacketBytes", "TargetDelay", "AdaptInterval"} {
		assert.Contains(t, err.Error(), "red: "+f+" (", f)
	}
	// A bad field does not hide a broken relation between good ones.
	err = Config{MinThreshold: 10, MaxThreshold: 5, MaxP: 2, Weight: 3}.Validate()
	for _, f := range []string{"MaxThreshold", "MaxP", "Weight"} {
		assert.Contains(t, err.Error(), "red: "+f+" (", f)
	}
	err = Config{ByteMode: true, MinThreshold: 1000, MaxThreshold: 3000, LimitBytes: 2000, TargetDelay: -1}.Validate()
	for _, f := range []string{"LimitBytes", "TargetDelay"} {
		assert.Contains(t, err.Error(), "red: "+f+" (", f)
	}
	err = Config{MinThreshold: 10, MaxThreshold: 30, LimitPackets: 20, AdaptInterval: -1}.Validate()
	for _, f := range []string{"LimitPackets", "AdaptInterval"} {
		assert.Contains(t, err.Error(), "red: "+f+" (", f)
	}
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))

	bad := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"min≥max", Config{MinThreshold: 10, MaxThreshold: 5}, "MaxThreshold"},
		{"min=max", Config{MinThreshold: 10, MaxThreshold: 10}, "MaxThreshold"},
		{"max too small to derive min", Config{MaxThreshold: 2}, "MaxThreshold"},
		{"limit below max", Config{MinThreshold: 10, MaxThreshold: 30, LimitPackets: 20}, "LimitPackets"},
		{"byte limit below max", Config{ByteMode: true, MinThreshold: 1000, MaxThreshold: 3000, LimitBytes: 2000}, "LimitBytes"},
		{"NaN weight", Config{Weight: math.NaN()}, "Weight"},
		{"NaN max_p", Config{MaxP: math.NaN()}, "MaxP"},
		{"adaptive max_p above 0.5", Config{Adaptive: true, MaxP: 0.9}, "MaxP"},
		{"adaptive max_p below 0.01", Config{Adaptive: true, MaxP: 0.001}, "MaxP"},
		{"weight above 1", Config{Weight: 1.5}, "Weight"},
		{"limit too large", Config{LimitPackets: 1<<24 + 1}, "LimitPackets"},
		{"interval below 1ms", Config{AdaptInterval: time.Microsecond}, "AdaptInterval"},
		{"rate above the maximum", Config{LinkRate: maxLinkRate + 1}, "LinkRate"},
		{"derived limit too large", Config{MinThreshold: 100_000, MaxThreshold: 200_000}, "LimitPackets"},
		{"derived limit from the rate", Config{LinkRate: 10 * aqm.Tbit}, "LimitPackets"},
	}
	for _, b := range bad {
		err := b.cfg.Validate()
		require.ErrorIs(t, err, aqm.ErrInvalidConfig, b.name)
		require.Contains(t, err.Error(), "red: "+b.field+" (", b.name)
		_, err = New[int](b.cfg, nil)
		require.Error(t, err, b.name)
	}
}

// TestDefaults protects the documented defaults, derived here by hand:
// at 100 Mbit/s and 1000-byte packets C = 12500 packets/s, so min_th =
// round(0.005·12500/2) = 31, max_th = 93, w_q = 1 − e^(−1/12500).
func TestDefaults(t *testing.T) {
	c := filled(Config{})
	assert.Equal(t, 31, c.MinThreshold)
	assert.Equal(t, 93, c.MaxThreshold)
	assert.InDelta(t, 1-math.Exp(-1.0/12500), c.Weight, 1e-15)
	assert.Equal(t, 0.02, c.MaxP)
	assert.Equal(t, 1000, c.LimitPackets) // max(1000, 2·93)
	assert.Zero(t, c.LimitBytes)
	assert.Equal(t, 5*time.Millisecond, c.TargetDelay)
	assert.Equal(t, 500*time.Millisecond, c.AdaptInterval)

	b := filled(Config{ByteMode: true})
	assert.Equal(t, 31_000, b.MinThreshold)
	assert.Equal(t, 93_000, b.MaxThreshold)
	assert.EqualValues(t, 186_000, b.LimitBytes)
	assert.Equal(t, 2907, b.LimitPackets) // ⌈186000/64⌉

	// 1 Mbit/s: C = 125, 0.005·125/2 = 0.3 packets, so the floor of 5 applies.
	s := filled(Config{LinkRate: 1_000_000})
	assert.Equal(t, 5, s.MinThreshold)
	assert.Equal(t, 15, s.MaxThreshold)

	// One threshold given: the other follows the 3× rule.
	m := filled(Config{MinThreshold: 7})
	assert.Equal(t, 21, m.MaxThreshold)
	x := filled(Config{MaxThreshold: 30})
	assert.Equal(t, 10, x.MinThreshold)
}

// TestStepsAverageAndIdleDecay protects the EWMA and the closed-form idle
// decay at fixed instants. w_q = 0.5 and s = 8·1000/8e6 = 1 ms, so an idle
// time of k ms multiplies the average by 0.5^k.
func TestStepsAverageAndIdleDecay(t *testing.T) {
	q, err := New[int](Config{MinThreshold: 10, MaxThreshold: 30, Weight: 0.5, LinkRate: 8_000_000}, nil)
	require.NoError(t, err)
	runSteps(t, q, []step{
		{at: at(0), op: 'e', size: 1000, want: aqm.Enqueued, avg: 0},                // empty queue, nothing to decay
		{at: at(0), op: 'e', size: 1000, want: aqm.Enqueued, avg: 0.5},              // 0 + 0.5·(1−0)
		{at: at(0), op: 'e', size: 1000, want: aqm.Enqueued, avg: 1.25},             // 0.5 + 0.5·(2−0.5)
		{at: at(0), op: 'e', size: 1000, want: aqm.Enqueued, avg: 2.125},            // 1.25 + 0.5·(3−1.25)
		{at: at(time.Millisecond), op: 'd', avg: 2.125},                             // dequeues do not move the average
		{at: at(time.Millisecond), op: 'd', avg: nan},                               //
		{at: at(time.Millisecond), op: 'd', avg: nan},                               //
		{at: at(time.Millisecond), op: 'd', avg: 2.125},                             // empty from 1 ms
		{at: at(4 * time.Millisecond), op: 'e', want: aqm.Enqueued, avg: 2.125 / 8}, // 3 ms idle: ·0.5^3
		{at: at(4 * time.Millisecond), op: 'd', avg: 0.265625},                      // empty from 4 ms
		{at: at(4*time.Millisecond + 500*time.Microsecond), op: 'e', want: aqm.Enqueued,
			avg: 0.265625 * math.Sqrt(0.5)}, // half a packet time: ·0.5^0.5
		{at: at(5 * time.Millisecond), op: 'd', avg: 0.265625 * math.Sqrt(0.5)},
		// Time going backwards decays nothing.
		{at: at(time.Millisecond), op: 'e', want: aqm.Enqueued, avg: 0.265625 * math.Sqrt(0.5)},
		{at: at(time.Millisecond), op: 'd', avg: nan},
		// The largest jump decays to zero, without overflow.
		{at: math.MaxInt64, op: 'e', want: aqm.Enqueued, avg: 0},
	})
}

// TestIdleRefusedArrivalDoesNotDecayTwice protects the idle bookkeeping: an
// arrival refused at an empty queue decays the average up to its own time,
// and the next arrival decays only from there.
func TestIdleRefusedArrivalDoesNotDecayTwice(t *testing.T) {
	q, err := New[int](Config{MinThreshold: 10, MaxThreshold: 30, Weight: 0.5, LinkRate: 8_000_000,
		LimitBytes: 1000}, nil)
	require.NoError(t, err)
	runSteps(t, q, []step{
		{at: at(0), op: 'e', size: 1000, want: aqm.Enqueued, avg: 0},
		{at: at(0), op: 'd', avg: 0},
	})
	q.avg = 4 // white-box: a known average at idle start t0
	runSteps(t, q, []step{
		{at: at(time.Millisecond), op: 'e', size: 1000, want: aqm.Enqueued, avg: 2}, // ·0.5
		{at: at(time.Millisecond), op: 'd', avg: 2},
		// The idle period restarts at the dequeue at 1 ms.
		{at: at(2 * time.Millisecond), op: 'e', size: 0, want: aqm.Enqueued, avg: 1},
		{at: at(2 * time.Millisecond), op: 'd', avg: 1},
		{at: at(3 * time.Millisecond), op: 'e', size: 1000, want: aqm.Enqueued, avg: 0.5},
	})
	// A RED refusal at an empty queue: the forced region with avg pinned.
	r, err := New[int](Config{MinThreshold: 2, MaxThreshold: 4, Weight: 0.5, LinkRate: 8_000_000,
		DisableECN: true}, nil)
	require.NoError(t, err)
	r.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, at(0))
	r.Dequeue(at(0))
	r.avg = 64
	runSteps(t, r, []step{
		{at: at(time.Millisecond), op: 'e', size: 1000, want: aqm.DroppedEarly, avg: 32},     // ·0.5, still ≥ max_th
		{at: at(2 * time.Millisecond), op: 'e', size: 1000, want: aqm.DroppedEarly, avg: 16}, // ·0.5 from 1 ms, not ·0.25
		{at: at(2 * time.Millisecond), op: 'e', size: 1000, want: aqm.DroppedEarly, avg: 16}, // no time, no decay
		{at: at(6 * time.Millisecond), op: 'e', size: 1000, want: aqm.Enqueued, avg: 1},      // ·0.5^4, below min_th
	})
}

// pinned returns a queue configured by c whose next arrivals see the
// average at level packets: it is filled under huge thresholds and then
// reconfigured, with w_q = 1 so the average is the instantaneous queue.
func pinned(t *testing.T, c Config, level int) *Queue[int] {
	t.Helper()
	c.Weight = 1
	c.LimitPackets = 1000
	q, err := New[int](Config{MinThreshold: 400, MaxThreshold: 900, LimitPackets: 1000, Seed: c.Seed}, nil)
	require.NoError(t, err)
	for range level {
		require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, t0))
	}
	require.NoError(t, q.Reconfigure(c))
	return q
}

// hold offers one packet at now and dequeues back to level packets.
func hold(q *Queue[int], level int, ecn aqm.ECN, now aqm.Time) (aqm.Verdict, aqm.ECN) {
	v := q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000, ECN: ecn}}, now)
	var last aqm.Packet[int]
	for q.Len() > level {
		last, _ = q.Dequeue(now)
	}
	if q.Len() == level && v.Accepted() {
		// the packet just offered is at the tail; drain a copy of its ECN
		last = *q.ring.Back()
	}
	return v, last.ECN
}

// TestECNVerdicts protects the mark/drop choice for every codepoint in the
// probabilistic and forced regions under each ECN option. Gentle with
// max_p = 1 makes p_b = 1 in the whole ramp, so after the first arrival in
// it (which only draws R) every arrival is signalled, deterministically.
func TestECNVerdicts(t *testing.T) {
	type opts struct{ disableECN, disableHard bool }
	for _, o := range []opts{{false, false}, {false, true}, {true, false}, {true, true}} {
		for _, ecn := range []aqm.ECN{aqm.NotECT, aqm.ECT0, aqm.ECT1, aqm.CE, aqm.ECN(0b110)} {
			masked := ecn & aqm.ECNMask
			capable := masked != aqm.NotECT
			c := Config{MinThreshold: 2, MaxThreshold: 4, MaxP: 1, Gentle: true,
				DisableECN: o.disableECN, DisableHardDrop: o.disableHard}
			// Probabilistic (gentle ramp, avg 5).
			q := pinned(t, c, 5)
			v, _ := hold(q, 5, ecn, t0) // enters the band: draws R only
			require.Equal(t, aqm.Enqueued, v)
			for range 3 {
				v, got := hold(q, 5, ecn, t0)
				want, wantECN := aqm.DroppedEarly, masked
				if capable && !o.disableECN {
					want, wantECN = aqm.Marked, aqm.CE
				}
				require.Equal(t, want, v, "prob %+v ecn %v", o, ecn)
				if v.Accepted() {
					require.Equal(t, wantECN, got)
				}
			}
			// Forced (avg 8 = 2·max_th).
			q = pinned(t, c, 8)
			v, got := hold(q, 8, ecn, t0)
			want := aqm.DroppedEarly
			switch {
			case capable && !o.disableECN && o.disableHard:
				want = aqm.Marked
			case capable && !o.disableECN:
				want = aqm.DroppedOverload
			}
			require.Equal(t, want, v, "forced %+v ecn %v", o, ecn)
			if v == aqm.Marked {
				require.Equal(t, aqm.CE, got)
			}
			s := q.Stats()
			require.Equal(t, s.Enqueued.Packets, s.Dequeued.Packets+uint64(s.Len))
		}
	}
	// Below min_th, ECN-capable packets keep their codepoint.
	q := pinned(t, Config{MinThreshold: 2, MaxThreshold: 4}, 0)
	for _, e := range []aqm.ECN{aqm.ECT1, aqm.ECT0, aqm.NotECT} {
		require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{ECN: e}}, t0))
		p, ok := q.Dequeue(t0)
		require.True(t, ok)
		require.Equal(t, e, p.ECN)
	}
}

// TestForcedWithoutGentle protects plain RED's forced region: at and above
// max_th every arrival is signalled; the first arrival below it again only
// draws R.
func TestForcedWithoutGentle(t *testing.T) {
	q := pinned(t, Config{MinThreshold: 2, MaxThreshold: 4, MaxP: 0.5, DisableECN: true}, 4)
	for range 10 {
		v, _ := hold(q, 4, aqm.ECT0, t0)
		require.Equal(t, aqm.DroppedEarly, v)
	}
	d := q.Detail()
	require.EqualValues(t, 10, d.DroppedForced)
	require.Equal(t, int64(-1), d.Count)
	require.Equal(t, 1.0, d.Prob)
	q.Dequeue(t0)
	v, _ := hold(q, 3, aqm.NotECT, t0) // avg 3: p_b = 0.25, count −1 → 0: no signal
	require.Equal(t, aqm.Enqueued, v)
	require.Equal(t, int64(0), q.Detail().Count)
	require.InDelta(t, 0.25, q.Detail().Prob, 1e-9)
}

// TestBandSignalFollowsRandomStream protects the count test against the
// random stream itself: with p_b = 0.5 at count 1 the arrival is signalled
// exactly when R = (u+1)/2^32 ≤ 0.5 for the first draw u of the seed.
func TestBandSignalFollowsRandomStream(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ { // non-zero: a zero Seed draws a random one
		src := rng.New(seed)
		r1 := (float64(src.Uint32()) + 1) / (1 << 32)
		q := pinned(t, Config{MinThreshold: 2, MaxThreshold: 4, MaxP: 1, DisableECN: true, Seed: seed}, 2)
		v, _ := hold(q, 2, aqm.NotECT, t0) // avg 2 = min_th: enters the band, p_b = 0
		require.Equal(t, aqm.Enqueued, v)
		q.Dequeue(t0)
		q.Dequeue(t0)
		for q.Len() < 3 {
			q.ring.PushBack(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}) // white-box: queue of 3 without an arrival
			q.backlog += 1000
			q.segs++
		}
		v, _ = hold(q, 3, aqm.NotECT, t0) // avg 3: p_b = 0.5, count 1
		want := aqm.Enqueued
		if 0.5 >= r1 {
			want = aqm.DroppedEarly
		}
		require.Equal(t, want, v, "seed %d r1 %v", seed, r1)
	}
}

// TestLimits protects the hard limits: packet and byte limits refuse what
// RED would accept, an oversized packet is refused, and the counters add up.
func TestLimits(t *testing.T) {
	q, err := New[int](Config{MinThreshold: 100, MaxThreshold: 300, LimitPackets: 300, LimitBytes: 3000}, nil)
	require.NoError(t, err)
	runSteps(t, q, []step{
		{at: at(0), op: 'e', size: 1000, want: aqm.Enqueued, avg: nan},
		{at: at(0), op: 'e', size: 3001, want: aqm.DroppedOverlimit, avg: nan}, // larger than LimitBytes
		{at: at(0), op: 'e', size: 1000, want: aqm.Enqueued, avg: nan},
		{at: at(0), op: 'e', size: 1000, want: aqm.Enqueued, avg: nan},
		{at: at(0), op: 'e', size: 1, want: aqm.DroppedOverlimit, avg: nan}, // 3001 > 3000
		{at: at(0), op: 'e', size: 0, want: aqm.Enqueued, avg: nan},         // fits
	})
	s := q.Stats()
	require.EqualValues(t, 4, s.Enqueued.Packets)
	require.EqualValues(t, 2, s.DroppedOverlimit.Packets)
	require.EqualValues(t, 3001+1, s.DroppedOverlimit.Bytes)
	require.Equal(t, 3000, s.Backlog)
	require.EqualValues(t, 3001, s.MaxSize)

	p, err := New[int](Config{MinThreshold: 100, MaxThreshold: 300, LimitPackets: 300}, nil)
	require.NoError(t, err)
	for range 300 {
		require.Equal(t, aqm.Enqueued, p.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1}}, t0))
		p.avg = 0 // white-box: keep RED out of the way
	}
	require.Equal(t, aqm.DroppedOverlimit, p.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1}}, t0))
	require.Equal(t, 300, p.Len())
}

// TestAdaptiveSteps protects Adaptive RED's AIMD at fixed 0.5 s instants,
// its bounds, and the catch-up over a long busy gap. Band: min_th 10,
// max_th 30 ⇒ [18, 22]. Expected values by hand: from 0.02 the increase is
// min(0.01, max_p/4): 0.025, 0.03125, 0.0390625, 0.048828125, then +0.01.
func TestAdaptiveSteps(t *testing.T) {
	q := pinned(t, Config{MinThreshold: 10, MaxThreshold: 30, Gentle: true, Adaptive: true, DisableECN: true}, 25)
	now := t0
	hold(q, 25, aqm.ECT0, now) // starts the adaptation clock: first instant at t0+0.5s
	want := []float64{0.025, 0.03125, 0.0390625, 0.048828125, 0.058828125}
	for i, w := range want {
		now = t0 + aqm.Time(i+1)*aqm.Time(500*time.Millisecond)
		hold(q, 25, aqm.ECT0, now-1) // just before the instant: no change
		if i == 0 {
			require.Equal(t, 0.02, q.Detail().MaxP)
		}
		hold(q, 25, aqm.ECT0, now)
		require.InDelta(t, w, q.Detail().MaxP, 1e-15, "instant %d", i+1)
	}
	// 100 s with no arrival and the queue busy: 200 instants at a constant
	// average above the band: max_p saturates at exactly 0.5.
	now += aqm.Time(100 * time.Second)
	hold(q, 25, aqm.ECT0, now)
	require.Equal(t, maxAdaptiveMaxP, q.Detail().MaxP)
	// Below the band (avg 15 < 18): ×0.9 per instant, down to exactly 0.01.
	for q.Len() > 15 {
		q.Dequeue(now)
	}
	hold(q, 15, aqm.ECT0, now) // the average becomes 15 (instants use the last arrival's average)
	now += aqm.Time(500 * time.Millisecond)
	hold(q, 15, aqm.ECT0, now)
	require.InDelta(t, 0.45, q.Detail().MaxP, 1e-15)
	now += aqm.Time(time.Hour)
	hold(q, 15, aqm.ECT0, now)
	require.Equal(t, minAdaptiveMaxP, q.Detail().MaxP)
	// In the band: no change.
	for q.Len() < 20 {
		q.ring.PushBack(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}})
		q.backlog += 1000
		q.segs++
	}
	hold(q, 20, aqm.ECT0, now)
	n := q.Detail().Adaptations
	now += aqm.Time(10 * time.Second)
	hold(q, 20, aqm.ECT0, now)
	require.Equal(t, n, q.Detail().Adaptations)
	// The largest time jump is caught up without overflow or a long loop.
	hold(q, 20, aqm.ECT0, math.MaxInt64)
	require.GreaterOrEqual(t, q.Detail().MaxP, minAdaptiveMaxP)
}

// TestReconfigure protects Reconfigure: no packet is lost, duplicated or
// reordered; a lower limit keeps the queued packets and refuses arrivals;
// a bad config changes nothing; the adapted max_p carries over.
func TestReconfigure(t *testing.T) {
	q, err := New[int](Config{MinThreshold: 100, MaxThreshold: 300, LimitPackets: 300}, nil)
	require.NoError(t, err)
	for i := range 10 {
		require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100}}, t0))
	}
	require.Error(t, q.Reconfigure(Config{MinThreshold: 5, MaxThreshold: 1}))
	require.Equal(t, 300, q.Config().LimitPackets)

	require.NoError(t, q.Reconfigure(Config{MinThreshold: 1, MaxThreshold: 3, LimitPackets: 5}))
	require.Equal(t, 10, q.Len())
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(aqm.Packet[int]{Payload: 99, Meta: aqm.Meta{ECN: aqm.ECT0}}, t0))

	require.NoError(t, q.Reconfigure(Config{MinThreshold: 100, MaxThreshold: 300, LimitPackets: 400, ByteMode: false}))
	q.avg = 0
	require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Payload: 10, Meta: aqm.Meta{Size: 100}}, t0))
	// Switch to byte mode: the average restarts from the byte backlog.
	require.NoError(t, q.Reconfigure(Config{ByteMode: true, MinThreshold: 100_000, MaxThreshold: 300_000}))
	require.Equal(t, float64(1100), q.Detail().Avg)
	for i := range 11 {
		p, ok := q.Dequeue(t0)
		require.True(t, ok)
		require.Equal(t, i, p.Payload)
	}
	_, ok := q.Dequeue(t0)
	require.False(t, ok)
	s := q.Stats()
	require.Equal(t, s.Enqueued.Packets, s.Dequeued.Packets)

	// Adaptive to adaptive keeps max_p; to plain RED reloads it.
	a, err := New[int](Config{Adaptive: true, MinThreshold: 10, MaxThreshold: 30}, nil)
	require.NoError(t, err)
	a.maxP = 0.3
	require.NoError(t, a.Reconfigure(Config{Adaptive: true, Gentle: true, MinThreshold: 10, MaxThreshold: 30}))
	require.Equal(t, 0.3, a.Detail().MaxP)
	require.NoError(t, a.Reconfigure(Config{MinThreshold: 10, MaxThreshold: 30, MaxP: 0.1}))
	require.Equal(t, 0.1, a.Detail().MaxP)

	// Turning Wait on keeps the queue, the average and the count, and the
	// next arrivals follow the wait: at p_b = 0.25 the 1st to 3rd arrivals
	// after a signal are never signalled.
	w := pinned(t, Config{MinThreshold: 2, MaxThreshold: 6, MaxP: 0.5, DisableECN: true}, 4)
	for i := 0; i == 0 || w.Detail().Count != 0; i++ {
		require.Less(t, i, 1000)
		hold(w, 4, aqm.NotECT, t0)
	}
	before := w.Detail()
	require.NoError(t, w.Reconfigure(Config{MinThreshold: 2, MaxThreshold: 6, MaxP: 0.5, DisableECN: true, Weight: 1, Wait: true}))
	require.True(t, w.Config().Wait)
	require.Equal(t, 4, w.Len())
	require.Equal(t, before.Avg, w.Detail().Avg)
	require.Equal(t, int64(0), w.Detail().Count)
	for n := 1; n <= 3; n++ {
		v, _ := hold(w, 4, aqm.NotECT, t0)
		require.Equal(t, aqm.Enqueued, v, "arrival %d of the wait", n)
		require.Equal(t, int64(n), w.Detail().Count)
	}
}
