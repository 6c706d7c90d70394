package codel

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

func pkt(id uint64, size uint32, ecn aqm.ECN) aqm.Packet[uint64] {
	return aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: size, ECN: ecn}}
}

// TestQueueFirstDropAndSpacing protects the end-to-end schedule on a queue
// (the V-A1 vector): 400 packets of 1000 B queued at t0, one dequeue per ms.
// The sojourn reaches target at 5 ms, so the deadline is 105 ms: packet 105
// is dropped there (RFC >=; 106 ms with StrictDeadline), then drops follow
// 100 ms later and 100/sqrt(2) = 70.71 ms after that (at the first whole ms
// at or after 275.710678 ms).
func TestQueueFirstDropAndSpacing(t *testing.T) {
	for _, strict := range []bool{false, true} {
		var dropped []uint64
		var dropAt []time.Duration
		now := t0
		q, err := New(Config{Control: Control{DisableECN: true, StrictDeadline: strict}}, func(p aqm.Packet[uint64], why aqm.Verdict) {
			require.Equal(t, aqm.DroppedEarly, why)
			dropped = append(dropped, p.Payload)
			dropAt = append(dropAt, now.Sub(t0))
		})
		require.NoError(t, err)
		for i := range uint64(400) {
			require.Equal(t, aqm.Enqueued, q.Enqueue(pkt(i+1, 1000, aqm.NotECT), t0))
		}
		for k := 1; k <= 290; k++ {
			now = t0 + aqm.Time(k)*aqm.Time(time.Millisecond)
			_, ok := q.Dequeue(now)
			require.True(t, ok)
		}
		if !strict {
			require.Equal(t, []time.Duration{105 * time.Millisecond, 205 * time.Millisecond, 276 * time.Millisecond}, dropAt)
			require.Equal(t, []uint64{105, 206, 278}, dropped)
		} else {
			// Deadline passes at 106 ms; drop_next = 206 ms; then 276.710678 ms.
			require.Equal(t, []time.Duration{106 * time.Millisecond, 206 * time.Millisecond, 277 * time.Millisecond}, dropAt)
		}
		s := q.Stats()
		require.Equal(t, uint64(3), s.DroppedEarly.Packets)
		require.Equal(t, uint64(3), s.DroppedQueued.Packets)
		require.Equal(t, s.Enqueued.Packets, s.Dequeued.Packets+s.DroppedQueued.Packets+uint64(s.Len))
	}
}

// TestQueueECNMarks protects marking on a queue: ECT packets are returned
// with CE and counted as marks where Not-ECT ones would be dropped.
func TestQueueECNMarks(t *testing.T) {
	q, err := New[uint64](Config{}, func(p aqm.Packet[uint64], why aqm.Verdict) { t.Fatalf("unexpected drop of %d", p.Payload) })
	require.NoError(t, err)
	for i := range uint64(400) {
		q.Enqueue(pkt(i+1, 1000, aqm.ECT0), t0)
	}
	var marked []uint64
	for k := 1; k <= 290; k++ {
		p, ok := q.Dequeue(t0 + aqm.Time(k)*aqm.Time(time.Millisecond))
		require.True(t, ok)
		if p.ECN == aqm.CE {
			marked = append(marked, p.Payload)
		}
	}
	// One mark per dequeue and no packet removed, so packet k leaves at k ms:
	// marks at 105, 205 and the first ms at or after 275.710678.
	require.Equal(t, []uint64{105, 205, 276}, marked)
	require.Equal(t, uint64(3), q.Stats().Marked.Packets)
	require.Equal(t, uint64(3), q.Detail().MarkedCoDel)
}

// TestQueueLimits protects the hard limits: packet and byte limits refuse
// arrivals without touching CoDel state, and a packet bigger than the byte
// limit is refused.
func TestQueueLimits(t *testing.T) {
	q, err := New[uint64](Config{LimitPackets: 3, LimitBytes: 2500, Control: Control{MTUBytes: 800}}, nil)
	require.NoError(t, err)
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(pkt(1, 2501, 0), t0))
	require.Equal(t, aqm.Enqueued, q.Enqueue(pkt(2, 1000, 0), t0))
	require.Equal(t, aqm.Enqueued, q.Enqueue(pkt(3, 1000, 0), t0))
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(pkt(4, 501, 0), t0))
	require.Equal(t, aqm.Enqueued, q.Enqueue(pkt(5, 500, 0), t0))
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(pkt(6, 0, 0), t0))
	s := q.Stats()
	require.Equal(t, 3, s.Len)
	require.Equal(t, 2500, s.Backlog)
	require.Equal(t, uint64(3), s.DroppedOverlimit.Packets)
	require.Zero(t, s.DroppedQueued.Packets)
	require.Equal(t, State{}, q.Detail().State)
}

// TestQueueDropCap protects the bound on drops per Dequeue: after a long
// stall in the dropping state one call drops at most maxDropsPerDequeue
// packets, returns the next one and reschedules from now.
func TestQueueDropCap(t *testing.T) {
	drops := 0
	q, err := New(Config{Control: Control{DisableECN: true}, LimitPackets: 10000}, func(aqm.Packet[uint64], aqm.Verdict) { drops++ })
	require.NoError(t, err)
	for i := range uint64(5000) {
		q.Enqueue(pkt(i, 1000, 0), t0)
	}
	for k := 1; k <= 106; k++ {
		q.Dequeue(t0 + aqm.Time(k)*aqm.Time(time.Millisecond))
	}
	require.True(t, q.Detail().Dropping)
	drops = 0
	now := t0 + aqm.Time(1000*time.Second) // a stall: about 2*sqrt(n) catch-up drops due
	_, ok := q.Dequeue(now)
	require.True(t, ok)
	require.Equal(t, maxDropsPerDequeue, drops)
	require.Equal(t, uint64(1), q.Detail().CappedDequeues)
	require.Greater(t, q.Detail().DropNext, now)
}

// TestValidate protects the configuration errors: every bad field is named
// on its own, each wraps aqm.ErrInvalidConfig, Validate does not change its
// receiver, and Config reports the defaults.
func TestValidate(t *testing.T) {
	cfg := Config{Control: Control{Target: -1, Interval: 2 * time.Hour, MTUBytes: -1, CEThreshold: -1}, LimitPackets: -1, LimitBytes: -1}
	cp := cfg
	err := cfg.Validate()
	require.Equal(t, cp, cfg, "Validate must not change its receiver")
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	var n int
	for _, f := range []string{"Target", "Interval", "MTUBytes", "LimitPackets", "LimitBytes", "CEThreshold"} {
		require.Contains(t, err.Error(), "codel: "+f+" (")
		n++
	}
	require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), n)

	err = Config{Control: Control{Target: 200 * time.Millisecond}}.Validate()
	require.EqualError(t, err, "codel: Target (200ms) must be less than Interval (100ms)")
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))

	// A field out of range on its own is named even when it also breaks
	// the relation with another field, and both bad fields are named.
	for _, c := range []Config{
		{Control: Control{Target: 2 * time.Hour, Interval: 2 * time.Hour}},
		{Control: Control{Target: math.MaxInt64, Interval: math.MaxInt64}},
		{Control: Control{Target: math.MaxInt64}},
		{Control: Control{Target: time.Hour, Interval: time.Hour}},
	} {
		err := c.Validate()
		require.ErrorContains(t, err, "codel: Target (", "%+v", c)
		if c.Interval > maxInterval {
			require.ErrorContains(t, err, "codel: Interval (", "%+v", c)
		}
	}
	require.EqualError(t, Config{Control: Control{Target: time.Hour}}.Validate(), "codel: Target (1h0m0s) must be in [0, 1h0m0s)")

	// Control.Validate names the controller's bad fields and only those.
	err = cfg.Control.Validate()
	require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), n-2)
	require.NotContains(t, err.Error(), "Limit")
	require.NoError(t, Control{}.Validate())

	var c Config
	require.NoError(t, c.Validate())
	require.Equal(t, Config{}, c)
	q, err := New[int](c, nil)
	require.NoError(t, err)
	require.Equal(t, Config{Control: Control{Target: defaultTarget, Interval: defaultInterval, MTUBytes: defaultMTUBytes}, LimitPackets: defaultLimitPackets}, q.Config())
	_, err = New[int](Config{LimitPackets: maxLimitPackets + 1}, nil)
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
}

// TestConfigForLink protects the link preset: limits sized by the rate's
// buffer rule, at least the default packet limit, everything else default,
// and a valid Config (a zero rate is internal/configcheck's
// TestConfigForLinkZeroRate).
func TestConfigForLink(t *testing.T) {
	for _, rate := range []aqm.Rate{64 * aqm.Kbit, 8 * aqm.Mbit, 100 * aqm.Mbit, 10 * aqm.Gbit} {
		for _, rtt := range []time.Duration{0, 10 * time.Millisecond, 300 * time.Millisecond} {
			c := ConfigForLink(rate, rtt)
			require.NoError(t, c.Validate())
			require.Equal(t, rate.BufferBytes(rtt), c.LimitBytes)
			require.Equal(t, max(rate.BufferPackets(rtt), defaultLimitPackets), c.LimitPackets)
			c.LimitBytes, c.LimitPackets = 0, 0
			require.Equal(t, Config{}, c)
		}
	}
	// 8 Mb/s at 100 ms: 400 kB, 400 ms of queue at most.
	c := ConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	require.Equal(t, 400_000, c.LimitBytes)
	q, err := New[int](c, nil)
	require.NoError(t, err)
	require.Equal(t, c.LimitBytes, q.Config().LimitBytes)
}

// TestReconfigure protects live reconfiguration: queued packets survive in
// order, the CoDel state carries over, and a limit below the current length
// refuses arrivals until the queue drains below it.
func TestReconfigure(t *testing.T) {
	q, err := New[uint64](Config{Control: Control{DisableECN: true}, LimitPackets: 100}, nil)
	require.NoError(t, err)
	for i := range uint64(50) {
		q.Enqueue(pkt(i, 1000, 0), t0)
	}
	for k := 1; k <= 10; k++ { // sets the above-target deadline
		q.Dequeue(t0 + aqm.Time(k)*aqm.Time(time.Millisecond))
	}
	before := q.Detail().State
	require.NotZero(t, before.FirstAbove)
	require.Error(t, q.Reconfigure(Config{LimitPackets: -5}))
	require.NoError(t, q.Reconfigure(Config{Control: Control{DisableECN: true}, LimitPackets: 20}))
	require.Equal(t, before, q.Detail().State)
	require.Equal(t, 40, q.Len())
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(pkt(999, 1, 0), t0))
	for i := uint64(10); i < 21; i++ {
		p, ok := q.Dequeue(t0 + aqm.Time(11*time.Millisecond))
		require.True(t, ok)
		require.Equal(t, i, p.Payload)
	}
	require.Equal(t, 29, q.Len())
	require.NoError(t, q.Reconfigure(Config{Control: Control{DisableECN: true}, LimitPackets: 1000}))
	require.Equal(t, aqm.Enqueued, q.Enqueue(pkt(1000, 1, 0), t0))
	for i := uint64(21); i < 50; i++ {
		p, _ := q.Dequeue(t0 + aqm.Time(12*time.Millisecond))
		require.Equal(t, i, p.Payload)
	}
	p, _ := q.Dequeue(t0 + aqm.Time(12*time.Millisecond))
	require.Equal(t, uint64(1000), p.Payload)
}
