package dualq

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
)

const t0 = aqm.Time(time.Second)

// pin sets p' to p (exactly, on the 2^48 grid) and keeps it there by
// pushing the next update far away.
func pin[T any](q *Queue[T], p float64) {
	q.ctl.p48 = int64(math.Round(p * float64(one48)))
	q.ctl.started = true
	q.ctl.nextUpd = math.MaxInt64
	q.ctl.derive(&q.par)
}

// headsDelay is the delay the PI would see at t.
func headsDelay[T any](q *Queue[T], t int64) int64 {
	h := q.heads()
	return h.delay(t)
}

type fractions struct{ n, marked, dropped, early, overload int }

// signalFractions pins p', keeps a standing backlog of Classic and L4S
// packets (so the 2·MTU rule never suppresses the AQM) and counts what
// happens to n packets with ECN e.
func signalFractions(t *testing.T, cfg Config, p float64, e aqm.ECN, n int) fractions {
	t.Helper()
	var f fractions
	q, err := New(cfg, func(_ aqm.Packet[uint64], why aqm.Verdict) {
		f.dropped++
		switch why {
		case aqm.DroppedEarly:
			f.early++
		case aqm.DroppedOverload:
			f.overload++
		}
	})
	require.NoError(t, err)
	pin(q, p)
	// Top up to 20 packets before each Dequeue: the 2·MTU rule could only
	// interfere after 18 drops in a row (0.36^18 < 10^-7).
	for i := range n {
		for q.Len() < 20 {
			q.Enqueue(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500, ECN: e}}, t0)
		}
		if pk, ok := q.Dequeue(t0); ok && pk.ECN == aqm.CE {
			f.marked++
		}
	}
	f.n = int(q.Stats().Dequeued.Packets) + f.dropped
	return f
}

func (f fractions) within(t *testing.T, what string, got int, p float64) {
	t.Helper()
	sigma := math.Sqrt(p * (1 - p) / float64(f.n))
	assert.InDelta(t, p, float64(got)/float64(f.n), 4*sigma+1e-9, "%s", what)
}

// TestCouplingFractions protects the coupled probabilities below overload
// (p' = 0.2, k = 2): Classic ECT(0) marked and Not-ECT dropped with
// p'^2 = 0.04, L4S marked with k·p' = 0.4.
func TestCouplingFractions(t *testing.T) {
	cfg := Config{StepThreshold: time.Second, Seed: 3}
	f := signalFractions(t, cfg, 0.2, aqm.ECT0, 30000)
	f.within(t, "Classic ECT(0) marks", f.marked, 0.04)
	assert.Zero(t, f.dropped)
	f = signalFractions(t, cfg, 0.2, aqm.NotECT, 30000)
	f.within(t, "Classic Not-ECT drops", f.early, 0.04)
	assert.Zero(t, f.marked)
	f = signalFractions(t, cfg, 0.2, aqm.ECT1, 30000)
	f.within(t, "L4S marks", f.marked, 0.4)
	assert.Zero(t, f.dropped)
}

// TestOverloadFractions protects overload handling (p' = 0.6 ≥ 1/k):
// ECN-capable packets of both queues are dropped with p'^2 = 0.36 as
// DroppedOverload; a Classic hit is always a drop, never a mark; every
// surviving L4S packet is marked (a public port marked them with p_C
// instead of p_CL = 1).
func TestOverloadFractions(t *testing.T) {
	cfg := Config{StepThreshold: time.Second, Seed: 5}
	f := signalFractions(t, cfg, 0.6, aqm.ECT0, 30000)
	f.within(t, "Classic ECT(0) overload drops", f.overload, 0.36)
	assert.Zero(t, f.marked, "Classic ECN packets are never marked in overload")
	f = signalFractions(t, cfg, 0.6, aqm.ECT1, 30000)
	f.within(t, "L4S overload drops", f.overload, 0.36)
	assert.Equal(t, f.n-f.dropped, f.marked, "every surviving L4S packet is marked")
	f = signalFractions(t, cfg, 0.6, aqm.NotECT, 30000)
	f.within(t, "Classic Not-ECT drops", f.early, 0.36)
	assert.Zero(t, f.overload, "Not-ECT drops are early drops, not overload drops")
}

// TestOverloadBoundary protects the overload threshold: p' = 1/k exactly
// is overload (RFC 9332's p_C ≥ p_Cmax), one 2^-48 below is not.
func TestOverloadBoundary(t *testing.T) {
	q, err := New[uint64](Config{}, nil)
	require.NoError(t, err)
	pin(q, 0.5)
	assert.True(t, q.ctl.overload)
	q.ctl.p48--
	q.ctl.derive(&q.par)
	assert.False(t, q.ctl.overload)
}

// TestOverflowCaps protects OverflowOnOverload: p' never passes 1/k, so
// nothing is dropped as overload and L4S is marked at 100 %.
func TestOverflowCaps(t *testing.T) {
	q, err := New[uint64](Config{OverflowOnOverload: true}, nil)
	require.NoError(t, err)
	q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, t0)
	for i := range 200 {
		q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, t0+aqm.Time(i+1)*aqm.Time(16*time.Millisecond))
	}
	d := q.Detail()
	assert.Equal(t, 0.5, d.Prob)
	assert.False(t, d.Overloaded)
	assert.Equal(t, 1.0, d.ProbL4SCoupled)
	assert.Equal(t, 0.25, d.ProbClassic)
}

// TestBelowTwoMTU protects Linux's safeguard: with less than 2·MTU queued
// after the pop, neither the Classic nor the coupled AQM acts even at
// p' = 1, while the native step still marks.
func TestBelowTwoMTU(t *testing.T) {
	q, err := New[uint64](Config{}, nil)
	require.NoError(t, err)
	pin(q, 1)
	q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1500, ECN: aqm.NotECT}}, t0)
	q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 1499, ECN: aqm.NotECT}}, t0)
	p, ok := q.Dequeue(t0)
	require.True(t, ok, "1499 bytes left < 3000: no drop")
	assert.Equal(t, aqm.NotECT, p.ECN)
	p, _ = q.Dequeue(t0) // the 1499-byte Classic packet, alone
	assert.Equal(t, aqm.NotECT, p.ECN)
	q.Enqueue(aqm.Packet[uint64]{Meta: aqm.Meta{Size: 100, ECN: aqm.ECT1}}, t0)
	p, _ = q.Dequeue(t0.Add(2 * time.Millisecond))
	assert.Equal(t, aqm.CE, p.ECN, "the step still marks")
	assert.Zero(t, q.Stats().Dropped().Packets)
}

// TestNoWindupPast100 protects against probabilities winding past 100 %
// (Linux PIE's unsigned p can exceed MAX_PROB before its wrap check; a
// public DualPI2 port never clamped p'): after 10^5 saturating updates p'
// is exactly 1, and the first negative increment lowers it at once.
func TestNoWindupPast100(t *testing.T) {
	q, err := New[uint64](Config{}, nil)
	require.NoError(t, err)
	const d = int64(100 * time.Millisecond)
	for range 100000 {
		q.ctl.update(&q.par, d)
	}
	require.Equal(t, one48, q.ctl.p48)
	q.ctl.derive(&q.par)
	assert.Equal(t, one32, q.ctl.pC)
	assert.Equal(t, one32, q.ctl.pCL)
	// d' = 95 ms: α·(95−15) ms − β·5 ms = 0.0128 − 0.016 = −0.0032.
	q.ctl.update(&q.par, d-int64(5*time.Millisecond))
	assert.InDelta(t, 1-0.0032, float64(q.ctl.p48)/float64(one48), 1e-6)
}

// TestDropDrainResetsCredit protects the dequeue drop path: when drops
// empty both queues inside one Dequeue, the call returns false, the WRR
// credit is reset and the PI sees an empty queue (no stale head delay) —
// the reset must not be skipped by the drop path's early continue.
func TestDropDrainResetsCredit(t *testing.T) {
	dropped := 0
	q, err := New(Config{MTUBytes: 100}, func(aqm.Packet[int], aqm.Verdict) { dropped++ })
	require.NoError(t, err)
	pin(q, 0)
	for i := range 10 {
		q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: 1000, ECN: aqm.ECT1}}, t0)
	}
	for range 3 {
		q.Dequeue(t0) // L served while C waits: credit moves
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000, ECN: aqm.NotECT}}, t0)
	}
	for range 4 {
		q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000, ECN: aqm.NotECT}}, t0)
	}
	require.NotEqual(t, q.par.creditInit, q.credit)
	pin(q, 1)
	// p_C = 1: every Classic packet is dropped; L packets are dropped in
	// overload with p_C = 1 too, except below 2 MTU = 200 bytes.
	for q.Len() > 0 {
		q.Dequeue(t0)
	}
	_, ok := q.Dequeue(t0)
	assert.False(t, ok)
	assert.Equal(t, q.par.creditInit, q.credit)
	assert.Zero(t, headsDelay(q, int64(t0)+int64(time.Hour)))
	assert.Positive(t, dropped)
}

// TestLazyEqualsTimer protects the lazy update: one call after many missed
// updates gives bit for bit the p' that a call at every update instant
// gives, for an idle queue (closed form) and for a stalled backlog
// (bounded loop with the saturation skip).
func TestLazyEqualsTimer(t *testing.T) {
	for _, backlog := range []bool{false, true} {
		for _, gap := range []int{1, 2, 3, 50, 400, 5000} {
			mk := func() *Queue[int] {
				q, err := New[int](Config{Alpha: 0.05, Beta: 0.5}, nil)
				require.NoError(t, err)
				q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, t0)
				if !backlog {
					q.Dequeue(t0 + 1)
				}
				pin(q, 0.3)
				q.ctl.nextUpd = t0 + aqm.Time(16*time.Millisecond)
				q.ctl.prevDelay = int64(40 * time.Millisecond)
				return q
			}
			lazy, timer := mk(), mk()
			T := aqm.Time(16 * time.Millisecond)
			end := t0 + aqm.Time(gap)*T + 5
			for now := t0 + T; now <= end; now += T {
				timer.advance(now)
			}
			timer.advance(end)
			lazy.advance(end)
			assert.Equal(t, timer.ctl.p48, lazy.ctl.p48, "backlog=%v gap=%d", backlog, gap)
			assert.Equal(t, timer.ctl.updates, lazy.ctl.updates, "backlog=%v gap=%d", backlog, gap)
			assert.Equal(t, timer.ctl.nextUpd, lazy.ctl.nextUpd, "backlog=%v gap=%d", backlog, gap)
			assert.Equal(t, timer.ctl.prevDelay, lazy.ctl.prevDelay, "backlog=%v gap=%d", backlog, gap)
		}
	}
}

// TestHugeJumps protects against int64 overflow: jumps to the end of time
// with packets queued saturate p' and keep every invariant.
func TestHugeJumps(t *testing.T) {
	q, err := New[int](Config{}, nil)
	require.NoError(t, err)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, math.MinInt64+1)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT1}}, -5)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, math.MaxInt64-10)
	assert.Equal(t, float64(1), q.Detail().Prob)
	q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1500, ECN: aqm.ECT0}}, math.MaxInt64)
	for q.Len() > 0 {
		q.Dequeue(math.MaxInt64)
	}
	q.Dequeue(math.MaxInt64)
	assert.Equal(t, aqm.Time(math.MaxInt64), q.ctl.nextUpd)
	d := q.Detail()
	assert.True(t, d.Prob >= 0 && d.Prob <= 1)
}
