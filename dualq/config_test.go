package dualq_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

// TestValidateNamesEveryField protects Validate: each bad field gets its
// own ConfigError wrapping ErrInvalidConfig, and all are reported at once.
func TestValidateNamesEveryField(t *testing.T) {
	require.NoError(t, dualq.Config{}.Validate())
	require.NoError(t, dualq.Config{ClassicProtectionPercent: dualq.ClassicProtectionNone}.Validate())
	bad := dualq.Config{
		Target: -1, Tupdate: time.Microsecond, Alpha: -1, Beta: 1000, CouplingFactor: 256,
		StepThreshold: 11 * time.Second, RampMinThreshold: -1, RampRange: 2 * time.Second,
		ClassicProtectionPercent: 101, TimeShift: -1, LimitPackets: -1, LimitBytes: -1, MTUBytes: -1,
	}
	err := bad.Validate()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, f := range []string{"Target", "Tupdate", "Alpha", "Beta", "CouplingFactor", "StepThreshold",
		"RampMinThreshold", "RampRange", "ClassicProtectionPercent", "TimeShift", "LimitPackets", "LimitBytes", "MTUBytes"} {
		assert.Contains(t, err.Error(), "dualq: "+f+" (", f)
	}
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Len(t, strings.Split(err.Error(), "\n"), 13)
	_, err = dualq.New[int](bad, nil)
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
}

// TestReconfigure protects Reconfigure: a lower limit drains the queue
// down to it at the next call (Classic heads first, then L4S heads, each
// through the DropFunc as DroppedOverlimit), the survivors stay in order in
// their own queues, p' is capped when overflow mode is switched on, and a
// bad config changes nothing.
func TestReconfigure(t *testing.T) {
	var drained []uint64
	q, err := dualq.New[uint64](dualq.Config{LimitPackets: 50, Alpha: 5, Beta: 50}, func(p aqm.Packet[uint64], why aqm.Verdict) {
		require.Equal(t, aqm.DroppedOverlimit, why)
		drained = append(drained, p.Payload)
	})
	require.NoError(t, err)
	now := t0
	for i := range 40 {
		now += aqm.Time(time.Millisecond)
		ecn := aqm.ECT0
		if i%3 == 0 {
			ecn = aqm.ECT1
		}
		require.True(t, q.Enqueue(pkt(ecn, 100, uint64(i)), now).Accepted())
	}
	require.Greater(t, q.Detail().Prob, 0.5)
	require.Error(t, q.Reconfigure(dualq.Config{LimitPackets: -3}))
	require.Equal(t, 40, q.Len())
	require.NoError(t, q.Reconfigure(dualq.Config{LimitPackets: 10, Alpha: 5, Beta: 50, OverflowOnOverload: true, StepThreshold: 10 * time.Second}))
	assert.LessOrEqual(t, q.Detail().Prob, 0.5)
	assert.Empty(t, drained, "the DropFunc runs only inside Enqueue and Dequeue")
	assert.Equal(t, aqm.DroppedOverlimit, q.Enqueue(pkt(aqm.ECT0, 100, 99), now))
	// 26 Classic packets leave first, then the 4 oldest L4S ones.
	var want []uint64
	for i := range uint64(40) {
		if i%3 != 0 {
			want = append(want, i)
		}
	}
	want = append(want, 0, 3, 6, 9)
	assert.Equal(t, want, drained)
	assert.Equal(t, 10, q.Len())
	assert.Equal(t, uint64(30), q.Stats().DroppedOverlimit.Packets-1, "30 drained plus the refused arrival")
	var l []uint64
	for q.Len() > 0 {
		p, ok := q.Dequeue(now)
		require.True(t, ok)
		l = append(l, p.Payload)
	}
	assert.Equal(t, []uint64{12, 15, 18, 21, 24, 27, 30, 33, 36, 39}, l, "overflow mode: the survivors leave in order, unmarked-or-marked but never dropped")
	assert.True(t, q.Enqueue(pkt(aqm.ECT0, 100, 100), now).Accepted())
	// Growing the limit again keeps working.
	require.NoError(t, q.Reconfigure(dualq.Config{LimitPackets: 3000}))
	for i := range 2000 {
		require.True(t, q.Enqueue(pkt(aqm.ECT1, 10, uint64(i)), now).Accepted())
	}
}

// FuzzConfigTrace protects the invariants under random configurations:
// no panic, limits hold, probabilities stay in [0, 1], Stats balance.
func FuzzConfigTrace(f *testing.F) {
	f.Add(uint8(2), uint8(10), uint16(160), uint16(3200), uint8(0), []byte{1, 2, 3, 200, 5, 6, 7, 8})
	f.Add(uint8(1), uint8(100), uint16(65535), uint16(65535), uint8(15), []byte{0, 0, 0, 255, 255, 255})
	f.Fuzz(func(t *testing.T, k, wc uint8, alpha, beta uint16, flags uint8, ops []byte) {
		cfg := dualq.Config{
			CouplingFactor:           int(k%8) + 1,
			ClassicProtectionPercent: int(wc%100) + 1,
			Alpha:                    0.001 + float64(alpha)/656,
			Beta:                     0.001 + float64(beta)/656,
			Ramp:                     flags&1 != 0,
			TimeShiftedFIFO:          flags&2 != 0,
			AnyECTToL4S:              flags&4 != 0,
			OverflowOnOverload:       flags&8 != 0,
			LimitPackets:             2 + int(flags>>4),
			LimitBytes:               5000,
			MTUBytes:                 300,
		}
		q, err := dualq.New[int](cfg, nil)
		require.NoError(t, err)
		now := t0
		for i, b := range ops {
			now += aqm.Time(b&0x3f) * aqm.Time(time.Millisecond/4)
			if b == 0xff {
				now += aqm.Time(time.Hour)
			}
			if b&0x40 != 0 {
				q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: uint32(b) * 20, ECN: aqm.ECN(b >> 6)}}, now)
			} else {
				q.Dequeue(now)
			}
			d := q.Detail()
			require.LessOrEqual(t, q.Len(), cfg.LimitPackets)
			require.LessOrEqual(t, q.Backlog(), cfg.LimitBytes)
			require.True(t, d.Prob >= 0 && d.Prob <= 1 && d.ProbClassic <= d.Prob)
			s := q.Stats()
			require.Equal(t, s.Enqueued.Packets, s.Dequeued.Packets+s.DroppedQueued.Packets+uint64(s.Len))
		}
	})
}
