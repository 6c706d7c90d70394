package aqmtest

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// defaultGlitchRecovery is the recovery window of the ClockGlitch check
// when [Factory.GlitchRecovery] is zero: one second of correct time after
// the wrong readings, the longest upset the time policy of package aqm
// allows.
const defaultGlitchRecovery = time.Second

const (
	// lightGap is the spacing of the ClockGlitch check's light traffic: one
	// 1000-byte Not-ECT packet every 10 ms (0.8 Mbit/s), dequeued 1 ms
	// after it arrives, far below any limit or target.
	lightGap = 10 * time.Millisecond
	// lightWarmup and lightMeasure are the light traffic before the glitch
	// and the window, after the recovery, in which every packet must fare
	// as on the control queue.
	lightWarmup  = 200 * time.Millisecond
	lightMeasure = time.Second
	// hotTime is the congestion episode (twice the drain rate) between the
	// warm-up and the glitch.
	hotTime = time.Second
	// maxAhead bounds how far ahead of the clock an instant in a queue's
	// Detail may lie once the queue has recovered: a day, longer than any
	// period a queue schedules, far shorter than a parked far-future
	// reading (2^62 ns is 146 years).
	maxAhead = 24 * time.Hour
	// overloadTime is the last phase: twice the drain rate, during which
	// the glitched queue must keep its queue about as short as the
	// control queue does (within 1.5 times plus 8 packets, on average), so
	// that an AQM whose control loop a glitch stopped is caught.
	overloadTime = 2 * time.Second
)

// glitch is one wrong-reading scenario: it applies the wrong readings to a
// harness whose clock reads base.
type glitch struct {
	name  string
	apply func(h *harness, base aqm.Time)
}

var glitches = []glitch{
	{"Dequeue at now+2^62", func(h *harness, base aqm.Time) { h.now = base + hugeTime; drainNow(h) }},
	{"Enqueue at now+2^62", func(h *harness, base aqm.Time) { h.now = base + hugeTime; h.enqueue(1000, 1, aqm.NotECT, 0) }},
	{"Dequeue at MaxInt64", func(h *harness, _ aqm.Time) { h.now = math.MaxInt64; drainNow(h) }},
	{"Enqueue at MaxInt64", func(h *harness, _ aqm.Time) {
		h.now = math.MaxInt64
		h.enqueue(1000, 1, aqm.NotECT, 0)
		h.dequeue()
		h.enqueue(1000, 2, aqm.NotECT, 0)
	}},
	{"alternating MinInt64+1 and MaxInt64", func(h *harness, _ aqm.Time) {
		for i := range 6 {
			h.now = math.MinInt64 + 1
			if i%2 == 1 {
				h.now = math.MaxInt64
			}
			h.enqueue(1000, uint32(i), aqm.NotECT, 0)
			h.dequeue()
			h.enqueue(1000, uint32(i), aqm.NotECT, 0)
		}
	}},
}

// drainNow dequeues at the harness's current reading until the queue is
// empty.
func drainNow(h *harness) {
	for range h.q.Len() + 16 {
		if !h.dequeue() {
			return
		}
	}
}

// lightFate is what became of one packet of light traffic.
type lightFate struct {
	verdict   aqm.Verdict
	delivered bool // returned by the dequeues 1 ms after its arrival
}

func (f lightFate) String() string {
	switch {
	case !f.verdict.Accepted():
		return "refused (" + f.verdict.String() + ")"
	case f.delivered:
		return "delivered"
	}
	return "accepted but not delivered within 1ms"
}

// lightStep offers one packet at t and dequeues everything at t+1ms.
func lightStep(h *harness, t aqm.Time) lightFate {
	h.now = t
	v := h.enqueue(1000, 1, aqm.NotECT, 0)
	seq := h.seq
	h.now = t + aqm.Time(time.Millisecond)
	fate := lightFate{verdict: v}
	for range h.q.Len() + 16 {
		if !h.dequeue() {
			break
		}
		fate.delivered = fate.delivered || h.lastDeq.Payload == seq
	}
	return fate
}

// overloadStep offers two 1500-byte Not-ECT packets of four flows at t and
// dequeues one (twice the drain rate: 12 Mbit/s against 24) and returns
// the queue length after.
func overloadStep(h *harness, t aqm.Time) int {
	h.now = t
	h.enqueue(1500, uint32(h.seq%4), aqm.NotECT, 0)
	h.enqueue(1500, uint32(h.seq%4), aqm.NotECT, 0)
	h.dequeue()
	return h.q.Len()
}

// runGlitch plays light traffic on a glitched queue and a control queue of
// the same seed and compares the fate of every packet after the recovery
// window, then drains both, checking conservation.
func runGlitch(f Factory, g glitch) error {
	recovery := f.GlitchRecovery
	if recovery <= 0 {
		recovery = defaultGlitchRecovery
	}
	gh, err := newHarness(f, 11, false)
	if err != nil {
		return err
	}
	ch, err := newHarness(f, 11, false)
	if err != nil {
		return err
	}
	var diffs, parked []string
	ndiff, gDelivered, cDelivered := 0, 0, 0
	var gLen, cLen int // summed over the overload phase
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		t := startTime
		for ; t < startTime+aqm.Time(lightWarmup); t += aqm.Time(lightGap) {
			lightStep(gh, t)
			lightStep(ch, t)
		}
		// A congestion episode, so that the averages, probabilities and
		// counts a glitch could freeze are high. The wrong readings come
		// while the queue still holds its standing queue (a Dequeue at a
		// wrong reading drains it then); the control queue drains at the
		// first step of the recovery.
		for end := t + aqm.Time(hotTime); t < end; t += aqm.Time(time.Millisecond) {
			overloadStep(gh, t)
			overloadStep(ch, t)
		}
		gh.op, ch.op = 1, 1
		g.apply(gh, t)
		gh.op, ch.op = 2, 2
		for end := t + aqm.Time(recovery); t < end; t += aqm.Time(lightGap) {
			lightStep(gh, t)
			lightStep(ch, t)
		}
		gh.op, ch.op = 3, 3
		for i, end := 0, t+aqm.Time(lightMeasure); t < end; i, t = i+1, t+aqm.Time(lightGap) {
			fg, fc := lightStep(gh, t), lightStep(ch, t)
			if fg.delivered {
				gDelivered++
			}
			if fc.delivered {
				cDelivered++
			}
			if fg != fc {
				ndiff++
				if len(diffs) < 3 {
					diffs = append(diffs, fmt.Sprintf("packet %d at t=%d: %v, on the control queue %v", i, int64(t), fg, fc))
				}
			}
		}
		gh.op, ch.op = 4, 4
		for end := t + aqm.Time(overloadTime); t < end; t += aqm.Time(time.Millisecond) {
			gLen += overloadStep(gh, t)
			cLen += overloadStep(ch, t)
		}
		parked = aheadInstants(gh.q, t)
		gh.drain()
		ch.drain()
		return nil
	}()
	var errs []error
	nlight := int(lightMeasure / lightGap)
	switch {
	case ndiff == 0:
	case cDelivered < nlight && gDelivered >= cDelivered-lossMargin(nlight-cDelivered, nlight-gDelivered, nlight):
		// The control queue itself dropped some of the light traffic, so
		// random decisions are in play and the glitch may have shifted the
		// random stream: only the count is compared, within lossMargin.
	default:
		errs = append(errs, fmt.Errorf("light traffic fared differently from the control queue in %d of %d packets after %v of recovery, e.g. %s",
			ndiff, int(lightMeasure/lightGap), recovery, strings.Join(diffs, "; ")))
	}
	steps := int(overloadTime / time.Millisecond)
	if gMean, cMean := float64(gLen)/float64(steps), float64(cLen)/float64(steps); gMean > 1.5*cMean+8 {
		errs = append(errs, fmt.Errorf("under overload after the recovery and measurement, the queue held %.1f packets on average, the control queue %.1f: its AQM did not recover",
			gMean, cMean))
	}
	if len(parked) > 0 {
		errs = append(errs, fmt.Errorf("after %v of recovery, a second of light traffic and %v of overload, Detail still holds instants more than %v ahead of the clock: %s",
			recovery, overloadTime, maxAhead, strings.Join(parked, ", ")))
	}
	if e := gh.err(); e != nil {
		errs = append(errs, fmt.Errorf("glitched queue (op 1 glitch, 2 recovery, 3 measurement, 4 overload, -1 drain): %w", e))
	}
	if e := ch.err(); e != nil {
		errs = append(errs, fmt.Errorf("control queue: %w", e))
	}
	return errors.Join(append(errs, err)...)
}

// aheadInstants lists the aqm.Time fields of q's Detail (if it has one),
// searched through nested structs and arrays, that lie more than maxAhead
// after now.
// lossMargin is how many more of n light packets the glitched queue may
// lose than the control queue when both drop at random (cLost and gLost
// packets): 5 % of n, or three standard deviations of the difference of two
// such counts, whose variance is at most cLost+gLost (each count is
// binomial, with variance below its mean), whichever is larger. A queue
// that did not recover loses far more: a parked one loses all n.
func lossMargin(cLost, gLost, n int) int {
	return max(n/20, int(3*math.Sqrt(float64(cLost+gLost))))
}

func aheadInstants(q aqm.Queue[Payload], now aqm.Time) []string {
	d, ok := detailOf(q)
	if !ok {
		return nil
	}
	var out []string
	timeType := reflect.TypeFor[aqm.Time]()
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch {
		case v.Type() == timeType:
			if t := aqm.Time(v.Int()); t > now && t-now > aqm.Time(maxAhead) {
				out = append(out, fmt.Sprintf("%s=%d (now %d)", path, int64(t), int64(now)))
			}
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					walk(v.Field(i), path+"."+f.Name)
				}
			}
		case v.Kind() == reflect.Array || v.Kind() == reflect.Slice:
			for i := range min(v.Len(), 64) {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(reflect.ValueOf(d), "Detail")
	return out
}

// checkClockGlitch applies each wrong-reading scenario of the time policy
// in package aqm ("# Time") and checks that the queue recovers.
func checkClockGlitch(f Factory) error {
	if f.SkipClockGlitch {
		return nil
	}
	var errs []error
	for _, g := range glitches {
		if err := runGlitch(f, g); err != nil {
			errs = append(errs, fmt.Errorf("after %s: %w", g.name, err))
		}
	}
	return errors.Join(errs...)
}
