package cobalt

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/stretchr/testify/require"
)

const t0 = aqm.Time(time.Second)

// TestValidateNamesEveryField protects the configuration errors: with every
// field bad at once, each is named, and Validate leaves its receiver alone.
func TestValidateNamesEveryField(t *testing.T) {
	c := Config{
		Control: Control{Target: 2 * time.Hour, Interval: 2 * time.Hour, MTUTime: -1, BlueIncrement: 2, BlueDecrement: math.NaN(), BlueThreshold: -time.Second}, LimitPackets: -1, LimitBytes: -5,
	}
	before := c
	err := c.Validate()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, f := range []string{"Target", "Interval", "MTUTime", "BlueIncrement", "BlueDecrement", "BlueThreshold", "LimitPackets", "LimitBytes"} {
		require.Contains(t, err.Error(), "cobalt: "+f+" (", f)
	}
	require.Equal(t, before.Target, c.Target)
	require.True(t, math.IsNaN(c.BlueDecrement))

	err = Config{Control: Control{Target: 200 * time.Millisecond}}.Validate()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.Equal(t, "cobalt: Target (200ms) must be less than Interval (100ms)", err.Error())
	_, err = New[int](Config{LimitPackets: maxLimitPackets + 1}, nil)
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "LimitPackets", ce.Field)
}

// TestConfigAndSeeds protects Config (defaults filled in, the seed in use)
// and the seed rule: zero draws a secret, so two default queues drop
// differently; equal seeds drop alike; Reconfigure with Seed 0 keeps it.
func TestConfigAndSeeds(t *testing.T) {
	q, err := New[int](Config{}, nil)
	require.NoError(t, err)
	c := q.Config()
	require.Equal(t, defaultTarget, c.Target)
	require.Equal(t, defaultLimitPackets, c.LimitPackets)
	require.NotZero(t, c.Seed)
	q2, _ := New[int](Config{}, nil)
	require.NotEqual(t, c.Seed, q2.Config().Seed)
	require.NoError(t, q.Reconfigure(Config{LimitPackets: 10}))
	require.Equal(t, c.Seed, q.Config().Seed)
	require.Equal(t, 10, q.Config().LimitPackets)

	// BLUE's draws: with p forced up, the drop pattern is the seed's.
	pattern := func(seed uint64) string {
		q, _ := New[int](Config{Seed: seed, LimitPackets: 4}, nil)
		now := t0
		for range 200 { // overflow every 6 ms: p rises one step each time
			now += aqm.Time(6 * time.Millisecond)
			for range 5 {
				q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 100}}, now)
			}
			for q.Len() > 0 {
				q.Dequeue(now)
			}
		}
		var b strings.Builder
		for range 400 {
			now += aqm.Time(time.Microsecond)
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 100}}, now)
			_, ok := q.Dequeue(now)
			b.WriteByte("01"[b2i(ok)])
		}
		return b.String()
	}
	require.Equal(t, pattern(7), pattern(7))
	require.NotEqual(t, pattern(0), pattern(0))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestControllerSchedule protects the CoDel half's timing on a fixed
// trace: no signal before the sojourn has stayed above target for an
// interval, then signals spaced interval/sqrt(count), marks for ECT and
// drops for Not-ECT, and the count decaying after the episode.
func TestControllerSchedule(t *testing.T) {
	p := Config{Control: Control{DisableBlueThreshold: true}}.Params()
	var c Controller
	ms := func(k int) aqm.Time { return t0 + aqm.Time(k)*aqm.Time(time.Millisecond) }
	// First evaluation ever: count 0, so the activity timeout starts.
	require.Equal(t, Deliver, c.Decide(&p, ms(0), time.Millisecond, aqm.NotECT))
	require.Equal(t, ms(100), c.State().Next)
	// Above target from 10 ms: dropping starts, first signal due 100 ms on.
	require.Equal(t, Deliver, c.Decide(&p, ms(10), 10*time.Millisecond, aqm.NotECT))
	require.True(t, c.State().Dropping)
	require.Equal(t, ms(110), c.State().Next)
	require.Equal(t, Deliver, c.Decide(&p, ms(109), 10*time.Millisecond, aqm.NotECT))
	require.Equal(t, DropCoDel, c.Decide(&p, ms(110), 10*time.Millisecond, aqm.NotECT))
	require.Equal(t, uint32(2), c.State().Count)
	// Next at 110 + 100/sqrt(2) = 180.710678 ms; an ECT packet is marked.
	require.Equal(t, ms(110)+70710678, c.State().Next)
	require.Equal(t, Deliver, c.Decide(&p, ms(180), 10*time.Millisecond, aqm.ECT0))
	require.Equal(t, Mark, c.Decide(&p, ms(181), 10*time.Millisecond, aqm.ECT0))
	require.Equal(t, uint32(3), c.State().Count)
	// Below target: dropping stops; count decays one per spacing.
	require.Equal(t, Deliver, c.Decide(&p, ms(182), time.Millisecond, aqm.NotECT))
	require.False(t, c.State().Dropping)
	require.Equal(t, Deliver, c.Decide(&p, ms(300), time.Millisecond, aqm.NotECT))
	require.Less(t, c.State().Count, uint32(3))
	// A long quiet gap resets count at once.
	require.Equal(t, Deliver, c.Decide(&p, ms(100000), time.Millisecond, aqm.NotECT))
	require.Zero(t, c.State().Count)
}

// TestTimeGlitchRecovers protects the time policy: after one reading far
// in the future (and after alternating extreme readings), normal time
// brings the controller back at once: no parked schedule, and light
// traffic flows.
func TestTimeGlitchRecovers(t *testing.T) {
	for _, glitch := range [][]aqm.Time{{t0 + 1<<62}, {math.MinInt64 + 1, math.MaxInt64, math.MinInt64 + 1, math.MaxInt64}} {
		q, err := New[int](Config{Seed: 1, LimitPackets: 10}, nil)
		require.NoError(t, err)
		for range 30 { // overflow: BLUE up, CoDel forced on
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, t0)
		}
		for _, g := range glitch {
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, g)
			q.Dequeue(g)
		}
		for q.Len() > 0 {
			q.Dequeue(t0)
		}
		require.LessOrEqual(t, q.c.State().Next, t0+aqm.Time(defaultInterval))
		delivered := 0
		now := t0
		for range 1000 { // 10 s of one packet per 10 ms
			now += aqm.Time(10 * time.Millisecond)
			q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now)
			if _, ok := q.Dequeue(now); ok {
				delivered++
			}
			q.Dequeue(now) // finds the queue empty: BLUE decays
		}
		require.GreaterOrEqual(t, delivered, 990, "light traffic after the glitch %v", glitch)
	}
}

// TestZeroAllocs protects the hot path: no allocation per packet, in the
// deliver, mark, drop and overflow paths.
func TestZeroAllocs(t *testing.T) {
	q, err := New(Config{Seed: 3, LimitPackets: 64}, func(aqm.Packet[uint64], aqm.Verdict) {})
	require.NoError(t, err)
	now := t0
	buf := make([]aqm.Packet[uint64], 8)
	vs := make([]aqm.Verdict, 8)
	allocs := testing.AllocsPerRun(2000, func() {
		now += aqm.Time(time.Millisecond)
		for i := range buf {
			buf[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1000, ECN: aqm.ECN(i % 4)}}
		}
		q.EnqueueBatch(buf, vs, now)
		q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1000}}, now)
		q.DequeueBatch(buf[:3], now)
		q.Dequeue(now)
	})
	require.Zero(t, allocs)
	require.Positive(t, q.Stats().DroppedOverlimit.Packets)
}

// TestUnresponsiveFlow protects COBALT's reason to exist: one unresponsive
// flow at twice the link rate is brought under control by BLUE within
// about a second and a half, while CoDel, whose drop rate grows only with the square
// root of its count, needs many seconds and leaves the queue at its limit.
// "Under control" is the first 100 ms window after which the AQM's own
// drops (not refusals at the limit) keep up with the excess arrivals.
func TestUnresponsiveFlow(t *testing.T) {
	cob, cod := unresponsiveControl(t)
	t.Logf("time to control a flow at 2x the link rate: COBALT %v, CoDel %v", cob, cod)
	require.Less(t, cob, 2*time.Second)
	require.Greater(t, cod, 5*time.Second)
}

// unresponsiveControl runs the unresponsive-flow comparison (10 Mb/s link,
// 1500-byte packets at 20 Mb/s, a 1000-packet limit, 30 s) and returns when
// each AQM got the flow under control.
func unresponsiveControl(t testing.TB) (cobaltAt, codelAt time.Duration) {
	const (
		pkt     = 1500
		arrival = 600 * time.Microsecond  // 20 Mb/s
		service = 1200 * time.Microsecond // 10 Mb/s
		window  = 100 * time.Millisecond
		run     = 30 * time.Second
	)
	measure := func(q aqm.Queue[int], aqmDrops func() uint64) time.Duration {
		now := t0
		nextArr, nextSrv := now, now
		var arrivals, sent uint64
		winStart, winArr, winSent, winDrops := now, uint64(0), uint64(0), aqmDrops()
		for now < t0+aqm.Time(run) {
			if nextArr <= nextSrv {
				now = nextArr
				q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: pkt}}, now)
				arrivals++
				nextArr += aqm.Time(arrival)
			} else {
				now = nextSrv
				if _, ok := q.Dequeue(now); ok {
					sent++
				}
				nextSrv += aqm.Time(service)
			}
			if now-winStart >= aqm.Time(window) {
				excess := (arrivals - winArr) - (sent - winSent)
				d := aqmDrops() - winDrops
				if float64(d) >= 0.9*float64(excess) {
					return time.Duration(winStart - t0)
				}
				winStart, winArr, winSent, winDrops = now, arrivals, sent, aqmDrops()
			}
		}
		return run
	}
	cq, err := New[int](Config{Seed: 1, Control: Control{DisableECN: true}}, nil)
	require.NoError(t, err)
	cobaltAt = measure(cq, func() uint64 { s := cq.Stats(); return s.DroppedEarly.Packets + s.DroppedOverload.Packets })
	dq, err := codel.New[int](codel.Config{Control: codel.Control{DisableECN: true}}, nil)
	require.NoError(t, err)
	codelAt = measure(dq, func() uint64 { return dq.Stats().DroppedEarly.Packets })
	return cobaltAt, codelAt
}
