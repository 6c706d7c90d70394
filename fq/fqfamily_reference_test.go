package fq

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/stretchr/testify/require"
)

// refFQ is a slow model of the DRR++ scheduler shared by FQ-COBALT and
// FQ-PIE, written from RFC 8290 §4.1-4.2 with the choices doc.go documents
// (a flow is served while its credit is not negative, an empty new flow
// goes to the old list, a packet costs at most 64 quanta), around a
// per-flow AQM model (refAQM). Flows are a map of FIFOs keyed by bucket and
// the lists are slices. It covers traces that stay below the limits: the
// overload dropper is checked by the kit and by the properties, not here.
// Classification is taken from the queue under test (its exported
// Flow(hash).Bucket); everything after the bucket number is the model's.
type refFQ struct {
	quantum    int
	flows      map[int]*refFQFlow
	newL, oldL []int
	aqm        refAQM
	dropped    []aqm.Packet[uint64]
	why        []aqm.Verdict
}

type refFQFlow struct {
	id      int
	pkts    []aqm.Packet[uint64]
	bytes   int
	deficit int
	list    int // 0 idle, 1 new, 2 old
	cob     refCobaltFlow
	pie     refPIEFlow
}

// refAQM is the per-flow algorithm the scheduler model runs.
type refAQM interface {
	// arrive decides on p before it joins f (PIE decides here).
	arrive(f *refFQFlow, p *aqm.Packet[uint64], now int64) aqm.Verdict
	// leave decides on p, just taken from the head of f (COBALT decides
	// here); drops is the number of drops this Dequeue call made so far.
	leave(f *refFQFlow, p *aqm.Packet[uint64], now int64, drops int) aqm.Verdict
}

func newRefFQ(quantum int, a refAQM) *refFQ {
	return &refFQ{quantum: quantum, flows: map[int]*refFQFlow{}, aqm: a}
}

func (m *refFQ) flow(bucket int) *refFQFlow {
	f := m.flows[bucket]
	if f == nil {
		f = &refFQFlow{id: bucket}
		m.flows[bucket] = f
	}
	return f
}

func (m *refFQ) enqueue(bucket int, p aqm.Packet[uint64], now int64) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = aqm.Time(now)
	f := m.flow(bucket)
	v := m.aqm.arrive(f, &p, now)
	if !v.Accepted() {
		return v
	}
	f.pkts = append(f.pkts, p)
	f.bytes += int(p.Size)
	if f.list == 0 {
		f.list = 1
		f.deficit = m.quantum
		m.newL = append(m.newL, bucket)
	}
	return v
}

func (m *refFQ) dequeue(now int64) (aqm.Packet[uint64], bool) {
	drops := 0
	for {
		var l *[]int
		switch {
		case len(m.newL) > 0:
			l = &m.newL
		case len(m.oldL) > 0:
			l = &m.oldL
		default:
			return aqm.Packet[uint64]{}, false
		}
		id := (*l)[0]
		f := m.flows[id]
		if f.deficit < 0 {
			f.deficit += m.quantum
			*l = (*l)[1:]
			m.oldL = append(m.oldL, id)
			f.list = 2
			continue
		}
		if len(f.pkts) == 0 {
			*l = (*l)[1:]
			if f.list == 1 {
				m.oldL = append(m.oldL, id)
				f.list = 2
			} else {
				f.list = 0
			}
			continue
		}
		p := f.pkts[0]
		f.pkts = f.pkts[1:]
		f.bytes -= int(p.Size)
		v := m.aqm.leave(f, &p, now, drops)
		if !v.Accepted() {
			drops++
			m.dropped = append(m.dropped, p)
			m.why = append(m.why, v)
			continue
		}
		f.deficit -= min(int(p.Size), 64*m.quantum)
		return p, true
	}
}

// refCobalt is COBALT per flow, from the description in package cobalt's
// doc and "Piece of CAKE": CoDel's control law with spacing
// floor(interval/sqrt(count)) (big integers), count decaying after an
// episode (at most 64 steps per packet, the rest owed to the following
// ones, and at once to 0 after a gap of Interval·min(count, 2·sqrt(count))),
// BLUE's probability in float64 raised by a sojourn above the ceiling and
// lowered when the flow's last packet leaves, each at most once per target,
// BLUE's draw for every packet the CoDel half has not dropped (marked ones
// included), and BLUE's draws from a stream per flow (seeded as NewCobalt
// seeds it).
type refCobalt struct {
	target, interval, ceil int64
	inc, dec               float64
	ecn                    bool
	seed                   uint64
}

type refCobaltFlow struct {
	count       int64
	next, stamp int64
	dropping    bool
	p           float64
	src         rng.Small
	seeded      bool
}

func (r *refCobalt) gap(n int64) int64 {
	if n <= 1 {
		return r.interval
	}
	x := new(big.Int).Mul(big.NewInt(r.interval), big.NewInt(r.interval))
	x.Quo(x, big.NewInt(n))
	return x.Sqrt(x).Int64()
}

// settle is the time policy: a next time further ahead than one interval
// restarts from now, a BLUE stamp in the future becomes now.
func (r *refCobalt) settle(c *refCobaltFlow, now int64) {
	if c.next > now+r.interval {
		c.next = now + r.gap(c.count)
	}
	c.stamp = min(c.stamp, now)
}

func (r *refCobalt) arrive(*refFQFlow, *aqm.Packet[uint64], int64) aqm.Verdict { return aqm.Enqueued }

func (r *refCobalt) leave(f *refFQFlow, p *aqm.Packet[uint64], now int64, drops int) aqm.Verdict {
	c := &f.cob
	if !c.seeded {
		c.src.Seed(cobaltFlowSeed(r.seed, f.id))
		c.seeded = true
	}
	v := aqm.Enqueued
	if drops < 256 {
		v = r.signal(c, p, now)
	}
	if len(f.pkts) == 0 {
		r.settle(c, now)
		if c.p > 0 && now-c.stamp > r.target {
			c.p = max(c.p-r.dec, 0)
			c.stamp = now
		}
		c.dropping = false
		if c.count > 0 && now >= c.next {
			c.count--
			c.next += r.gap(c.count)
		}
	}
	return v
}

const refPMax = float64(1<<32-1) / (1 << 32)

func (r *refCobalt) signal(c *refCobaltFlow, p *aqm.Packet[uint64], now int64) aqm.Verdict {
	r.settle(c, now)
	soj := max(now-int64(p.Enqueued), 0)
	if soj > r.ceil && now-c.stamp > r.target {
		c.p = math.Min(c.p+r.inc, refPMax)
		c.stamp = now
	}
	wasCount := c.count
	late := now - c.next
	signalDue := wasCount > 0 && late >= 0
	if soj > r.target {
		if !c.dropping {
			c.next = now + r.gap(wasCount)
		}
		c.dropping = true
		c.count = max(c.count, 1)
	} else {
		c.dropping = false
	}
	v := aqm.Enqueued
	ecn := p.ECN
	switch {
	case signalDue && c.dropping:
		if r.ecn && p.ECN != aqm.NotECT {
			p.ECN = aqm.CE
			v = aqm.Marked
		} else {
			v = aqm.DroppedEarly
		}
		c.count++
		c.next += r.gap(c.count)
		late = now - c.next
	case signalDue:
		n := big.NewInt(c.count)
		iv := big.NewInt(r.interval)
		l := big.NewInt(late)
		if l.Cmp(new(big.Int).Mul(iv, n)) >= 0 ||
			new(big.Int).Mul(l, l).Cmp(new(big.Int).Mul(new(big.Int).Mul(iv, iv), new(big.Int).Mul(n, big.NewInt(4)))) >= 0 {
			c.count = 0 // the gap covers every remaining spacing
		}
		for k := 0; k < 64 && c.count > 0 && late >= 0; k++ {
			c.count--
			c.next += r.gap(c.count)
			late = now - c.next
		}
		if c.count > 0 && late >= 0 {
			late = 0 // decay still owed: the next time stays in the past
		}
	}
	if v != aqm.DroppedEarly && c.p > 0 && float64(c.src.Uint32()) < c.p*(1<<32) {
		if v == aqm.Marked {
			p.ECN = ecn // BLUE drops the packet as it came
		}
		v = aqm.DroppedEarly
		if p.ECN != aqm.NotECT {
			v = aqm.DroppedOverload
		}
		return r.after(c, now, late, true, v)
	}
	return r.after(c, now, late, v == aqm.DroppedEarly, v)
}

// after sets the next time once the decision is made: an interval ahead
// when count is back to 0; now when a signal is overdue and this packet
// was not dropped.
func (r *refCobalt) after(c *refCobaltFlow, now, late int64, dropped bool, v aqm.Verdict) aqm.Verdict {
	if c.count == 0 {
		c.next = now + r.interval
	} else if late > 0 && !dropped {
		c.next = now
	}
	return v
}

// refPIE is PIE per flow, from RFC 8033's pseudocode with the choices of
// package pie's doc (timestamps: the delay is the age of the flow's head
// packet; updates every TUpdate as a per-flow timer, replayed when the flow
// is next touched, which is exact because its contents have not changed;
// the safeguard looks at the flow's backlog; ECN marks below the
// threshold), probabilities in float64. Each flow draws from its own
// stream, seeded as NewPIE seeds it.
type refPIE struct {
	cfg      PIEConfig
	seed     uint64
	alpha    float64
	beta     float64
	target   float64 // s
	tup      int64
	maxBurst int64
}

type refPIEFlow struct {
	started   bool
	next      int64
	prob, old float64
	burst     int64
	src       rng.Source
}

func newRefPIE(cfg PIEConfig) *refPIE {
	cfg = cfg.withDefaults()
	r := &refPIE{cfg: cfg, seed: cfg.Seed, alpha: math.Round(cfg.Alpha*(1<<20)) / (1 << 20),
		beta: math.Round(cfg.Beta*(1<<20)) / (1 << 20), target: cfg.Target.Seconds(),
		tup: int64(cfg.TUpdate), maxBurst: int64(cfg.MaxBurst)}
	if cfg.DisableBurstAllowance {
		r.maxBurst = 0
	}
	return r
}

func (r *refPIE) init(f *refFQFlow) {
	if f.pie.started || f.pie.src != (rng.Source{}) {
		return
	}
	f.pie.burst = r.maxBurst
	f.pie.src = rng.New(pieFlowSeed(r.seed, f.id))
}

// update is calculate_drop_prob at instant t.
func (r *refPIE) update(f *refFQFlow, t int64) {
	c := &f.pie
	cur := 0.0
	if len(f.pkts) > 0 {
		cur = float64(min(max(t-int64(f.pkts[0].Enqueued), 0), int64(1)<<36)) / 1e9
	}
	d := r.alpha*(cur-r.target) + r.beta*(cur-c.old)
	for _, band := range []struct{ below, div float64 }{{1e-6, 2048}, {1e-5, 512}, {1e-4, 128}, {1e-3, 32}, {1e-2, 8}, {0.1, 2}} {
		if c.prob < band.below {
			d /= band.div
			break
		}
	}
	if c.prob >= 0.1 && d > 0.02 {
		d = 0.02
	}
	c.prob += d
	if cur == 0 && c.old == 0 {
		c.prob *= 0.98
	}
	c.prob = min(max(c.prob, 0), 1)
	c.burst = max(c.burst-r.tup, 0)
	if c.prob == 0 && cur < r.target/2 && c.old < r.target/2 {
		c.burst = r.maxBurst
	}
	c.old = cur
}

// timer runs the updates due at now.
func (r *refPIE) timer(f *refFQFlow, now int64) {
	c := &f.pie
	if !c.started || c.next-now > r.tup {
		c.started = true
		c.next = now + r.tup
		return
	}
	for now >= c.next {
		r.update(f, c.next)
		c.next += r.tup
	}
}

func (r *refPIE) arrive(f *refFQFlow, p *aqm.Packet[uint64], now int64) aqm.Verdict {
	r.init(f)
	r.timer(f, now)
	c := &f.pie
	if c.burst > 0 || c.old < r.target/2 && c.prob < 0.2 || f.bytes <= 2*r.cfg.MeanPacketBytes {
		return aqm.Enqueued
	}
	if float64(c.src.Uint64()>>16)/(1<<48) >= c.prob {
		return aqm.Enqueued
	}
	if r.cfg.DisableECN || p.ECN == aqm.NotECT {
		return aqm.DroppedEarly
	}
	if c.prob < r.cfg.ECNThreshold {
		p.ECN = aqm.CE
		return aqm.Marked
	}
	return aqm.DroppedOverload
}

func (r *refPIE) leave(f *refFQFlow, p *aqm.Packet[uint64], now int64, _ int) aqm.Verdict {
	// The update runs on the flow as it was, this packet still queued.
	f.pkts = append([]aqm.Packet[uint64]{*p}, f.pkts...)
	r.timer(f, now)
	f.pkts = f.pkts[1:]
	return aqm.Enqueued
}

// refTrace drives q and the model m with the same random trace of nflows
// flows and requires the same verdicts, packets and drops; it returns the
// numbers of drops and marks seen.
func refTrace(t *testing.T, g *rand.Rand, q fqQueue, bucket func(uint32) int, m *refFQ, qd *[]aqm.Packet[uint64], qw *[]aqm.Verdict, steps int) (drops, marks int) {
	now := int64(time.Second)
	var seq uint64
	nflows := 2 + g.IntN(10)
	rate := 1.0
	checked := 0
	buckets := map[uint32]int{}
	for step := range steps {
		switch r := g.IntN(1000); {
		case r < 3:
			now += int64(g.IntN(2000)) * int64(time.Millisecond)
		case r < 5:
			now -= int64(g.IntN(int(time.Millisecond)))
		default:
			now += int64(g.IntN(int(2 * time.Millisecond)))
		}
		if step%400 == 0 {
			rate = 0.3 + 1.7*g.Float64()
		}
		for k := 0; float64(k) < rate+g.Float64()-0.5; k++ {
			seq++
			h := uint32(g.IntN(nflows))
			p := aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: uint32(64 + g.IntN(1437)), Hash: h, ECN: aqm.ECN(g.IntN(4))}}
			b, ok := buckets[h]
			if !ok {
				b = bucket(h)
				buckets[h] = b
			}
			want := m.enqueue(b, p, now)
			got := q.Enqueue(p, aqm.Time(now))
			require.Equal(t, want, got, "step %d", step)
			if got == aqm.Marked {
				marks++
			}
		}
		want, wok := m.dequeue(now)
		got, gok := q.Dequeue(aqm.Time(now))
		require.Equal(t, wok, gok, "step %d", step)
		require.Equal(t, want, got, "step %d", step)
		require.Equal(t, len(m.dropped), len(*qd), "step %d", step)
		for ; checked < len(*qd); checked++ {
			require.Equal(t, m.dropped[checked], (*qd)[checked], "step %d", step)
			require.Equal(t, m.why[checked], (*qw)[checked], "step %d", step)
		}
		if got.ECN == aqm.CE {
			marks++
		}
	}
	return len(*qd), marks
}

// TestCobaltMatchesReference protects FQ-COBALT's decisions: on random
// traces below the limits the queue and the slow model (DRR++ and per-flow
// COBALT, same random stream) return the same verdicts, the same packets
// and the same drops with the same reasons.
func TestCobaltMatchesReference(t *testing.T) {
	traces := 60
	if testing.Short() {
		traces = 15
	}
	var drops, marks, blue int
	for tr := range traces {
		g := rand.New(rand.NewPCG(uint64(tr), 7))
		cfg := CobaltConfig{
			Flows: 1 + g.IntN(16), QuantumBytes: 256 + g.IntN(2000), LimitPackets: 1 << 20, MemoryLimitBytes: 1 << 31,
			Control: cobalt.Control{Target: time.Duration(1+g.IntN(8)) * time.Millisecond, Interval: time.Duration(20+g.IntN(150)) * time.Millisecond, BlueThreshold: time.Duration(10+g.IntN(200)) * time.Millisecond, DisableECN: g.IntN(4) == 0, BlueIncrement: 1.0 / float64(int(1)<<(4+g.IntN(5)))}, Seed: uint64(tr + 1),
			DisableFloodGuard: true, // the models are the schedulers without the guard
		}
		var qd []aqm.Packet[uint64]
		var qw []aqm.Verdict
		q, err := NewCobalt(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { qd = append(qd, p); qw = append(qw, v) })
		require.NoError(t, err)
		c := q.Config()
		r := &refCobalt{target: int64(c.Target), interval: int64(c.Interval), ceil: int64(c.BlueThreshold),
			inc: c.BlueIncrement, dec: c.BlueDecrement, ecn: !c.DisableECN, seed: c.Seed}
		m := newRefFQ(c.QuantumBytes, r)
		d, k := refTrace(t, g, q, func(h uint32) int { return flowState(q.Flow(h)).Bucket }, m, &qd, &qw, 3000)
		require.Zero(t, q.Detail().EvictedOverlimit, "the trace must stay below the limits")
		drops, marks, blue = drops+d, marks+k, blue+int(q.Detail().DroppedBlue)
	}
	t.Logf("%d drops (%d by BLUE), %d marks", drops, blue, marks)
	require.Positive(t, drops)
	require.Positive(t, blue, "the traces must exercise BLUE")
	require.Positive(t, marks)
}

// TestPIEMatchesReference protects FQ-PIE's decisions: on random traces
// below the limits the queue and the slow model (DRR++ and a float64 PIE
// per flow with its own timer, same random streams) return the same
// verdicts, the same packets and the same per-flow probabilities.
func TestPIEMatchesReference(t *testing.T) {
	traces := 60
	if testing.Short() {
		traces = 15
	}
	var signals, marks int
	for tr := range traces {
		g := rand.New(rand.NewPCG(uint64(tr), 8))
		cfg := PIEConfig{
			Flows: 1 + g.IntN(16), QuantumBytes: 256 + g.IntN(2000), LimitPackets: 1 << 20, MemoryLimitBytes: 1 << 31,
			Control: pie.Control{Target: time.Duration(1+g.IntN(15)) * time.Millisecond, TUpdate: time.Duration(2+g.IntN(20)) * time.Millisecond, MaxBurst: time.Duration(g.IntN(100)) * time.Millisecond, DisableECN: g.IntN(4) == 0, Alpha: []float64{0.125, 0.5, 2}[g.IntN(3)], Beta: []float64{1.25, 2.5, 8}[g.IntN(3)], MeanPacketBytes: 500 + g.IntN(1000)}, Seed: uint64(tr + 1),
			DisableFloodGuard: true, // the models are the schedulers without the guard
		}
		var qd []aqm.Packet[uint64]
		var qw []aqm.Verdict
		q, err := NewPIE(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { qd = append(qd, p); qw = append(qw, v) })
		require.NoError(t, err)
		r := newRefPIE(q.Config())
		m := newRefFQ(q.Config().QuantumBytes, r)
		_, k := refTrace(t, g, q, func(h uint32) int { return flowState(q.Flow(h)).Bucket }, m, &qd, &qw, 3000)
		require.Zero(t, q.Detail().EvictedOverlimit, "the trace must stay below the limits")
		for b, f := range m.flows {
			for h := uint32(0); h < 16; h++ {
				if qf := flowState(q.Flow(h)); qf.Bucket == b {
					require.InDelta(t, f.pie.prob, qf.PIE.Prob, 1e-9, "trace %d flow %d", tr, b)
					require.Equal(t, time.Duration(f.pie.burst), qf.PIE.BurstAllowance)
				}
			}
		}
		signals += int((q.Stats().DroppedEarly.Packets + q.Stats().DroppedOverload.Packets))
		marks += k
	}
	t.Logf("%d early drops, %d marks", signals, marks)
	require.Positive(t, signals)
	require.Positive(t, marks)
}
