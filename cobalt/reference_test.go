package cobalt

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/require"
)

// cobaltModel is a slow model of a COBALT queue, written from "Piece of
// CAKE" (Høiland-Jørgensen, Täht and Morton, 2018) and the behaviour of
// Linux sch_cake's COBALT as described in its documentation and our spec
// notes, with the choices this package documents on top: the exact control
// law floor(Interval/sqrt(count)) (big integers here), ns-3's BLUE ceiling
// and standalone tail-drop queue, the bound on decay work per packet, and
// the time policy of package aqm.
//
// The CoDel half, per packet at the head (Linux's order):
//
//   - the packet is above target when its sojourn exceeds Target and
//     4·MTUTime; a signal is due when count > 0 and the next time has come;
//   - above target: a new episode starts (dropping, next = now + law(count))
//     and count is at least 1; below target the episode ends;
//   - due while dropping: mark an ECN-capable packet, else drop; count
//     rises and the next time moves on by law(count) from where it was;
//   - due while not dropping: count decays, one per law(count) of the new
//     count, for as long as the next time stays at or before now (Linux
//     has no bound on the steps; the package's bound is applied on top);
//   - BLUE: unless the CoDel half dropped the packet, it is dropped with
//     probability p, ECN-capable or not, marked or not;
//   - count 0 makes the next time an activity timeout, now + Interval;
//     otherwise a next time still in the past is pulled to now unless the
//     packet was dropped.
//
// BLUE's p is kept as Linux keeps it, an integer with 2^32 as 1, saturating
// at 2^32-1; it rises by the increment on an overflow or a sojourn above
// the ceiling and falls by the decrement when a dequeue finds the queue
// empty, each at most once per Target. An overflow also forces the CoDel
// half to signal at once (dropping, next = now, count at least 1). An
// empty queue ends the episode and takes one step of decay if it is due.
type cobaltModel struct {
	target, interval, guard, ceil int64
	inc, dec                      uint64
	ecn                           bool
	limPackets, limBytes          int

	fifo  []aqm.Packet[uint64]
	bytes int

	count     int64
	next      int64
	dropping  bool
	p         uint64 // BLUE, 2^32 = 1
	blueTimer int64
	src       rng.Small

	dropped []aqm.Packet[uint64]
	reasons []aqm.Verdict

	// Coverage: BLUE drops of packets the CoDel half had just marked;
	// decays Linux would run for more than 64 steps in one evaluation, and
	// those of them that stop short of zero; evaluations that left decay
	// owed under the package's bound.
	blueAfterMark, longDecays, longPartial, deferred int
}

func newCobaltModel(cfg Config) *cobaltModel {
	d := cfg.withDefaults()
	m := &cobaltModel{
		target: int64(d.Target), interval: int64(d.Interval), guard: 4 * int64(d.MTUTime),
		ceil: 1<<63 - 1, inc: to32(d.BlueIncrement), dec: to32(d.BlueDecrement), ecn: !d.DisableECN,
		limPackets: d.LimitPackets, limBytes: d.LimitBytes,
	}
	if !d.DisableBlueThreshold {
		m.ceil = int64(d.BlueThreshold)
	}
	m.src.Seed(d.Seed)
	return m
}

// to32 puts a probability on the 2^32 scale, to the nearest unit.
func to32(f float64) uint64 {
	v, _ := new(big.Float).Add(new(big.Float).Mul(big.NewFloat(f), big.NewFloat(1<<32)), big.NewFloat(0.5)).Uint64()
	return min(v, 1<<32-1)
}

// law is the control law's spacing after n signals: floor(I/sqrt(n)) as
// the integer square root of floor(I²/n); a full interval for n <= 1.
func (m *cobaltModel) law(n int64) int64 {
	if n <= 1 {
		return m.interval
	}
	x := new(big.Int).Mul(big.NewInt(m.interval), big.NewInt(m.interval))
	x.Quo(x, big.NewInt(n))
	return x.Sqrt(x).Int64()
}

// policy is the time policy: a next time further ahead of now than one
// interval (a reading far ahead, then time went back) is rescheduled from
// now; a BLUE timer in the future is brought to now.
func (m *cobaltModel) policy(now int64) {
	if m.next > now+m.interval {
		m.next = now + m.law(m.count)
	}
	if m.blueTimer > now {
		m.blueTimer = now
	}
}

func (m *cobaltModel) blueRaise(now int64) {
	if now-m.blueTimer > m.target {
		m.p = min(m.p+m.inc, 1<<32-1)
		m.blueTimer = now
	}
}

func (m *cobaltModel) overflow(now int64) {
	m.policy(now)
	m.blueRaise(now)
	m.dropping = true
	m.next = now
	if m.count == 0 {
		m.count = 1
	}
}

func (m *cobaltModel) empty(now int64) {
	m.policy(now)
	if m.p > 0 && now-m.blueTimer > m.target {
		m.p -= min(m.p, m.dec)
		m.blueTimer = now
	}
	m.dropping = false
	if m.count > 0 && now >= m.next {
		m.count--
		m.next += m.law(m.count)
	}
}

func (m *cobaltModel) enqueue(p aqm.Packet[uint64], now int64) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = aqm.Time(now)
	if len(m.fifo) >= m.limPackets || m.limBytes > 0 && m.bytes+int(p.Size) > m.limBytes {
		m.overflow(now)
		return aqm.DroppedOverlimit
	}
	m.fifo = append(m.fifo, p)
	m.bytes += int(p.Size)
	return aqm.Enqueued
}

// verdict of the model's per-packet decision.
type verdict int

const (
	pass verdict = iota
	markCE
	dropCoDel
	dropBlue
)

func (m *cobaltModel) decide(p aqm.Packet[uint64], now int64) verdict {
	m.policy(now)
	sojourn := max(now-int64(p.Enqueued), 0)
	schedule := now - m.next
	over := sojourn > m.target && sojourn > m.guard
	due := m.count > 0 && schedule >= 0
	if over {
		if !m.dropping {
			m.dropping = true
			m.next = now + m.law(m.count)
		}
		if m.count == 0 {
			m.count = 1
		}
	} else {
		m.dropping = false
	}
	v := pass
	if due && m.dropping {
		v = dropCoDel
		if m.ecn && p.ECN != aqm.NotECT {
			v = markCE
		}
		m.count++
		m.next += m.law(m.count)
		schedule = now - m.next
	} else if due {
		// Linux's decay, unbounded, on a copy: how far it would go.
		linuxCount, linuxNext := m.count, m.next
		for linuxCount > 0 && linuxNext <= now {
			linuxCount--
			linuxNext += m.law(linuxCount)
		}
		if steps := m.count - linuxCount; steps > maxDecaySteps {
			m.longDecays++
			if linuxCount > 0 {
				m.longPartial++
			}
		}
		// The package's documented bound on it: a gap of at least
		// Interval·min(count, 2·sqrt(count)) takes count to 0 at once;
		// otherwise at most 64 steps, and what is left stays owed (the
		// next time stays in the past, for the following calls).
		late := big.NewInt(schedule)
		byCount := new(big.Int).Mul(big.NewInt(m.interval), big.NewInt(m.count))
		bySqrt := new(big.Int).Mul(big.NewInt(4*m.count), new(big.Int).Mul(big.NewInt(m.interval), big.NewInt(m.interval)))
		if late.Cmp(byCount) >= 0 || new(big.Int).Mul(late, late).Cmp(bySqrt) >= 0 {
			m.count = 0
		}
		for steps := 0; m.count > 0 && m.next <= now && steps < maxDecaySteps; steps++ {
			m.count--
			m.next += m.law(m.count)
		}
		schedule = now - m.next
		if m.count > 0 && schedule >= 0 {
			m.deferred++
			schedule = 0 // owed: no pull to now
		}
	}
	if sojourn > m.ceil {
		m.blueRaise(now)
	}
	if v != dropCoDel && m.p > 0 && uint64(m.src.Uint32()) < m.p {
		if v == markCE {
			m.blueAfterMark++
		}
		v = dropBlue
	}
	if m.count == 0 {
		m.next = now + m.interval
	} else if schedule > 0 && (v == pass || v == markCE) {
		m.next = now
	}
	return v
}

func (m *cobaltModel) dequeue(now int64) (aqm.Packet[uint64], bool) {
	for drops := 0; ; {
		if len(m.fifo) == 0 {
			m.empty(now)
			return aqm.Packet[uint64]{}, false
		}
		p := m.fifo[0]
		m.fifo = m.fifo[1:]
		m.bytes -= int(p.Size)
		v := pass
		if drops < maxDropsPerDequeue {
			v = m.decide(p, now)
		}
		switch v {
		case markCE:
			p.ECN = aqm.CE
		case dropCoDel, dropBlue:
			why := aqm.DroppedEarly
			if v == dropBlue && p.ECN != aqm.NotECT {
				why = aqm.DroppedOverload
			}
			drops++
			m.dropped = append(m.dropped, p)
			m.reasons = append(m.reasons, why)
			continue
		}
		return p, true
	}
}

// TestMatchesReference protects COBALT's decisions: on random traces the
// queue and the slow model, fed the same random stream, return the same
// verdicts, the same packets and the same drops with the same reasons, and
// hold the same count. The traces hold ECN senders that ignore marks (so
// BLUE drops marked packets), long congestion that drives count into the
// hundreds, and idle gaps from a few intervals to seconds (so decay runs
// past its per-call bound).
func TestMatchesReference(t *testing.T) {
	traces := 300
	if testing.Short() {
		traces = 60
	}
	var drops, marks, blue, afterMark, long, partial, deferred int
	for tr := range traces {
		g := rand.New(rand.NewPCG(uint64(tr), 2018))
		cfg := Config{
			Control:      Control{Target: time.Duration(1+g.IntN(5)) * time.Millisecond, Interval: time.Duration(10+g.IntN(200)) * time.Millisecond, DisableECN: g.IntN(5) == 0, BlueThreshold: time.Duration(50+g.IntN(400)) * time.Millisecond, BlueIncrement: []float64{0, 1.0 / 64, 0.01, 0.01, 0.01, 1}[g.IntN(6)], BlueDecrement: []float64{0, 1.0 / 1024, 0.001}[g.IntN(3)]},
			LimitPackets: 20 + g.IntN(300),
			Seed:         uint64(tr + 1),
		}
		if g.IntN(3) == 0 {
			cfg.MTUTime = time.Duration(g.IntN(3)) * time.Millisecond
		}
		if g.IntN(3) == 0 {
			cfg.LimitBytes = 20000 + g.IntN(200000)
		}
		if g.IntN(4) == 0 {
			cfg.DisableBlueThreshold = true
		}
		var qd []aqm.Packet[uint64]
		var qw []aqm.Verdict
		q, err := New(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { qd = append(qd, p); qw = append(qw, v) })
		require.NoError(t, err)
		m := newCobaltModel(cfg)
		now := int64(time.Second)
		var seq uint64
		checked := 0
		// Arrivals at a rate that swings between under and well over the
		// service rate, so episodes start, last, end, overflow and decay.
		rate := 0.5 + g.Float64()*2
		ecnShare := g.IntN(5) // in fifths: the share of ECN-capable packets
		for step := range 4000 {
			switch x := g.IntN(1000); {
			case x < 4:
				now += int64(time.Duration(50+g.IntN(3000)) * time.Millisecond) // idle gap
			case x < 6:
				now -= int64(g.IntN(5)) * int64(time.Millisecond) // backwards
			default:
				now += int64(time.Millisecond)
			}
			if step%400 == 0 {
				rate = 0.3 + g.Float64()*3
			}
			for k := 0; float64(k) < rate+g.Float64()-0.5; k++ {
				seq++
				ecn := aqm.NotECT
				if g.IntN(5) < ecnShare {
					ecn = aqm.ECN(1 + g.IntN(3))
				}
				p := aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: uint32(64 + g.IntN(1437)), ECN: ecn}}
				if mv, qv := m.enqueue(p, now), q.Enqueue(p, aqm.Time(now)); mv != qv {
					t.Fatalf("trace %d step %d: Enqueue %v, model %v", tr, step, qv, mv)
				}
			}
			want, wok := m.dequeue(now)
			got, gok := q.Dequeue(aqm.Time(now))
			// Plain comparisons first: require's reflection would dominate.
			if wok != gok || want != got || len(m.dropped) != len(qd) {
				require.Equal(t, wok, gok, "trace %d step %d", tr, step)
				require.Equal(t, want, got, "trace %d step %d", tr, step)
				require.Equal(t, len(m.dropped), len(qd), "trace %d step %d", tr, step)
			}
			for ; checked < len(qd); checked++ {
				if m.dropped[checked] != qd[checked] || m.reasons[checked] != qw[checked] {
					t.Fatalf("trace %d step %d: drop %d is %+v (%v), model %+v (%v)", tr, step, checked,
						qd[checked], qw[checked], m.dropped[checked], m.reasons[checked])
				}
			}
			if c := q.Detail().Count; c != uint32(m.count) {
				t.Fatalf("trace %d step %d: count %d, model %d", tr, step, c, m.count)
			}
			if got.ECN == aqm.CE {
				marks++
			}
		}
		drops += len(qd)
		blue += int(q.Detail().DroppedBlue)
		afterMark += m.blueAfterMark
		long += m.longDecays
		partial += m.longPartial
		deferred += m.deferred
	}
	t.Logf("%d drops (%d by BLUE, %d of them marked first), %d CE packets out; "+
		"%d decays over %d steps (%d short of zero), %d evaluations left decay owed",
		drops, blue, afterMark, marks, long, maxDecaySteps, partial, deferred)
	require.Positive(t, drops)
	require.Positive(t, blue, "the traces must exercise BLUE")
	require.Positive(t, afterMark, "the traces must exercise BLUE after a mark")
	require.Positive(t, long, "the traces must exercise decay past its per-call bound")
	require.Positive(t, deferred, "the traces must leave decay owed")
}
