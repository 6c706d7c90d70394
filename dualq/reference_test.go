package dualq_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// refModel is a slow float64 DualPI2 written from RFC 9332 Appendix A
// (Figures "DualPI2 enqueue/dequeue/update" of the overload-aware
// variant, A.2), independent of the fast code:
//
//   - classification: ECN mod 2 == 1 to L (or any ECT with AnyECTToL4S);
//   - update every Tupdate: curq = max(lq.time(), cq.time());
//     p += alpha·(curq − target) + beta·(curq − prevq); clamp to [0, 1]
//     (or [0, 1/k] with OverflowOnOverload); p_CL = k·p; p_C = p²;
//   - dequeue L: if p_CL < 1: mark with p_L = max(laqm, p_CL); else drop
//     with p_C, otherwise mark; dequeue C: on a p_C hit, drop if Not-ECT or
//     p_C ≥ p_Cmax (= overload), else mark;
//
// with the choices this package documents on top of the RFC: the Linux
// credit WRR (or the time-shifted FIFO), the Linux step (sojourn > step),
// no coupled or Classic action below 2·MTU of backlog after the pop, the
// RFC's recur() replaced by a uniform 32-bit random roll drawn only when
// the probability's 2^32-scaled value is in [1, 2^32), updates on the grid
// first + n·Tupdate before the event at now, and delays capped at 2^34 ns.
type refModel struct {
	cfg       dualq.Config // with defaults filled in by the test
	lq, cq    []aqm.Packet[uint64]
	p, prevq  float64 // p' and the previous queue delay, seconds
	next      aqm.Time
	started   bool
	credit    float64
	rnd       rng.Source
	out       []string
	border    bool // the last decision was within rounding distance of its threshold
	wc, wl    float64
	maxDelayS float64
	noStep    map[uint64]bool // L4S packets that found fewer than StepMinQueuePackets queued
}

func newRef(cfg dualq.Config) *refModel {
	m := &refModel{cfg: cfg, rnd: rng.New(cfg.Seed), maxDelayS: float64(int64(1)<<34) / 1e9, noStep: map[uint64]bool{}}
	m.wc = float64(max(cfg.ClassicProtectionPercent, 0))
	m.wl = 100 - m.wc
	m.credit = float64(cfg.MTUBytes) * (m.wc - m.wl)
	return m
}

func secs(d time.Duration) float64 { return float64(d) / 1e9 }

func (m *refModel) age(ts, now aqm.Time) float64 {
	if now <= ts {
		return 0
	}
	return math.Min(float64(now-ts)/1e9, m.maxDelayS)
}

func (m *refModel) pmax() float64 {
	if m.cfg.OverflowOnOverload {
		return 1 / float64(m.cfg.CouplingFactor)
	}
	return 1
}

func (m *refModel) tick(now aqm.Time) {
	if !m.started {
		m.started = true
		m.next = now + aqm.Time(m.cfg.Tupdate)
		return
	}
	if m.next > now && uint64(m.next)-uint64(now) > uint64(m.cfg.Tupdate) {
		// The time policy: an update scheduled more than one Tupdate
		// ahead (after time ran backwards) is re-anchored one Tupdate
		// from now, with no update run.
		m.next = now + aqm.Time(m.cfg.Tupdate)
		return
	}
	for m.next <= now {
		tu := m.next
		curq := 0.0
		if len(m.lq) > 0 {
			curq = m.age(m.lq[0].Enqueued, tu)
		}
		if len(m.cq) > 0 {
			curq = math.Max(curq, m.age(m.cq[0].Enqueued, tu))
		}
		m.p += m.cfg.Alpha*(curq-secs(m.cfg.Target)) + m.cfg.Beta*(curq-m.prevq)
		m.p = math.Min(math.Max(m.p, 0), m.pmax())
		m.prevq = curq
		m.next += aqm.Time(m.cfg.Tupdate)
	}
}

const borderWindow = 16 // in 2^-32 units: fixed-point rounding of p', p_C, p_CL

// roll is the random decision with probability x.
func (m *refModel) roll(x float64) bool {
	thr := x * (1 << 32)
	if math.Abs(thr-1) < borderWindow || math.Abs(thr-(1<<32)) < borderWindow {
		m.border = true
	}
	if thr < 1 {
		return false
	}
	if thr >= 1<<32 {
		return true
	}
	u := float64(m.rnd.Uint32())
	if math.Abs(u-thr) < borderWindow {
		m.border = true
	}
	return u < thr
}

func (m *refModel) isL(e aqm.ECN) bool {
	if m.cfg.AnyECTToL4S {
		return e != aqm.NotECT
	}
	return e%2 == 1
}

func (m *refModel) bytes(q []aqm.Packet[uint64]) int {
	n := 0
	for _, p := range q {
		n += int(p.Size)
	}
	return n
}

func (m *refModel) enqueue(p aqm.Packet[uint64], now aqm.Time) {
	p.ECN &= aqm.ECNMask
	p.Enqueued = now
	m.tick(now)
	if len(m.lq)+len(m.cq) >= m.cfg.LimitPackets || m.bytes(m.lq)+m.bytes(m.cq)+int(p.Size) > m.cfg.LimitBytes {
		m.out = append(m.out, fmt.Sprintf("enq %d refused", p.Payload))
		return
	}
	toL := m.isL(p.ECN)
	// Linux drop_enqueue: the coupled and Classic AQM at arrival, the
	// safeguard on what the arrival finds.
	n := len(m.lq) + len(m.cq)
	if m.cfg.DropEnqueue && (m.bytes(m.lq)+m.bytes(m.cq) >= 2*m.cfg.MTUBytes || n >= max(m.cfg.LimitPackets/2, 1)) {
		k := float64(m.cfg.CouplingFactor)
		pCL, pC := math.Min(k*m.p, 1), m.p*m.p
		overload := !m.cfg.OverflowOnOverload && k*m.p >= 1
		switch {
		case toL && overload:
			if m.roll(pC) {
				m.out = append(m.out, fmt.Sprintf("enq %d refused", p.Payload))
				return
			}
			p.ECN = aqm.CE
		case toL:
			if m.roll(pCL) {
				p.ECN = aqm.CE
			}
		default:
			if m.roll(pC) {
				if p.ECN == aqm.NotECT || overload {
					m.out = append(m.out, fmt.Sprintf("enq %d refused", p.Payload))
					return
				}
				p.ECN = aqm.CE
			}
		}
	}
	if toL {
		m.noStep[p.Payload] = len(m.lq) < m.cfg.StepMinQueuePackets
		m.lq = append(m.lq, p)
	} else {
		m.cq = append(m.cq, p)
	}
	m.out = append(m.out, fmt.Sprintf("enq %d ok", p.Payload))
}

func (m *refModel) laqm(sojourn float64, lenAfter int) float64 {
	if m.cfg.StepThresholdPackets != 0 { // Linux's packet step
		if lenAfter > m.cfg.StepThresholdPackets {
			return 1
		}
		return 0
	}
	if !m.cfg.Ramp {
		if sojourn > secs(m.cfg.StepThreshold) {
			return 1
		}
		return 0
	}
	minTh, rng := secs(m.cfg.RampMinThreshold), secs(m.cfg.RampRange)
	switch {
	case lenAfter < 1: // Th_len = 1 packet
		return 0
	case sojourn >= minTh+rng:
		return 1
	case sojourn > minTh:
		return (sojourn - minTh) / rng
	}
	return 0
}

func (m *refModel) dequeue(now aqm.Time) {
	m.tick(now)
	k := float64(m.cfg.CouplingFactor)
	pCL, pC := math.Min(k*m.p, 1), m.p*m.p
	overload := !m.cfg.OverflowOnOverload && k*m.p >= 1
	if math.Abs(k*m.p-1) < 1e-9 {
		m.border = true
	}
	for len(m.lq)+len(m.cq) > 0 {
		var serveL bool
		switch {
		case len(m.lq) == 0:
		case len(m.cq) == 0:
			serveL = true
		case m.cfg.TimeShiftedFIFO:
			serveL = m.age(m.lq[0].Enqueued, now)+secs(m.cfg.TimeShift) > m.age(m.cq[0].Enqueued, now) // lq.time() + tshift > cq.time()
			if m.lq[0].Enqueued > now || m.cq[0].Enqueued > now {
				serveL = int64(m.lq[0].Enqueued) < int64(m.cq[0].Enqueued)+int64(m.cfg.TimeShift)
			}
		default:
			serveL = m.credit <= 0
		}
		cWaits, lWaits := len(m.cq) > 0, len(m.lq) > 0
		var p aqm.Packet[uint64]
		if serveL {
			p, m.lq = m.lq[0], m.lq[1:]
		} else {
			p, m.cq = m.cq[0], m.cq[1:]
		}
		active := !m.cfg.DropEnqueue && (m.bytes(m.lq)+m.bytes(m.cq) >= 2*m.cfg.MTUBytes || len(m.lq)+len(m.cq) >= max(m.cfg.LimitPackets/2, 1))
		if serveL {
			if !(active && overload) {
				var pl float64
				if !m.noStep[p.Payload] {
					pl = m.laqm(m.age(p.Enqueued, now), len(m.lq))
				}
				if active {
					pl = math.Max(pl, pCL)
				}
				if m.roll(pl) {
					p.ECN = aqm.CE
				}
			} else {
				if m.roll(pC) {
					m.out = append(m.out, fmt.Sprintf("drop %d %v", p.Payload, aqm.DroppedOverload))
					continue
				}
				p.ECN = aqm.CE // recur(lq, p_CL) with p_CL ≥ 1
			}
			if cWaits {
				m.credit += m.wc * float64(p.Size)
			}
		} else {
			if active && m.roll(pC) {
				if p.ECN == aqm.NotECT {
					m.out = append(m.out, fmt.Sprintf("drop %d %v", p.Payload, aqm.DroppedEarly))
					continue
				}
				if overload {
					m.out = append(m.out, fmt.Sprintf("drop %d %v", p.Payload, aqm.DroppedOverload))
					continue
				}
				p.ECN = aqm.CE
			}
			if lWaits {
				m.credit -= m.wl * float64(p.Size)
			}
		}
		m.out = append(m.out, fmt.Sprintf("deq %d %v", p.Payload, p.ECN))
		return
	}
	m.credit = float64(m.cfg.MTUBytes) * (m.wc - m.wl)
	m.out = append(m.out, "deq none")
}

// gridGain rounds a gain in Hz to the fixed-point grid of the fast code
// (2^-48 probability per ns), so that the reference integrates exactly the
// same increments.
func gridGain(g float64) float64 { return math.Round(g*(1<<48)/1e9) * 1e9 / (1 << 48) }

// fill spells out every default the fast code applies, for the model.
func fill(c dualq.Config) dualq.Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Target, dualq.DefaultTarget)
	def(&c.Tupdate, dualq.DefaultTupdate)
	if c.StepThresholdPackets == 0 {
		def(&c.StepThreshold, dualq.DefaultStepThreshold)
	}
	def(&c.RampMinThreshold, dualq.DefaultRampMinThreshold)
	def(&c.RampRange, dualq.DefaultRampRange)
	def(&c.TimeShift, dualq.DefaultTimeShift)
	if c.Alpha == 0 {
		c.Alpha = dualq.DefaultAlpha
	}
	if c.Beta == 0 {
		c.Beta = dualq.DefaultBeta
	}
	c.Alpha, c.Beta = gridGain(c.Alpha), gridGain(c.Beta)
	if c.CouplingFactor == 0 {
		c.CouplingFactor = 2
	}
	if c.ClassicProtectionPercent == 0 {
		c.ClassicProtectionPercent = 10
	}
	if c.LimitPackets == 0 {
		c.LimitPackets = dualq.DefaultLimitPackets
	}
	if c.MTUBytes == 0 {
		c.MTUBytes = 1500
	}
	if c.LimitBytes == 0 {
		c.LimitBytes = c.LimitPackets * 2 * c.MTUBytes
	}
	return c
}

// refTrace drives the fast queue and the model with the same random trace
// and returns the index of the first differing decision (−1 if none) and
// whether that difference followed a borderline decision.
func refTrace(t *testing.T, cfg dualq.Config, seed uint64, nops int) (int, bool, int) {
	cfg = fill(cfg)
	cfg.Seed = seed
	var fastOut []string
	q, err := dualq.New(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) {
		fastOut = append(fastOut, fmt.Sprintf("drop %d %v", p.Payload, why))
	})
	require.NoError(t, err)
	m := newRef(cfg)
	r := rand.New(rand.NewPCG(seed, 99))
	now := aqm.Time(time.Second)
	var id uint64
	load := 0.5
	decisions := 0
	for i := range nops {
		if i%500 == 0 {
			load = 0.3 + 0.5*r.Float64() // phases of under- and overload
		}
		switch x := r.IntN(1000); {
		case x < 2:
			now += aqm.Time(r.Int64N(int64(2 * time.Second)))
		case x < 20:
			now += aqm.Time(r.Int64N(int64(50 * time.Millisecond)))
		default:
			now += aqm.Time(r.Int64N(int64(300 * time.Microsecond)))
		}
		m.border = false
		before := len(m.out)
		if r.Float64() < load {
			id++
			ecn := aqm.ECN(r.IntN(4))
			size := uint32(64 + r.IntN(1437))
			if r.IntN(50) == 0 {
				size = uint32(r.IntN(3) * 9000)
			}
			p := aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: size, ECN: ecn}}
			v := q.Enqueue(p, now)
			s := "ok"
			if !v.Accepted() {
				s = "refused"
			}
			fastOut = append(fastOut, fmt.Sprintf("enq %d %s", id, s))
			m.enqueue(p, now)
		} else {
			p, ok := q.Dequeue(now)
			if ok {
				fastOut = append(fastOut, fmt.Sprintf("deq %d %v", p.Payload, p.ECN))
			} else {
				fastOut = append(fastOut, "deq none")
			}
			m.dequeue(now)
		}
		for j := before; j < max(len(m.out), len(fastOut)); j++ {
			if j >= len(m.out) || j >= len(fastOut) || m.out[j] != fastOut[j] {
				a, b := "-", "-"
				if j < len(m.out) {
					a = m.out[j]
				}
				if j < len(fastOut) {
					b = fastOut[j]
				}
				if !m.border {
					t.Logf("seed %d op %d: model %q, fast %q (p'=%v vs %v)", seed, i, a, b, m.p, q.Detail().Prob)
				}
				return i, m.border, decisions
			}
		}
		decisions += len(m.out) - before
		if d := q.Detail().Prob; math.Abs(d-m.p) > 1e-9 {
			t.Logf("seed %d op %d: p' model %v fast %v", seed, i, m.p, d)
			return i, false, decisions
		}
	}
	st := q.Stats()
	refSignals.marks += st.Marked.Packets
	refSignals.drops += st.DroppedEarly.Packets
	refSignals.overload += st.DroppedOverload.Packets
	return -1, false, decisions
}

// refSignals counts what the compared traces exercised.
var refSignals struct{ marks, drops, overload uint64 }

// TestReference protects the fast fixed-point code against the slow float64
// model of RFC 9332's pseudocode: on random traces (under- and overload,
// idle gaps, all ECN codepoints, all schedulers and native AQMs) every
// verdict, dequeued packet, mark and drop is identical, and p' agrees to
// 1e-9 after every operation.
//
// Tolerance: the fast code rounds p', p_C = p'^2 and p_CL = k·p' to
// integers on the 2^32 scale (p_C by truncating p' first), so a decision
// whose 32-bit roll lands within 16 units (3.7·10^-9) of its threshold, or
// whose threshold is within 16 units of 0 or 1 (the draw/no-draw edges),
// may differ. The model flags such borderline decisions; a difference is
// accepted only right after one (the trace then stops, as the states have
// diverged), and such stops must stay rare. Gains are rounded to the fast
// code's 2^-48-per-ns grid (gridGain) so that both integrate the same
// increments.
func TestReference(t *testing.T) {
	configs := []struct {
		name string
		cfg  dualq.Config
	}{
		{"defaults", dualq.Config{}},
		{"aggressive", dualq.Config{Target: 2 * time.Millisecond, Tupdate: 2 * time.Millisecond, Alpha: 4, Beta: 40, MTUBytes: 200}},
		{"ramp-anyect", dualq.Config{Ramp: true, AnyECTToL4S: true, Target: 3 * time.Millisecond, Alpha: 2, Beta: 20, MTUBytes: 300}},
		{"tsfifo", dualq.Config{TimeShiftedFIFO: true, TimeShift: 2 * time.Millisecond, Target: 2 * time.Millisecond, Alpha: 3, Beta: 30}},
		{"overflow-k1", dualq.Config{OverflowOnOverload: true, CouplingFactor: 1, Target: 2 * time.Millisecond, Alpha: 3, Beta: 30, ClassicProtectionPercent: 30}},
		{"k4-wc50-small", dualq.Config{CouplingFactor: 4, ClassicProtectionPercent: 50, LimitPackets: 40, LimitBytes: 30000, Alpha: 1, Beta: 10, MTUBytes: 100}},
		{"strict", dualq.Config{ClassicProtectionPercent: dualq.ClassicProtectionNone, Target: 5 * time.Millisecond, Alpha: 1, Beta: 10}},
		{"packet-step-minqlen", dualq.Config{StepThresholdPackets: 4, StepMinQueuePackets: 2, Target: 2 * time.Millisecond, Alpha: 3, Beta: 30, LimitPackets: 60, LimitBytes: 60 * 1500}},
		{"drop-enqueue", dualq.Config{DropEnqueue: true, Target: 2 * time.Millisecond, Alpha: 3, Beta: 30, StepMinQueuePackets: 1}},
		{"drop-enqueue-overflow-small", dualq.Config{DropEnqueue: true, OverflowOnOverload: true, CouplingFactor: 2, LimitPackets: 12, LimitBytes: 12000, MTUBytes: 300, Alpha: 2, Beta: 20}},
	}
	seeds, nops := 12, 20000
	if testing.Short() {
		seeds, nops = 3, 8000
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			refSignals.marks, refSignals.drops, refSignals.overload = 0, 0, 0
			stops, total := 0, 0
			for s := range seeds {
				at, border, n := refTrace(t, c.cfg, uint64(1000+s), nops)
				total += n
				if at >= 0 {
					require.True(t, border, "seed %d: decisions differ at op %d without a borderline roll", 1000+s, at)
					stops++
				}
			}
			t.Logf("%d traces, %d decisions compared, %d stopped at a borderline roll; %d marks, %d early drops, %d overload drops",
				seeds, total, stops, refSignals.marks, refSignals.drops, refSignals.overload)
			require.Positive(t, refSignals.marks)
			require.LessOrEqual(t, stops, seeds/4+1)
			require.Greater(t, total, seeds*nops/2)
		})
	}
}
