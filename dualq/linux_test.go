package dualq_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

// TestStepInPackets protects the packet step (Linux step_thresh in
// packets): an L4S packet is marked when more than StepThresholdPackets
// L4S packets remain behind it as it leaves, whatever its sojourn.
func TestStepInPackets(t *testing.T) {
	q, err := dualq.New[uint64](dualq.Config{StepThresholdPackets: 3}, nil)
	require.NoError(t, err)
	for i := range 6 {
		q.Enqueue(pkt(aqm.ECT1, 100, uint64(i)), t0)
	}
	// Left behind as each leaves: 5 4 3 2 1 0; marked while > 3.
	want := []aqm.ECN{aqm.CE, aqm.CE, aqm.ECT1, aqm.ECT1, aqm.ECT1, aqm.ECT1}
	for i, w := range want {
		p, ok := q.Dequeue(t0) // zero sojourn: a time step would never fire
		require.True(t, ok)
		assert.Equal(t, w, p.ECN, "packet %d", i)
	}
	assert.Equal(t, uint64(2), q.Detail().MarkedStep)
}

// TestStepMinQueue protects StepMinQueuePackets (Linux min_qlen_step): a
// packet that found fewer L4S packets queued at its arrival is never
// step-marked, one that found enough is, with the same sojourn.
func TestStepMinQueue(t *testing.T) {
	steps := []struct {
		min, ahead int // StepMinQueuePackets; L4S packets queued before the probe
		want       aqm.ECN
	}{
		{0, 0, aqm.CE},
		{1, 0, aqm.ECT1},
		{1, 1, aqm.CE},
		{3, 2, aqm.ECT1},
		{3, 3, aqm.CE},
	}
	for i, s := range steps {
		q, err := dualq.New[uint64](dualq.Config{StepMinQueuePackets: s.min}, nil)
		require.NoError(t, err)
		for j := range s.ahead {
			q.Enqueue(pkt(aqm.ECT1, 100, uint64(j)), t0)
		}
		q.Enqueue(pkt(aqm.ECT1, 100, 99), t0)
		var probe aqm.Packet[uint64]
		for q.Len() > 0 {
			p, _ := q.Dequeue(t0 + ms(2)) // 2 ms > the 1 ms step
			if p.Payload == 99 {
				probe = p
			}
		}
		assert.Equal(t, s.want, probe.ECN, "step %d", i)
	}
}

// TestDropEnqueue protects DropEnqueue (Linux drop_enqueue): the coupled
// and Classic AQM decide at arrival (marks show in the verdict, drops are
// refusals), the 2·MTU safeguard looks at the backlog the arrival finds,
// and the step still acts at dequeue.
func TestDropEnqueue(t *testing.T) {
	q, err := dualq.New[uint64](dualq.Config{DropEnqueue: true}, nil)
	require.NoError(t, err)
	q.Enqueue(pkt(aqm.NotECT, 1500, 0), t0)
	q.Enqueue(pkt(aqm.NotECT, 1500, 1), t0)
	// Push p' to 1 (overload): the Classic head stands from t0 on.
	for i := range 40 {
		q.Enqueue(pkt(aqm.NotECT, 1500, 0), t0+aqm.Time(i+1)*ms(16))
	}
	require.Equal(t, 1.0, q.Detail().Prob)
	now := t0 + ms(41*16) - 1
	require.GreaterOrEqual(t, q.Backlog(), 3000)
	assert.Equal(t, aqm.DroppedEarly, q.Enqueue(pkt(aqm.NotECT, 100, 7), now), "Classic Not-ECT refused at p_C = 1")
	assert.Equal(t, aqm.DroppedOverload, q.Enqueue(pkt(aqm.ECT0, 100, 8), now), "Classic ECN in overload refused")
	assert.Equal(t, aqm.DroppedOverload, q.Enqueue(pkt(aqm.ECT1, 100, 9), now), "L4S in overload refused at p_C = 1")
	// At dequeue nothing is dropped by the coupled AQM.
	dropped := q.Stats().Dropped().Packets
	for q.Len() > 0 {
		q.Dequeue(now)
	}
	assert.Equal(t, dropped, q.Stats().Dropped().Packets)

	// Below 2 MTUs found at arrival: no action, even at p' = 1; the step
	// marks at dequeue.
	q2, err := dualq.New[uint64](dualq.Config{DropEnqueue: true, OverflowOnOverload: true, CouplingFactor: 1}, nil)
	require.NoError(t, err)
	q2.Enqueue(pkt(aqm.NotECT, 1500, 0), t0)
	for i := range 40 {
		// Tiny L4S packets come and go; the Classic head stands.
		q2.Enqueue(pkt(aqm.ECT1, 10, 0), t0+aqm.Time(i+1)*ms(16))
		q2.Dequeue(t0 + aqm.Time(i+1)*ms(16))
	}
	require.Equal(t, 1, q2.Len())
	require.Equal(t, 1.0, q2.Detail().ProbL4SCoupled)
	now = t0 + ms(41*16) - 1
	assert.Equal(t, aqm.Enqueued, q2.Enqueue(pkt(aqm.ECT1, 100, 5), now), "1500 bytes found < 3000: no action")
	// Now 1600 bytes; fill to ≥ 3000 and the coupled mark comes at arrival.
	q2.Enqueue(pkt(aqm.ECT0, 1500, 6), now)
	assert.Equal(t, aqm.Marked, q2.Enqueue(pkt(aqm.ECT1, 100, 7), now), "p_CL = 1 at arrival")
}

// TestNQB protects NQBToL4S: through EnqueueDSCP a DSCP-45 packet goes to
// the L4S queue whatever its ECN field, other DSCPs and plain Enqueue
// classify on ECN, and without the option DSCP 45 is ignored.
func TestNQB(t *testing.T) {
	for _, on := range []bool{false, true} {
		for _, s := range []struct {
			ecn  aqm.ECN
			dscp uint8
			l4s  bool // with the option on
		}{
			{aqm.NotECT, aqm.DSCPNQB, true},
			{aqm.ECT0, aqm.DSCPNQB, true},
			{aqm.ECT1, aqm.DSCPNQB, true},
			{aqm.NotECT, 46, false},
			{aqm.NotECT, 44, false},
			{aqm.ECT1, 0, true},
		} {
			q, err := dualq.New[uint64](dualq.Config{NQBToL4S: on}, nil)
			require.NoError(t, err)
			q.EnqueueDSCP(pkt(s.ecn, 100, 1), s.dscp, t0)
			q.Enqueue(pkt(s.ecn, 100, 2), t0)
			want := s.l4s && (on || s.ecn&aqm.ECT1 != 0)
			d := q.Detail()
			wantL := 0
			if want {
				wantL++
			}
			if s.ecn&aqm.ECT1 != 0 {
				wantL++ // Enqueue: ECN only
			}
			assert.Equal(t, wantL, d.PacketsL4S, "on=%v ecn=%v dscp=%d", on, s.ecn, s.dscp)
		}
	}
	// A Not-ECT NQB packet in the L4S queue is dropped where an L4S packet
	// would be marked: here by the step.
	dropped := 0
	q, err := dualq.New(dualq.Config{NQBToL4S: true}, func(_ aqm.Packet[uint64], why aqm.Verdict) {
		require.Equal(t, aqm.DroppedEarly, why)
		dropped++
	})
	require.NoError(t, err)
	q.EnqueueDSCP(pkt(aqm.NotECT, 100, 1), aqm.DSCPNQB, t0)
	q.EnqueueDSCP(pkt(aqm.NotECT, 100, 2), aqm.DSCPNQB, t0+ms(1))
	p, ok := q.Dequeue(t0 + ms(1.5)) // packet 1: 1.5 ms > step, dropped; packet 2: 0.5 ms, sent
	require.True(t, ok)
	assert.Equal(t, uint64(2), p.Payload)
	assert.Equal(t, aqm.NotECT, p.ECN)
	assert.Equal(t, 1, dropped)
}

// TestClassicProtectionReconfigure protects the WRR credit on
// Reconfigure: a new ClassicProtectionPercent (or MTU) restarts the
// credit at MTU·(wc−wl), as Linux does when classic_protection is set.
func TestClassicProtectionReconfigure(t *testing.T) {
	q, err := dualq.New[uint64](dualq.Config{StepThreshold: 10 * time.Second}, nil)
	require.NoError(t, err)
	for i := range 20 {
		q.Enqueue(pkt(aqm.ECT1, 1500, uint64(i)), t0)
		q.Enqueue(pkt(aqm.NotECT, 1500, uint64(i)), t0)
	}
	q.Dequeue(t0)
	require.Equal(t, int64(-120000+15000), q.Detail().Credit)
	require.NoError(t, q.Reconfigure(dualq.Config{StepThreshold: 10 * time.Second, ClassicProtectionPercent: 50}))
	assert.Equal(t, int64(0), q.Detail().Credit)
	require.NoError(t, q.Reconfigure(dualq.Config{StepThreshold: 10 * time.Second, ClassicProtectionPercent: 50, Alpha: 1}))
	q.Dequeue(t0)
	c := q.Detail().Credit
	require.NoError(t, q.Reconfigure(dualq.Config{StepThreshold: 10 * time.Second, ClassicProtectionPercent: 50, Alpha: 2}))
	assert.Equal(t, c, q.Detail().Credit, "an unrelated change keeps the credit")
}

// TestValidateRefusesDropTail protects Validate against configurations
// under which the AQM could never act: each is refused with a ConfigError
// naming the field.
func TestValidateRefusesDropTail(t *testing.T) {
	for _, s := range []struct {
		cfg   dualq.Config
		field string
	}{
		{dualq.Config{LimitPackets: 1}, "LimitPackets"},
		{dualq.Config{LimitBytes: 5999}, "LimitBytes"}, // < 4 MTU: a full buffer can sit below 2 MTU
		{dualq.Config{MTUBytes: 9000, LimitBytes: 30000}, "LimitBytes"},
		{dualq.Config{LimitPackets: 10, StepThresholdPackets: 9}, "StepThresholdPackets"}, // at most 8 can be left behind... 9 never
		{dualq.Config{StepThresholdPackets: 3, StepThreshold: time.Millisecond}, "StepThresholdPackets"},
		{dualq.Config{StepThresholdPackets: 3, Ramp: true}, "StepThresholdPackets"},
		{dualq.Config{StepThresholdPackets: -1}, "StepThresholdPackets"},
		{dualq.Config{LimitPackets: 10, StepMinQueuePackets: 10}, "StepMinQueuePackets"},
		{dualq.Config{StepMinQueuePackets: -1}, "StepMinQueuePackets"},
	} {
		err := s.cfg.Validate()
		require.Error(t, err, "%+v", s.cfg)
		var ce *aqm.ConfigError
		require.True(t, errors.As(err, &ce))
		assert.Equal(t, s.field, ce.Field, "%+v: %v", s.cfg, err)
	}
	for _, ok := range []dualq.Config{
		{LimitPackets: 2},
		{LimitBytes: 6000},
		{LimitPackets: 10, StepThresholdPackets: 8},
		{LimitPackets: 10, StepMinQueuePackets: 9},
	} {
		assert.NoError(t, ok.Validate(), "%+v", ok)
	}
}
