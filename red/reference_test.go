package red

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/require"
)

// This file holds a slow float64 model of RED written straight from the
// papers' pseudocode, independent of queue.go: Floyd and Jacobson 1993
// (Figure 2 for the average and idle decay, Figure 17 for the count test),
// Floyd's gentle note (2000) and Floyd, Gummadi and Shenker 2001 (Figure 3,
// one step per 0.5 s instant, no skipping). With Wait, the count test is
// ns-2/ns-3's per-arrival formula (nsWaitProb), turned into one draw per
// gap by multiplying out the survival 1 − p_a arrival by arrival at the
// current p_b (waitSurvival) and signalling when it falls to 1 − R or
// below; the fast path's closed form and integer test are not used. It shares only the exported
// Config (after Validate fills the defaults) and the random stream: it
// draws R from its own rng.Source seeded like the queue, one Uint32 each
// time Figure 17 says "R ← Random[0,1]", mapped to (0, 1] as (u+1)/2^32.
//
// Tolerance. The fast queue computes p_b in Q0.32 (error < 2^−31, see
// doc.go) and the average with a different but equivalent float64
// expression, so a decision may legitimately differ when the model's own
// comparison is within that error of its threshold: |count·p_b − R| ≤
// count·2^−31·(Size/Mean in byte mode) + 1e-12, or the average within 1e-9
// (relative) of a threshold or target; with Wait, as listed at waitDecide
// (the error 2^−31 scaled by max(1, Size/Mean)). On such a near tie, and only then,
// the model accepts the fast queue's outcome and follows it, so the streams
// stay in step. Any other difference fails the test. The number of near
// ties is reported and must stay below 1 in 1000 decisions. The average
// must agree within 1e-9 relative (1e-9 absolute near zero), max_p within
// 1e-12 relative.

type outcome uint8

const (
	outSkip     outcome = iota // oversize, refused before RED
	outBelow                   // avg < min_th
	outBandNone                // in the band, not signalled
	outBandSig                 // in the band, signalled
	outForced                  // forced signal
)

type refPkt struct {
	size uint32
	ecn  aqm.ECN
}

type refRED struct {
	c Config // with defaults filled in

	avg     float64
	count   int
	R       float64
	maxP    float64
	qTime   aqm.Time // when the queue became empty
	hasQ    bool
	started bool
	next    aqm.Time // next ARED instant
	rnd     rng.Source
	queue   []refPkt
	bytes   uint64
	adaptTi bool // a near tie in the last adaptation catch-up
}

func newRef(c Config) *refRED {
	c = filled(c)
	return &refRED{c: c, count: -1, maxP: c.MaxP, rnd: rng.New(c.Seed)}
}

// s is the link's packet time in seconds.
func (m *refRED) s() float64 {
	return 8 * float64(m.c.MeanPacketBytes) / float64(m.c.LinkRate)
}

func (m *refRED) qsize() float64 {
	if m.c.ByteMode {
		return float64(m.bytes)
	}
	return float64(len(m.queue))
}

func nearly(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// avgAt is the average at time t between arrivals: constant while the
// queue is busy, (1−w)^m decayed while it is empty.
func (m *refRED) avgAt(t aqm.Time) float64 {
	if len(m.queue) == 0 && m.hasQ && t > m.qTime {
		idle := float64(uint64(t)-uint64(m.qTime)) / 1e9
		return m.avg * math.Pow(1-m.c.Weight, idle/m.s())
	}
	return m.avg
}

// adapt is Figure 3 of the ARED paper, once per interval, no shortcuts.
func (m *refRED) adapt(now aqm.Time) {
	m.adaptTi = false
	I := aqm.Time(m.c.AdaptInterval)
	if !m.started {
		m.started = true
		m.next = now + I
		return
	}
	if m.next-now > I {
		// Time policy: an instant more than one interval ahead (time went
		// backwards) is re-anchored one interval after now.
		m.next = now + I
		return
	}
	d := float64(m.c.MaxThreshold - m.c.MinThreshold)
	lo := float64(m.c.MinThreshold) + 0.4*d
	hi := float64(m.c.MinThreshold) + 0.6*d
	for m.next <= now {
		a := m.avgAt(m.next)
		if nearly(a, lo) || nearly(a, hi) {
			m.adaptTi = true
		}
		if a > hi && m.maxP < 0.5 {
			m.maxP = math.Min(m.maxP+math.Min(0.01, m.maxP/4), 0.5)
		} else if a < lo && m.maxP > 0.01 {
			m.maxP = math.Max(m.maxP*0.9, 0.01)
		}
		m.next += I
	}
}

// decide runs the paper's arrival logic up to the choice of outcome. It
// returns whether the choice was a near tie.
func (m *refRED) decide(size uint32, now aqm.Time) (outcome, bool) {
	if m.c.LimitBytes > 0 && int64(size) > int64(m.c.LimitBytes) {
		return outSkip, false
	}
	if m.c.Adaptive {
		m.adapt(now)
	}
	// Average (Figure 2).
	if len(m.queue) == 0 {
		// Time policy: backward time decays nothing, and the idle period
		// restarts at the arrival either way.
		if now > m.qTime || !m.hasQ {
			m.avg = m.avgAt(now)
		}
		m.qTime, m.hasQ = now, true
	} else {
		m.avg = (1-m.c.Weight)*m.avg + m.c.Weight*m.qsize()
	}
	minTh, maxTh := float64(m.c.MinThreshold), float64(m.c.MaxThreshold)
	forced := maxTh
	if m.c.Gentle {
		forced = 2 * maxTh
	}
	tie := nearly(m.avg, minTh) || nearly(m.avg, maxTh) || nearly(m.avg, forced)
	switch {
	case m.avg < minTh:
		return outBelow, tie
	case m.avg >= forced:
		return outForced, tie
	}
	var pb float64
	if m.avg < maxTh {
		pb = m.maxP * (m.avg - minTh) / (maxTh - minTh)
	} else {
		pb = m.maxP + (1-m.maxP)*(m.avg-maxTh)/maxTh
	}
	scale := 1.0
	if m.c.ByteMode {
		scale = float64(size) / float64(m.c.MeanPacketBytes)
		pb = math.Min(1, pb*scale)
	}
	c := m.count + 1
	if c <= 0 {
		return outBandNone, tie
	}
	if m.c.Wait {
		sig, wtie := waitDecide(c, pb, m.R, 0x1p-31*math.Max(1, scale))
		if sig {
			return outBandSig, tie || wtie
		}
		return outBandNone, tie || wtie
	}
	cp := float64(c) * pb
	if math.Abs(cp-m.R) <= float64(c)*0x1p-31*math.Max(1, scale)+1e-12 {
		tie = true
	}
	if float64(c) >= m.R/pb { // Figure 17: count ≥ R/p_b
		return outBandSig, tie
	}
	return outBandNone, tie
}

// nsWaitProb is ns's per-arrival probability with Wait for the n-th
// arrival since the last drop, written from ns-3's RedQueueDisc::ModifyP
// (ns-2's modify_p): 0 while n·p < 1, p/(2 − n·p) while n·p < 2, else 1,
// and never above 1.
func nsWaitProb(n int, p float64) float64 {
	np := float64(n) * p
	switch {
	case np < 1:
		return 0
	case np < 2:
		return math.Min(1, p/(2-np))
	}
	return 1
}

// waitSurvival is the chance that ns's Wait rule signals none of the
// arrivals 1..n for a constant p: the literal product of 1 − p_a.
func waitSurvival(n int, p float64) float64 {
	s := 1.0
	for c := 1; c <= n && s > 0; c++ {
		s *= 1 - nsWaitProb(c, p)
	}
	return s
}

// waitDecide is the model's Wait decision for the n-th arrival since the
// last signal with probability p and the gap's R in (0, 1]: signal iff the
// survival S(n) of ns's rule, at the current p, is at most 1 − R (the
// inverse-transform draw of the gap; Figure 17 does the same for
// Figure 2's p_a). tie reports a near tie given an error of up to delta in
// p: count·p near 1 for the last arrivals of the wait (c0 = ⌈1/p⌉ or one
// less), or R·(1 − d) near (n+1−c0)·p, d = c0·p − 1, the comparison S(n) ≤
// 1 − R multiplied by 1 − d (see doc.go).
func waitDecide(n int, p, R, delta float64) (signal, tie bool) {
	s := waitSurvival(n, p)
	signal = s <= 1-R
	if p <= 0 {
		return signal, false
	}
	c0 := math.Ceil(1 / p)
	for _, c := range []float64{c0 - 1, c0, c0 + 1} {
		if c >= 1 && math.Abs(c*p-1) <= c*delta+1e-12 {
			tie = true
		}
	}
	if float64(n) >= c0 {
		d := c0*p - 1
		if math.Abs((s-(1-R))*(1-d)) <= (float64(n)+1)*delta+1e-9 {
			tie = true
		}
	}
	return signal, tie
}

// apply moves count and R for an outcome (Figure 17).
func (m *refRED) apply(o outcome) {
	switch o {
	case outBelow, outForced:
		m.count = -1
	case outBandNone:
		m.count++
		if m.count == 0 {
			m.R = (float64(m.rnd.Uint32()) + 1) / (1 << 32)
		}
	case outBandSig:
		m.count = 0
		m.R = (float64(m.rnd.Uint32()) + 1) / (1 << 32)
	}
}

// verdict turns an outcome into the packet's fate and updates the queue.
func (m *refRED) verdict(o outcome, size uint32, ecn aqm.ECN) aqm.Verdict {
	ecn &= aqm.ECNMask
	v := aqm.Enqueued
	switch o {
	case outSkip:
		return aqm.DroppedOverlimit
	case outBandSig, outForced:
		switch {
		case m.c.DisableECN || ecn == aqm.NotECT:
			return aqm.DroppedEarly
		case o == outForced && !m.c.DisableHardDrop:
			return aqm.DroppedOverload
		}
		v = aqm.Marked
	}
	if len(m.queue) >= m.c.LimitPackets || (m.c.LimitBytes > 0 && int64(m.bytes)+int64(size) > int64(m.c.LimitBytes)) {
		return aqm.DroppedOverlimit
	}
	if v == aqm.Marked {
		ecn = aqm.CE
	}
	m.queue = append(m.queue, refPkt{size, ecn})
	m.bytes += uint64(size)
	return v
}

func (m *refRED) dequeue(now aqm.Time) (refPkt, bool) {
	if len(m.queue) == 0 {
		return refPkt{}, false
	}
	p := m.queue[0]
	m.queue = m.queue[1:]
	m.bytes -= uint64(p.size)
	if len(m.queue) == 0 {
		m.qTime, m.hasQ = now, true
	}
	return p, true
}

// fastOutcome reads which outcome the fast queue chose, from its counters
// and count (white-box, used only to follow near ties).
func fastOutcome[T any](q *Queue[T], before counters) outcome {
	switch {
	case q.cnt.probDrops+q.cnt.probMarks != before.probDrops+before.probMarks:
		return outBandSig
	case q.cnt.forcedDrops+q.cnt.forcedMarks != before.forcedDrops+before.forcedMarks:
		return outForced
	case q.count == -1:
		return outBelow
	}
	return outBandNone
}

// randomRefConfig draws a configuration with small thresholds so that
// random traces cross every region.
func randomRefConfig(r *rand.Rand) Config {
	c := Config{
		Gentle:          r.IntN(2) == 0,
		Adaptive:        r.IntN(3) == 0,
		ByteMode:        r.IntN(3) == 0,
		DisableECN:      r.IntN(3) == 0,
		DisableHardDrop: r.IntN(2) == 0,
		Wait:            r.IntN(2) == 0,
		Seed:            r.Uint64(),
		Weight:          []float64{1, 0.5, 0.2, 0.05, 0.01}[r.IntN(5)],
		MaxP:            []float64{1, 0.5, 0.1, 0.02, 0.013}[r.IntN(5)],
		// s = 8·1000/8e6 = 1 ms per mean-sized packet.
		LinkRate:        8_000_000,
		MeanPacketBytes: 1000,
		AdaptInterval:   []time.Duration{0, 20 * time.Millisecond}[r.IntN(2)],
	}
	if c.Adaptive {
		c.MaxP = min(max(c.MaxP, 0.01), 0.5)
	}
	minTh := 2 + r.IntN(10)
	maxTh := minTh + 1 + r.IntN(3*minTh)
	unit := 1
	if c.ByteMode {
		unit = 1000
	}
	c.MinThreshold, c.MaxThreshold = minTh*unit, maxTh*unit
	c.LimitPackets = maxTh + r.IntN(3*maxTh)
	if r.IntN(3) == 0 {
		c.LimitBytes = maxTh*unit + r.IntN(2*maxTh*unit+1)
		if !c.ByteMode {
			c.LimitBytes = maxTh * 1000
		}
	}
	return c
}

// runReference drives the fast queue and the model with one random trace
// and fails on any decision that differs outside a near tie.
func runReference(t *testing.T, c Config, traceSeed uint64, ops int) (decisions, ties int, seen [5]int) {
	t.Helper()
	r := rand.New(rand.NewPCG(traceSeed, 77))
	q, err := New[uint64](c, nil)
	require.NoError(t, err)
	m := newRef(c)
	now := aqm.Time(time.Second)
	// Phases of arrival pressure so that the average sweeps all regions.
	pEnq := 0.5
	var seq uint64
	for i := range ops {
		if i%200 == 0 {
			pEnq = []float64{0.3, 0.5, 0.6, 0.75, 0.9}[r.IntN(5)]
		}
		switch x := r.IntN(1000); {
		case x < 3: // a long idle gap or a backward step
			now += aqm.Time([]time.Duration{5 * time.Second, 300 * time.Millisecond, -2 * time.Millisecond, 37 * time.Millisecond}[r.IntN(4)])
		default:
			now += aqm.Time(r.IntN(400)) * aqm.Time(time.Microsecond)
		}
		if r.Float64() < pEnq {
			size := uint32([]int{1000, 1000, 1500, 64, 0, 9000}[r.IntN(6)])
			ecn := aqm.ECN(r.IntN(8)) // stray high bits too
			seq++
			before := q.cnt
			fv := q.Enqueue(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: size, ECN: ecn}}, now)
			fo := fastOutcome(q, before)
			if fv == aqm.DroppedOverlimit && m.c.LimitBytes > 0 && int64(size) > int64(m.c.LimitBytes) {
				fo = outSkip
			}
			o, tie := m.decide(size, now)
			if o != fo {
				require.Truef(t, tie, "op %d: model outcome %d, fast %d, avg model %v fast %v, count %d/%d, R %v",
					i, o, fo, m.avg, q.avg, m.count, q.count, m.R)
				ties++
				o = fo
			}
			m.apply(o)
			mv := m.verdict(o, size, ecn)
			require.Equalf(t, mv, fv, "op %d: verdict (outcome %d)", i, o)
			if o != outSkip {
				decisions++
				seen[o]++
			}
			require.InDeltaf(t, m.avg, q.avg, 1e-9*math.Max(1, m.avg), "op %d: average", i)
			if math.Abs(m.maxP-q.maxP) > 1e-12*m.maxP {
				require.Truef(t, m.adaptTi, "op %d: max_p model %v fast %v", i, m.maxP, q.maxP)
				m.maxP = q.maxP
				ties++
			}
			require.Equalf(t, int64(m.count), q.count, "op %d: count", i)
		} else {
			mp, mok := m.dequeue(now)
			fp, fok := q.Dequeue(now)
			require.Equal(t, mok, fok)
			if fok {
				require.Equal(t, mp.size, fp.Size)
				require.Equal(t, mp.ecn, fp.ECN)
			}
		}
		require.Equal(t, len(m.queue), q.Len())
		require.Equal(t, int(m.bytes), q.Backlog())
	}
	return decisions, ties, seen
}

// TestReferenceDecisions protects the fast path's decisions: on random
// traces over random configurations of every variant and mode, each drop,
// mark and accept matches the float64 model of the papers (near ties
// excepted, see the tolerance above).
func TestReferenceDecisions(t *testing.T) {
	runs, ops := 150, 4000
	if testing.Short() {
		runs, ops = 40, 2000
	}
	r := rand.New(rand.NewPCG(20240601, 3))
	var decisions, ties, waitSignals, waitConfigs int
	var seen [5]int
	for range runs {
		c := randomRefConfig(r)
		d, ti, s := runReference(t, c, r.Uint64(), ops)
		decisions += d
		ties += ti
		for i := range s {
			seen[i] += s[i]
		}
		if c.Wait {
			waitConfigs++
			waitSignals += s[outBandSig]
		}
	}
	t.Logf("decisions %d, near ties %d, outcomes below/band/signal/forced = %d/%d/%d/%d; Wait: %d configs, %d signals",
		decisions, ties, seen[outBelow], seen[outBandNone], seen[outBandSig], seen[outForced], waitConfigs, waitSignals)
	require.LessOrEqual(t, ties*1000, decisions, "too many near ties")
	require.Greater(t, waitSignals, 100, "Wait barely exercised")
	// The traces must exercise every region.
	for _, o := range []outcome{outBelow, outBandNone, outBandSig, outForced} {
		require.Greater(t, seen[o], 100, "outcome %d barely exercised", o)
	}
}

// TestReferenceLongIdleAdaptive protects ARED's closed-form catch-up: after
// idle gaps of up to an hour the adapted max_p equals the model's literal
// one-step-per-interval loop.
func TestReferenceLongIdleAdaptive(t *testing.T) {
	for _, gap := range []time.Duration{700 * time.Millisecond, 3 * time.Second, time.Minute, time.Hour} {
		for _, w := range []float64{0.5, 0.01, 0.0005} {
			c := Config{Gentle: true, Adaptive: true, MinThreshold: 10, MaxThreshold: 30, Weight: w,
				LinkRate: 8_000_000, Seed: 5}
			q, err := New[int](c, nil)
			require.NoError(t, err)
			m := newRef(c)
			now := aqm.Time(time.Second)
			enq := func() {
				before := q.cnt
				fv := q.Enqueue(aqm.Packet[int]{Meta: aqm.Meta{Size: 1000}}, now)
				o, tie := m.decide(1000, now)
				fo := fastOutcome(q, before)
				if o != fo {
					require.True(t, tie)
					o = fo
				}
				m.apply(o)
				require.Equal(t, m.verdict(o, 1000, aqm.NotECT), fv)
				if math.Abs(m.maxP-q.maxP) > 1e-12*m.maxP {
					require.True(t, m.adaptTi, "gap %v w %v: max_p model %v fast %v", gap, w, m.maxP, q.maxP)
					m.maxP = q.maxP
				}
			}
			// Build a standing queue of 45 packets (above the band), let it
			// adapt for 5 s, then drain it and stay idle for gap.
			for range 45 {
				enq()
				now += aqm.Time(time.Microsecond)
			}
			for range 5000 {
				now += aqm.Time(time.Millisecond)
				enq()
				q.Dequeue(now)
				m.dequeue(now)
			}
			for q.Len() > 0 {
				q.Dequeue(now)
				m.dequeue(now)
			}
			now += aqm.Time(gap)
			enq()
			require.InDelta(t, m.maxP, q.maxP, 1e-12, "gap %v w %v", gap, w)
			require.GreaterOrEqual(t, q.maxP, minAdaptiveMaxP)
			require.LessOrEqual(t, q.maxP, maxAdaptiveMaxP)
		}
	}
}
