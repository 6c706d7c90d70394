package codel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

const t0 = aqm.Time(time.Second)

func ms(f float64) aqm.Time { return t0 + aqm.Time(math.Round(f*1e6)) }

// step is one Decide call at a fixed instant.
type step struct {
	at       aqm.Time
	sojourn  time.Duration
	backlog  int
	ecn      aqm.ECN
	want     Action
	count    uint32 // 0: don't check
	dropping int    // 0: don't check, 1: false, 2: true
}

func runSteps(t *testing.T, cfg Config, steps []step) *Controller {
	t.Helper()
	require.NoError(t, cfg.Validate())
	p := cfg.Params()
	var c Controller
	for i, s := range steps {
		got := c.Decide(&p, s.at, s.sojourn, s.backlog, s.ecn)
		require.Equalf(t, s.want, got, "step %d at %v", i, time.Duration(s.at-t0))
		st := c.State()
		if s.count != 0 {
			require.Equalf(t, s.count, st.Count, "step %d count", i)
		}
		if s.dropping != 0 {
			require.Equalf(t, s.dropping == 2, st.Dropping, "step %d dropping", i)
		}
	}
	return &c
}

// Spacing values below are interval/sqrt(count) computed by hand, truncated
// to nanoseconds: 100 ms/sqrt(2) = 70.710678 ms, /sqrt(3) = 57.735026 ms,
// /sqrt(4) = 50 ms, /sqrt(5) = 44.721359 ms.

// TestControllerSchedule protects the RFC 8289 schedule: the first drop one
// interval after the sojourn time rose above target (>= at the boundary),
// drop spacing interval/sqrt(count) with count raised only while the next
// packet stays above target, catch-up drops in one call, exit below target,
// and re-entry at count = delta within 16 intervals.
func TestControllerSchedule(t *testing.T) {
	const big = 100000
	c := runSteps(t, Config{Control: Control{DisableECN: true}}, []step{
		{at: ms(0), sojourn: 5 * time.Millisecond, backlog: big, want: Deliver}, // at target: deadline t0+100ms
		{at: ms(99.999999), sojourn: 10 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(100), sojourn: 10 * time.Millisecond, backlog: big, want: Drop, count: 1, dropping: 2},
		{at: ms(100), sojourn: 10 * time.Millisecond, backlog: big, want: Deliver}, // the packet after the entry drop
		{at: ms(199.999999), sojourn: 10 * time.Millisecond, backlog: big, want: Deliver, count: 1},
		{at: ms(200), sojourn: 10 * time.Millisecond, backlog: big, want: Drop, count: 1},
		{at: ms(200), sojourn: 10 * time.Millisecond, backlog: big, want: Deliver, count: 2}, // next at 270.710678
		{at: ms(270.710677), sojourn: 10 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(270.710678), sojourn: 10 * time.Millisecond, backlog: big, want: Drop, count: 2},
		{at: ms(270.710678), sojourn: 10 * time.Millisecond, backlog: big, want: Deliver, count: 3}, // next at 328.445704
		// A late dequeue catches up: 328.445704 and 378.445704 are both due.
		{at: ms(400), sojourn: 10 * time.Millisecond, backlog: big, want: Drop, count: 3},
		{at: ms(400), sojourn: 10 * time.Millisecond, backlog: big, want: Drop, count: 4},
		{at: ms(400), sojourn: 10 * time.Millisecond, backlog: big, want: Deliver, count: 5}, // next at 423.167063
		// Below target: leave the dropping state.
		{at: ms(401), sojourn: 4999999, backlog: big, want: Deliver, dropping: 1},
		// Above again: a new deadline, then re-entry 78.8 ms after the last
		// scheduled drop with count = 5 - 1 = 4, spacing 50 ms.
		{at: ms(402), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(502), sojourn: 6 * time.Millisecond, backlog: big, want: Drop, count: 4, dropping: 2},
		{at: ms(502), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(551.999999), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(552), sojourn: 6 * time.Millisecond, backlog: big, want: Drop, count: 4},
		{at: ms(552), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver, count: 5},
	})
	require.Equal(t, ms(552+44.721359), c.State().DropNext)
	require.Equal(t, uint32(4), c.State().LastCount)
}

// TestControllerReentryTooLate protects the other side of the re-entry rule:
// an episode that starts 16 intervals or more after the last scheduled drop
// starts again at count 1.
func TestControllerReentryTooLate(t *testing.T) {
	const big = 100000
	runSteps(t, Config{Control: Control{DisableECN: true}}, []step{
		{at: ms(0), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(100), sojourn: 6 * time.Millisecond, backlog: big, want: Drop, count: 1},
		{at: ms(100), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(200), sojourn: 6 * time.Millisecond, backlog: big, want: Drop},
		{at: ms(200), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver, count: 2},
		{at: ms(270.710678), sojourn: 6 * time.Millisecond, backlog: big, want: Drop},
		{at: ms(270.710678), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver, count: 3},
		{at: ms(271), sojourn: 0, backlog: big, want: Deliver, dropping: 1}, // delta = 3-1 = 2
		// Last scheduled drop 328.445704; 16 intervals later is 1928.445704.
		{at: ms(1828.445704), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(1928.445704), sojourn: 6 * time.Millisecond, backlog: big, want: Drop, count: 1},
	})
}

// TestControllerStrictDeadline protects the Linux/ns-3 option: with
// StrictDeadline the first drop needs now strictly after the deadline.
func TestControllerStrictDeadline(t *testing.T) {
	const big = 100000
	runSteps(t, Config{Control: Control{DisableECN: true, StrictDeadline: true}}, []step{
		{at: ms(0), sojourn: 5 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(100), sojourn: 10 * time.Millisecond, backlog: big, want: Deliver},
		{at: ms(100.000001), sojourn: 10 * time.Millisecond, backlog: big, want: Drop, count: 1},
	})
}

// TestControllerLinuxCount protects the LinuxCount option: count rises
// before each scheduled drop, so a drop followed by a below-target packet
// still counts, and the next episode resumes one higher than the RFC's.
func TestControllerLinuxCount(t *testing.T) {
	const big = 100000
	for _, linux := range []bool{false, true} {
		t.Run(fmt.Sprint("linux=", linux), func(t *testing.T) {
			want := map[bool]uint32{false: 1, true: 2}[linux]
			runSteps(t, Config{Control: Control{DisableECN: true, LinuxCount: linux}}, []step{
				{at: ms(0), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver},
				{at: ms(100), sojourn: 6 * time.Millisecond, backlog: big, want: Drop, count: 1},
				{at: ms(100), sojourn: 6 * time.Millisecond, backlog: big, want: Deliver},
				{at: ms(200), sojourn: 6 * time.Millisecond, backlog: big, want: Drop, count: want},
				{at: ms(200), sojourn: 1 * time.Millisecond, backlog: big, want: Deliver, count: want, dropping: 1},
			})
		})
	}
}

// TestControllerMTUGuard protects the "less than one MTU queued" guard: with
// at most MTUBytes left behind the head packet CoDel never drops, however
// long the sojourn; one byte more and it does.
func TestControllerMTUGuard(t *testing.T) {
	runSteps(t, Config{Control: Control{DisableECN: true}}, []step{
		{at: ms(0), sojourn: time.Second, backlog: 1514, want: Deliver},
		{at: ms(500), sojourn: time.Second, backlog: 1514, want: Deliver},
		{at: ms(1000), sojourn: time.Second, backlog: 0, want: Deliver, dropping: 1},
		{at: ms(1001), sojourn: time.Second, backlog: 1515, want: Deliver}, // deadline set now
		{at: ms(1101), sojourn: time.Second, backlog: 1515, want: Drop, dropping: 2},
	})
	runSteps(t, Config{Control: Control{DisableECN: true, MTUBytes: 9000}}, []step{
		{at: ms(0), sojourn: time.Second, backlog: 9000, want: Deliver},
		{at: ms(200), sojourn: time.Second, backlog: 9000, want: Deliver, dropping: 1},
	})
}

// TestControllerECN protects marking: ECN-capable packets are marked (and
// sent) where Not-ECT ones are dropped; with DisableECN all are dropped; a
// mark at the scheduled time advances the schedule like a drop.
func TestControllerECN(t *testing.T) {
	const big = 100000
	runSteps(t, Config{}, []step{
		{at: ms(0), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.ECT0, want: Deliver},
		{at: ms(100), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.ECT0, want: Mark, count: 1, dropping: 2},
		{at: ms(150), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.ECT1, want: Deliver},
		{at: ms(200), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.CE, want: Mark, count: 1},
		// Next call: still above target, so count 2, next at 270.710678.
		{at: ms(201), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.ECT0, want: Deliver, count: 2},
		{at: ms(270.710678), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.NotECT, want: Drop},
		{at: ms(270.710678), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.ECT0, want: Deliver, count: 3},
	})
	runSteps(t, Config{Control: Control{DisableECN: true}}, []step{
		{at: ms(0), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.ECT0, want: Deliver},
		{at: ms(100), sojourn: 6 * time.Millisecond, backlog: big, ecn: aqm.ECT0, want: Drop},
	})
}

// TestControllerCEThreshold protects shallow marking: strictly above the
// threshold, ECN-capable only, ECT(1)/CE only with the selector, and
// independent of DisableECN.
func TestControllerCEThreshold(t *testing.T) {
	const th = time.Millisecond
	runSteps(t, Config{Control: Control{CEThreshold: th, DisableECN: true}}, []step{
		{at: ms(0), sojourn: th, ecn: aqm.ECT0, want: Deliver},
		{at: ms(1), sojourn: th + 1, ecn: aqm.ECT0, want: MarkCE},
		{at: ms(2), sojourn: th + 1, ecn: aqm.NotECT, want: Deliver},
		{at: ms(3), sojourn: th + 1, ecn: aqm.ECT1, want: MarkCE},
	})
	runSteps(t, Config{Control: Control{CEThreshold: th, CEThresholdECT1Only: true}}, []step{
		{at: ms(0), sojourn: th + 1, ecn: aqm.ECT0, want: Deliver},
		{at: ms(1), sojourn: th + 1, ecn: aqm.ECT1, want: MarkCE},
		{at: ms(2), sojourn: th + 1, ecn: aqm.CE, want: MarkCE},
		{at: ms(3), sojourn: th, ecn: aqm.ECT1, want: Deliver},
	})
}

// TestControllerTinyInterval protects against a zero control-law step: with
// a 2 ns interval the step is clamped to 1 ns, so the schedule advances.
func TestControllerTinyInterval(t *testing.T) {
	p := Config{Control: Control{Target: 1, Interval: 2, DisableECN: true}}.Params()
	var c Controller
	c.setCount(1_000_000)
	require.Equal(t, int64(1), lawStep(p.interval, c.count, c.invSqrt))
	require.Equal(t, t0+1, c.law(&p, t0))
}

// TestControllerTimeExtremes protects the saturating time arithmetic: a
// deadline or schedule near the end of the int64 range does not wrap to the
// past, and backward time does not move state back.
func TestControllerTimeExtremes(t *testing.T) {
	p := Config{Control: Control{DisableECN: true}}.Params()
	var c Controller
	end := aqm.Time(1<<63 - 1)
	require.Equal(t, Deliver, c.Decide(&p, end-10, time.Hour, 1<<20, 0))
	require.Equal(t, end, c.State().FirstAbove)
	require.Equal(t, Drop, c.Decide(&p, end, time.Hour, 1<<20, 0))
	require.Equal(t, end, c.State().DropNext)
	require.Equal(t, int64(1<<63-1), subSat(end, -5))
	require.Equal(t, int64(-1<<63), subSat(-5, end))
	require.Equal(t, int64(-1<<63)+5, int64(addSat(-1<<63+10, -5)))
}

// TestDeliverIfBelowTarget protects the exported fast path that FQ-CoDel
// inlines: on random controller histories (drops, marks, CE threshold on
// and off), whenever it reports true, Decide on a copy of the same
// controller returns Deliver and leaves the same state, and whenever it
// reports false it has changed nothing.
func TestDeliverIfBelowTarget(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	hits, misses := 0, 0
	for _, cfg := range []Config{{}, {Control: Control{CEThreshold: 2 * time.Millisecond}}, {Control: Control{DisableECN: true}}} {
		p := cfg.Params()
		var c Controller
		now := aqm.Time(time.Second)
		for range 200000 {
			now += aqm.Time(r.Int64N(int64(3 * time.Millisecond)))
			sj := time.Duration(r.Int64N(int64(12*time.Millisecond))) - time.Millisecond // some negative
			ecn := aqm.ECN(r.IntN(4))
			backlog := r.IntN(20000)
			before, viaDecide := c, c
			if c.DeliverIfBelowTarget(&p, sj) {
				hits++
				if a := viaDecide.Decide(&p, now, sj, backlog, ecn); a != Deliver || viaDecide != c {
					t.Fatalf("fast path delivered; Decide says %v, state %+v vs %+v", a, viaDecide, c)
				}
				continue
			}
			misses++
			if c != before {
				t.Fatalf("fast path declined but changed the state: %+v -> %+v", before, c)
			}
			c.Decide(&p, now, sj, backlog, ecn)
		}
	}
	if hits == 0 || misses == 0 {
		t.Fatalf("trace did not exercise both paths: %d hits, %d misses", hits, misses)
	}
}

// TestActionString protects the names that logs and test failures print:
// each action has its own, and an unknown value says so.
func TestActionString(t *testing.T) {
	want := map[Action]string{Deliver: "deliver", Drop: "drop", Mark: "mark", MarkCE: "mark-ce", MarkCE + 1: "action(?)"}
	for a, s := range want {
		require.Equal(t, s, a.String())
	}
}
