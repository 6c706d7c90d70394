package aqmtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// check is one named conformance check. It returns every violation found.
type check struct {
	name string
	fn   func(f Factory) error
}

var checks = []check{
	{"FIFO", checkFIFO},
	{"RandomTraces", checkRandomTraces},
	{"Limits", checkLimits},
	{"Oversize", checkOversize},
	{"SizeZero", checkSizeZero},
	{"ECN", checkECN},
	{"StrayECNBits", checkStrayECN},
	{"BackwardTime", checkBackwardTime},
	{"HugeTimeJump", checkHugeJump},
	{"IdleGaps", checkIdleGaps},
	{"ManyFlows", checkManyFlows},
	{"Determinism", checkDeterminism},
	{"ZeroAllocs", checkAllocs},
	{"Reconfigure", checkReconfigure},
	{"Burst", checkBurst},
	{"ClockGlitch", checkClockGlitch},
	{"GSO", checkGSO},
	{"GSOLimits", checkGSOLimits},
	{"GSOBurst", checkGSOBurst},
}

// Run checks the queues that f builds against the aqm.Queue contract, one
// subtest per check (see the package documentation), then plays seeded random
// traces through all of them.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.New == nil {
		t.Fatal("aqmtest: Factory.New is nil")
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			switch {
			case c.name == "ZeroAllocs" && raceEnabled:
				t.Skip("allocation counts are not meaningful under the race detector")
			case c.name == "ClockGlitch" && f.SkipClockGlitch:
				t.Skip("Factory.SkipClockGlitch is set: the queue is not checked against the time policy")
			case strings.HasPrefix(c.name, "GSO") && f.SkipGSO:
				t.Skip("Factory.SkipGSO is set: the queue is not checked with GSO super-packets")
			case (c.name == "Burst" || c.name == "GSOBurst") && !hasBurstPath(f):
				t.Log("the queue has no burst path (it does not implement aqm.BatchQueue): bursts fall back to loops of single calls, so this check passes trivially")
			}
			if err := c.fn(f); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("Properties", func(t *testing.T) {
		seed := propertySeed()
		t.Logf("property seed %d (replay with AQMTEST_SEED=%d)", seed, seed)
		if err := checkProperties(f, seed, propertyRuns()); err != nil {
			t.Errorf("property seed %d: %v", seed, err)
		}
	})
}

// trace is a tiny builder for fixed traces.
type trace []traceOp

func (tr trace) enq(n int, dt time.Duration, size, hash uint32, ecn aqm.ECN) trace {
	return append(tr, traceOp{Kind: opEnqueue, Count: n, Dt: dt, Size: size, Hash: hash, ECN: ecn})
}

func (tr trace) deq(n int, dt time.Duration) trace {
	return append(tr, traceOp{Kind: opDequeue, Count: n, Dt: dt})
}

func (tr trace) jump(t aqm.Time) trace {
	return append(tr, traceOp{Kind: opDequeue, Count: 1, JumpTo: t})
}

// burst returns a count that is sure to overrun the declared packet limit.
func (f Factory) burst() int {
	if f.LimitPackets > 0 {
		return 2*f.LimitPackets + 8
	}
	return 4096
}

func checkFIFO(f Factory) error {
	var tr trace
	for i := range 20 {
		tr = tr.enq(1, 50*time.Microsecond, 1500, uint32(i%3), aqm.NotECT)
	}
	tr = tr.deq(10, time.Microsecond).enq(5, 0, 100, 1, aqm.ECT0).deq(100, time.Microsecond)
	return runTrace(f, 1, tr)
}

// randomOps makes a reproducible trace of n ops from seed.
func randomOps(seed uint64, n int) []traceOp {
	return decode(randomBytes(seed, 4*n))
}

func checkRandomTraces(f Factory) error {
	var errs []error
	for s := range uint64(8) {
		if err := runTrace(f, s, randomOps(s, 400)); err != nil {
			errs = append(errs, fmt.Errorf("trace seed %d: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

func checkLimits(f Factory) error {
	n := f.burst()
	tr := trace{}.enq(n, time.Millisecond, 1500, 1, aqm.NotECT).
		deq(n/4, time.Millisecond).
		enq(n, time.Millisecond, 1500, 2, aqm.ECT0).
		enq(n/2, time.Millisecond, 9000, 3, aqm.ECT1)
	return runTrace(f, 2, tr)
}

func checkOversize(f Factory) error {
	tr := trace{}
	for _, size := range []uint32{65535, 1 << 20, math.MaxUint32 - 1, math.MaxUint32} {
		tr = tr.enq(3, time.Millisecond, size, size, aqm.NotECT).enq(1, 0, 1500, 7, aqm.ECT0)
	}
	if f.LimitBytes > 0 {
		tr = tr.enq(2, time.Millisecond, uint32(f.LimitBytes)+1, 5, aqm.NotECT)
	}
	return runTrace(f, 3, tr.deq(20, time.Millisecond))
}

func checkSizeZero(f Factory) error {
	tr := trace{}.enq(50, 10*time.Microsecond, 0, 1, aqm.NotECT).
		enq(10, time.Millisecond, 0, 2, aqm.ECT0).deq(30, time.Millisecond).
		enq(f.burst(), 0, 0, 3, aqm.NotECT)
	return runTrace(f, 4, tr)
}

func checkECN(f Factory) error {
	// A sustained overload with a standing queue well above any AQM's target,
	// from all four codepoints, so that every marking path runs.
	tr := trace{}
	for round := range 200 {
		for ecn := range aqm.ECN(4) {
			tr = tr.enq(2, 2*time.Millisecond, 1500, uint32(ecn), ecn)
		}
		if round%2 == 0 {
			tr = tr.deq(3, time.Millisecond)
		}
	}
	return runTrace(f, 5, tr)
}

func checkStrayECN(f Factory) error {
	tr := trace{}
	for i := range 64 {
		tr = tr.enq(1, time.Millisecond, 1500, uint32(i%4), aqm.ECN(0xfc|i)).deq(1, 0)
	}
	return runTrace(f, 6, tr.enq(30, time.Millisecond, 1500, 9, 0xff))
}

func checkBackwardTime(f Factory) error {
	tr := trace{}.enq(20, time.Millisecond, 1500, 1, aqm.ECT0).
		enq(5, -15*time.Millisecond, 1500, 1, aqm.NotECT).
		deq(3, -20*time.Millisecond).
		enq(5, -time.Second, 1500, 2, aqm.NotECT).
		deq(10, -time.Millisecond).
		enq(10, 200*time.Millisecond, 1500, 3, aqm.NotECT).
		deq(100, -time.Hour)
	return runTrace(f, 7, tr)
}

func checkHugeJump(f Factory) error {
	tr := trace{}.enq(20, time.Millisecond, 1500, 1, aqm.NotECT).
		jump(hugeTime).
		enq(20, time.Millisecond, 1500, 1, aqm.ECT0).deq(5, time.Millisecond).
		jump(hugeTime+aqm.Time(1000*time.Hour)).
		enq(10, 0, 1500, 2, aqm.NotECT).
		jump(startTime+aqm.Time(time.Millisecond)). // and all the way back
		enq(10, time.Millisecond, 1500, 2, aqm.NotECT).deq(100, time.Millisecond)
	return runTrace(f, 8, tr)
}

func checkIdleGaps(f Factory) error {
	tr := trace{}
	for _, gap := range []time.Duration{time.Second, time.Minute, 10 * time.Hour, 1000 * time.Hour} {
		tr = tr.enq(200, 100*time.Microsecond, 1500, 1, aqm.NotECT).deq(400, 0).
			enq(1, gap, 1500, 1, aqm.NotECT).enq(50, 0, 1500, 2, aqm.ECT0).deq(10, 0)
	}
	return runTrace(f, 9, tr)
}

func checkManyFlows(f Factory) error {
	tr := trace{}
	for i := range 5000 {
		tr = tr.enq(1, time.Microsecond, 200, uint32(i)*2654435761, aqm.ECN(i%4))
		if i%3 == 0 {
			tr = tr.deq(1, 0)
		}
	}
	return runTrace(f, 10, tr)
}

func checkDeterminism(f Factory) error {
	ops := randomOps(99, 600)
	logs := make([][]string, 2)
	for i := range logs {
		h, err := newHarness(f, 42, true)
		if err != nil {
			return err
		}
		if err := h.play(ops); err != nil {
			return err
		}
		logs[i] = h.log
	}
	if !slices.Equal(logs[0], logs[1]) {
		for i := range min(len(logs[0]), len(logs[1])) {
			if logs[0][i] != logs[1][i] {
				return fmt.Errorf("two queues with seed 42 diverge at event %d: %q vs %q", i, logs[0][i], logs[1][i])
			}
		}
		return fmt.Errorf("two queues with seed 42 logged %d vs %d events", len(logs[0]), len(logs[1]))
	}
	return nil
}

// checkAllocs measures allocations per Enqueue+Dequeue in three steady
// states, with a DropFunc that itself does not allocate.
func checkAllocs(f Factory) error {
	var drops int
	q, err := f.New(1, func(aqm.Packet[Payload], aqm.Verdict) { drops++ })
	if err != nil {
		return err
	}
	now := startTime
	var seq Payload
	enq := func(flow uint32, ecn aqm.ECN) {
		seq++
		q.Enqueue(aqm.Packet[Payload]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: flow, ECN: ecn}}, now)
	}
	phases := []struct {
		name string
		step func()
	}{
		{"idle", func() {
			now += aqm.Time(time.Microsecond)
			enq(1, aqm.NotECT)
			q.Dequeue(now)
		}},
		{"standing", func() {
			now += aqm.Time(10 * time.Microsecond)
			enq(uint32(seq%16), aqm.ECN(seq%4))
			for q.Len() > 64 {
				q.Dequeue(now)
			}
		}},
		{"overload", func() {
			now += aqm.Time(time.Millisecond)
			enq(uint32(seq%16), aqm.ECN(seq%4))
			enq(uint32(seq%16), aqm.ECN(seq%4))
			enq(uint32(seq%16), aqm.NotECT)
			q.Dequeue(now)
		}},
	}
	var errs []error
	for _, ph := range phases {
		for range 5000 { // reach the phase's steady state first
			ph.step()
		}
		if a := testing.AllocsPerRun(1000, ph.step); a != 0 {
			errs = append(errs, fmt.Errorf("%s: %.2f allocations per Enqueue+Dequeue, want 0", ph.name, a))
		}
	}
	if _, ok := q.(aqm.BatchQueue[Payload]); !ok {
		return errors.Join(errs...)
	}
	// The burst path, standing and overloaded: bursts of 32 arrivals from
	// 16 flows and all four codepoints, and bursts of 24 or 40 departures.
	ps := make([]aqm.Packet[Payload], 32)
	vs := make([]aqm.Verdict, 32)
	out := make([]aqm.Packet[Payload], 40)
	for _, ph := range []struct {
		name string
		deq  int
	}{{"burst standing", 40}, {"burst overload", 24}} {
		step := func() {
			now += aqm.Time(100 * time.Microsecond)
			for i := range ps {
				seq++
				ps[i] = aqm.Packet[Payload]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: uint32(seq % 16), ECN: aqm.ECN(seq % 4)}}
			}
			aqm.EnqueueBatch(q, ps, vs, now)
			aqm.DequeueBatch(q, out[:ph.deq], now)
		}
		for range 500 {
			step()
		}
		if a := testing.AllocsPerRun(200, step); a != 0 {
			errs = append(errs, fmt.Errorf("%s: %.2f allocations per EnqueueBatch+DequeueBatch, want 0", ph.name, a))
		}
	}
	return errors.Join(errs...)
}

// checkReconfigure plays random traces and reconfigures the queue every
// reconfigureEvery ops, with the full conservation, order and bookkeeping
// checks running throughout.
func checkReconfigure(f Factory) error {
	if f.Reconfigure == nil {
		return nil
	}
	var errs []error
	for s := range uint64(4) {
		h, err := newHarness(f, s, false)
		if err != nil {
			return err
		}
		ops := randomOps(100+s, 400)
		var i int
		h.hook = func(op int) {
			if op%reconfigureEvery != reconfigureEvery-1 {
				return
			}
			if err := f.Reconfigure(h.q, i); err != nil {
				h.failf("Reconfigure(%d): %v", i, err)
			}
			i++
			h.check()
		}
		if err := h.play(ops); err != nil {
			errs = append(errs, fmt.Errorf("trace seed %d: %w", 100+s, err))
		}
	}
	return errors.Join(errs...)
}

const reconfigureEvery = 25
