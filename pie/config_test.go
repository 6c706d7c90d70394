package pie

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestValidateDefaults protects the documented defaults of zero fields:
// Validate leaves its receiver alone, and Config reports the defaults and
// the seed drawn for a zero Seed.
func TestValidateDefaults(t *testing.T) {
	var c Config
	require.NoError(t, c.Validate())
	require.Equal(t, Config{}, c)
	q, err := New[int](c, nil)
	require.NoError(t, err)
	got := q.Config()
	require.NotZero(t, got.Seed)
	got.Seed = 0
	require.Equal(t, Config{
		Control: Control{Target: 15 * time.Millisecond, TUpdate: 15 * time.Millisecond, Alpha: 0.125, Beta: 1.25, MaxBurst: 150 * time.Millisecond, MeanPacketBytes: 1500, ECNThreshold: 0.1, DequeueThresholdBytes: 16384}, LimitPackets: 1000}, got)
	q, err = New[int](Config{Seed: 42, LimitPackets: 7}, nil)
	require.NoError(t, err)
	require.Equal(t, uint64(42), q.Config().Seed)
	require.Equal(t, 7, q.Config().LimitPackets)
}

// TestValidateNamesEveryBadField protects the error contract: one
// *aqm.ConfigError per bad field, all joined, each wrapping
// aqm.ErrInvalidConfig with the "pie: Field (value) ..." message.
func TestValidateNamesEveryBadField(t *testing.T) {
	c := Config{
		Control: Control{
			Target: -1, TUpdate: 11 * time.Second, Alpha: math.NaN(), Beta: 17, MaxBurst: -time.Second,
			MeanPacketBytes: 70000, ECNThreshold: 1.5, DequeueThresholdBytes: -5,
		},
		LimitPackets: -1, LimitBytes: -1,
	}
	cp := c
	err := c.Validate()
	require.True(t, math.IsNaN(c.Alpha))
	cp.Alpha, c.Alpha = 0, 0
	require.Equal(t, cp, c, "Validate must not change its receiver")
	c.Alpha = math.NaN()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	fields := []string{"Target", "TUpdate", "Alpha", "Beta", "MaxBurst", "MeanPacketBytes", "ECNThreshold", "DequeueThresholdBytes", "LimitPackets", "LimitBytes"}
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined))
	require.Len(t, joined.Unwrap(), len(fields))
	for i, e := range joined.Unwrap() {
		var ce *aqm.ConfigError
		require.ErrorAs(t, e, &ce)
		require.Equal(t, fields[i], ce.Field)
		require.True(t, strings.HasPrefix(e.Error(), "pie: "+fields[i]+" ("), e.Error())
	}
	_, err = New[int](c, nil)
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
}

// TestGainRounding protects the documented rounding of Alpha and Beta to
// 2^-20 Hz: the RFC values are exact.
func TestGainRounding(t *testing.T) {
	c := Config{}
	require.NoError(t, c.Validate())
	pp := c.withDefaults().derive()
	require.Equal(t, int64(0.125*(1<<20)), pp.alphaQ)
	require.Equal(t, int64(1.25*(1<<20)), pp.betaQ)
}

// TestReconfigureKeepsPackets protects Reconfigure: queued packets survive
// in order, a lower limit refuses arrivals until the queue is below it, the
// probability carries over, and a bad config changes nothing.
func TestReconfigureKeepsPackets(t *testing.T) {
	q, err := New[int](Config{LimitPackets: 10}, nil)
	require.NoError(t, err)
	now := aqm.Time(time.Second)
	for i := range 8 {
		require.Equal(t, aqm.Enqueued, q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 100}}, now))
	}
	q.ctl.p = probCeil(0.3)
	require.Error(t, q.Reconfigure(Config{Control: Control{Target: -1}}))
	require.Equal(t, 10, q.ring.Cap())

	require.NoError(t, q.Reconfigure(Config{LimitPackets: 5, Control: Control{MaxBurst: 50 * time.Millisecond, RateEstimator: true, DequeueThresholdBytes: 4000}}))
	require.Equal(t, 8, q.Len())
	require.Equal(t, probCeil(0.3), q.ctl.p)
	require.Equal(t, int64(50*time.Millisecond), q.ctl.burst)
	require.Equal(t, aqm.DroppedOverlimit, q.Enqueue(aqm.Packet[int]{Payload: 99, Meta: aqm.Meta{Size: 100}}, now))
	for i := range 4 {
		p, ok := q.Dequeue(now)
		require.True(t, ok)
		require.Equal(t, i, p.Payload)
	}
	require.NotEqual(t, aqm.DroppedOverlimit, q.Enqueue(aqm.Packet[int]{Payload: 8, Meta: aqm.Meta{Size: 100}}, now))
	require.NoError(t, q.Reconfigure(Config{LimitPackets: 100}))
	for i := 4; i <= 8; i++ {
		p, ok := q.Dequeue(now)
		require.True(t, ok)
		require.Equal(t, i, p.Payload)
	}
	require.Zero(t, q.Len())
	require.Zero(t, q.Backlog())
}
