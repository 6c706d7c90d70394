package autorate

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/stretchr/testify/require"
)

// model is the controller written slowly from the package documentation
// (which restates cake-autorate's algorithm), not from controller.go: it
// keeps every judged sample, every health check and every event, and
// derives windows and refractory periods from those histories. Durations
// are float nanoseconds.
type model struct {
	cfg  Config
	rate aqm.Rate
	// Recovery: the rate before the first cut of the current episode, and
	// whether the rate's last move was a cut.
	recoverTo  aqm.Rate
	lastWasCut bool

	refl    map[int]*modelRefl
	judged  []float64 // every judged sample's delay rise, oldest first
	delayed []bool

	highLoad    bool
	reportSince bool     // an achieved rate came after the last increase
	lastReport  aqm.Rate // the last achieved rate; zero after a fallback

	first       bool
	lastJudged  aqm.Time
	fallen      bool
	cuts        []aqm.Time
	increases   []aqm.Time
	changes     []aqm.Time // cuts, increases, decay checks, fallbacks
	lastHealth  aqm.Time
	lastCompare aqm.Time
	checks      int

	stats Stats
}

type modelRefl struct {
	baseline, ewma float64
	last           aqm.Time
	resting        bool
	restUntil      aqm.Time
	offendedAt     []int // health check numbers at which it was silent
}

func newModel(cfg Config) *model {
	return &model{cfg: cfg.withDefaults(), rate: cfg.withDefaults().BaseRate, refl: map[int]*modelRefl{}, first: true}
}

// elapsed is now − t, no less than zero.
func elapsed(t, now aqm.Time) float64 { return math.Max(0, float64(now)-float64(t)) }

// within reports whether the last instant of ts is less than span before
// now.
func within(ts []aqm.Time, now aqm.Time, span time.Duration) bool {
	return len(ts) > 0 && elapsed(ts[len(ts)-1], now) < float64(span)
}

func (m *model) thr(d time.Duration) float64 {
	return float64(d) + float64(m.cfg.PacketBytes)*8*1e9/float64(m.rate)
}

func (m *model) bound(v float64) aqm.Rate {
	r := aqm.Rate(math.Round(v))
	if r < m.cfg.MinRate {
		r = m.cfg.MinRate
	}
	if r > m.cfg.MaxRate {
		r = m.cfg.MaxRate
	}
	return r
}

func (m *model) activeCount() int {
	n := 0
	for _, r := range m.refl {
		if !r.resting {
			n++
		}
	}
	return n
}

// ordered returns the reflector indices in increasing order.
func (m *model) ordered() []int {
	var ids []int
	for i := range m.cfg.Reflectors {
		if _, ok := m.refl[i]; ok {
			ids = append(ids, i)
		}
	}
	return ids
}

func (m *model) rest(r *modelRefl, now aqm.Time) {
	r.resting, r.restUntil, r.offendedAt = true, now.Add(m.cfg.RestTime), nil
	m.stats.Rested++
}

func (m *model) readmit(r *modelRefl, now aqm.Time) {
	r.resting, r.offendedAt = false, nil
	if now > r.last {
		r.last = now
	}
	m.stats.Readmitted++
}

// housekeeping is what any call does first: a health check when one is
// due, then the probe timeout.
func (m *model) housekeeping(now aqm.Time) Action {
	if m.first {
		m.first = false
		m.lastJudged, m.lastHealth, m.lastCompare = now, now, now
	}
	if elapsed(m.lastHealth, now) >= float64(m.cfg.HealthInterval) {
		m.lastHealth = now
		k := m.checks
		m.checks++
		for _, i := range m.ordered() {
			if r := m.refl[i]; r.resting && now >= r.restUntil {
				m.readmit(r, now)
			}
		}
		if elapsed(m.lastCompare, now) >= float64(m.cfg.ComparisonInterval) {
			m.lastCompare = now
			if m.activeCount() >= 2 {
				lowB, lowE := math.Inf(1), math.Inf(1)
				for _, r := range m.refl {
					if !r.resting {
						lowB, lowE = math.Min(lowB, r.baseline), math.Min(lowE, r.ewma)
					}
				}
				for _, i := range m.ordered() {
					r := m.refl[i]
					if !r.resting && (r.baseline > lowB+float64(m.cfg.BaselineSpread) || r.ewma > lowE+float64(m.cfg.DeltaSpread)) {
						m.rest(r, now)
						break
					}
				}
			}
		}
		restedOne := false
		for _, i := range m.ordered() {
			r := m.refl[i]
			if r.resting {
				continue
			}
			if elapsed(r.last, now) > float64(m.cfg.ResponseDeadline) {
				r.offendedAt = append(r.offendedAt, k)
			}
			n := 0
			for _, at := range r.offendedAt {
				if at > k-m.cfg.OffenceWindow {
					n++
				}
			}
			if n >= m.cfg.OffenceThreshold && !restedOne {
				m.rest(r, now)
				restedOne = true
			}
		}
	}
	if !m.fallen && elapsed(m.lastJudged, now) >= float64(m.cfg.ProbeTimeout) {
		m.fallen = true
		m.recoverTo, m.lastWasCut = 0, false
		m.stats.Fallbacks++
		m.judged, m.delayed = nil, nil
		m.reportSince, m.lastReport = false, 0
		m.changes = append(m.changes, now)
		m.rate = m.cfg.BaseRate
		return Fallback
	}
	return Hold
}

func (m *model) achieved(now aqm.Time, r aqm.Rate) Action {
	a := m.housekeeping(now)
	m.reportSince, m.lastReport = true, r
	m.highLoad = float64(r) >= m.cfg.HighLoad*float64(m.rate)
	return a
}

// sample reports the decision on the sample, or what housekeeping did if
// the sample changed nothing.
func (m *model) sample(now aqm.Time, i int, d time.Duration) Action {
	a := m.housekeeping(now)
	if b := m.judge(now, i, d, a); b != Hold {
		return b
	}
	return a
}

func (m *model) judge(now aqm.Time, i int, d time.Duration, a Action) Action {
	if i < 0 || i >= m.cfg.Reflectors || d < 0 {
		m.stats.Ignored++
		return a
	}
	x := float64(d)
	r, seen := m.refl[i]
	if !seen {
		r = &modelRefl{baseline: x}
		m.refl[i] = r
	} else if x >= r.baseline {
		r.baseline = m.cfg.BaselineRise*x + (1-m.cfg.BaselineRise)*r.baseline
	} else {
		r.baseline = m.cfg.BaselineFall*x + (1-m.cfg.BaselineFall)*r.baseline
	}
	r.last = now
	rise := x - r.baseline
	if !m.highLoad {
		r.ewma = m.cfg.DeltaAlpha*rise + (1-m.cfg.DeltaAlpha)*r.ewma
	}
	if r.resting {
		if m.activeCount() > 0 {
			m.stats.Resting++
			return a
		}
		m.readmit(r, now)
	}
	m.stats.Samples++
	m.lastJudged, m.fallen = now, false
	m.judged = append(m.judged, rise)
	m.delayed = append(m.delayed, rise > m.thr(m.cfg.DelayThreshold))

	// The window: the last DetectionWindow judged samples, zeros before
	// the first.
	w := m.cfg.DetectionWindow
	sum, nDelayed := 0.0, 0
	for k := len(m.judged) - w; k < len(m.judged); k++ {
		if k >= 0 {
			sum += m.judged[k]
			if m.delayed[k] {
				nDelayed++
			}
		}
	}
	mean := sum / float64(w)
	thr := m.thr(m.cfg.DelayThreshold)
	afterCut := within(m.cuts, now, m.cfg.CutRefractory)
	switch {
	case nDelayed >= m.cfg.DetectionThreshold:
		if afterCut {
			return Hold
		}
		f := (mean - thr) / (m.thr(m.cfg.FullCutAbove) - thr)
		f = math.Min(1, math.Max(0, f))
		if !m.lastWasCut {
			m.recoverTo = m.rate
		}
		m.lastWasCut = true
		scaled := m.bound(float64(m.rate) * (1 - (m.cfg.MinCut + f*(m.cfg.MaxCut-m.cfg.MinCut))))
		m.rate = scaled
		// The achieved rate's share, when set, is taken if it is lower
		// than the scaled cut and above the minimum.
		if m.cfg.AchievedCut != 0 {
			share := aqm.Rate(math.Round(m.cfg.AchievedCut * float64(m.lastReport)))
			if share > m.cfg.MinRate && share < scaled {
				m.rate = share
				m.stats.AchievedCuts++
			}
		}
		m.cuts = append(m.cuts, now)
		m.changes = append(m.changes, now)
		m.stats.Cuts++
		return Cut
	case m.highLoad:
		if afterCut || !m.reportSince || within(m.increases, now, m.cfg.IncreaseRefractory) {
			return Hold
		}
		f := (thr - mean) / (thr - m.thr(m.cfg.FullIncreaseBelow))
		f = math.Min(1, math.Max(0, f))
		next := m.bound(float64(m.rate) * (1 + (m.cfg.MinIncrease + f*(m.cfg.MaxIncrease-m.cfg.MinIncrease))))
		// Recovery: a share of the way back to the rate before the
		// episode's first cut, if that is further.
		if m.cfg.Recovery > 0 && f > 0 && m.recoverTo > m.rate {
			back := m.rate + aqm.Rate(math.Round(f*m.cfg.Recovery*float64(m.recoverTo-m.rate)))
			if back > m.recoverTo {
				back = m.recoverTo
			}
			if back > next {
				next = back
			}
		}
		if next >= m.recoverTo {
			m.recoverTo = 0
		}
		m.lastWasCut = false
		m.rate = next
		m.reportSince = false
		m.increases = append(m.increases, now)
		m.changes = append(m.changes, now)
		m.stats.Increases++
		return Increase
	default:
		if afterCut || within(m.changes, now, m.cfg.DecayRefractory) {
			return Hold
		}
		m.changes = append(m.changes, now)
		base := m.cfg.BaseRate
		old := m.rate
		if m.rate > base {
			m.rate = max(m.bound(float64(m.rate)*(1-m.cfg.DecayStep)), base)
		} else if m.rate < base {
			m.rate = min(m.bound(float64(m.rate)*(1+m.cfg.DecayStep)), base)
		}
		if m.rate == old {
			return Hold
		}
		m.lastWasCut = false
		m.stats.Decays++
		return Decay
	}
}

func (m *model) tick(now aqm.Time) Action { return m.housekeeping(now) }

// referenceConfigs are the configurations the reference runs: the
// defaults, and settings that make each rule fire often.
var referenceConfigs = map[string]Config{
	"defaults": {},
	"step":     stepConfig,
	"busy": {MinRate: aqm.Mbit, BaseRate: 8 * aqm.Mbit, MaxRate: 300 * aqm.Mbit, DetectionWindow: 4, DetectionThreshold: 2,
		DelayThreshold: 15 * ms, FullIncreaseBelow: 5 * ms, FullCutAbove: 40 * ms, CutRefractory: 150 * ms,
		IncreaseRefractory: 50 * ms, DecayRefractory: 400 * ms, MinIncrease: 0.005, MaxIncrease: 0.1,
		Reflectors: 4, ResponseDeadline: 400 * ms, HealthInterval: 300 * ms, OffenceWindow: 10, OffenceThreshold: 2,
		ComparisonInterval: 2 * time.Second, BaselineSpread: 15 * ms, DeltaSpread: 5 * ms, RestTime: 3 * time.Second,
		ProbeTimeout: 4 * time.Second},
	"achieved": {MinRate: 2 * aqm.Mbit, BaseRate: 30 * aqm.Mbit, MaxRate: 120 * aqm.Mbit, AchievedCut: DefaultAchievedCut,
		DelayThreshold: 15 * ms, FullIncreaseBelow: 5 * ms, FullCutAbove: 30 * ms, MaxCut: 0.4, MaxIncrease: 0.1,
		IncreaseRefractory: 100 * ms},
	"recovery": {MinRate: aqm.Mbit, BaseRate: 10 * aqm.Mbit, MaxRate: 100 * aqm.Mbit, Recovery: 1, MaxIncrease: 0.1,
		DelayThreshold: 15 * ms, FullIncreaseBelow: 5 * ms, FullCutAbove: 30 * ms, IncreaseRefractory: 100 * ms},
	"recovery, half":   {MinRate: 5 * aqm.Mbit, BaseRate: 20 * aqm.Mbit, MaxRate: 80 * aqm.Mbit, Recovery: 0.5, AchievedCut: DefaultAchievedCut},
	"achieved, narrow": {MinRate: 20 * aqm.Mbit, BaseRate: 25 * aqm.Mbit, MaxRate: 30 * aqm.Mbit, AchievedCut: 0.5},
	"slow link":        {MinRate: 500 * aqm.Kbit, BaseRate: 2 * aqm.Mbit, MaxRate: 5 * aqm.Mbit, PacketBytes: 9000, DetectionWindow: 64, DetectionThreshold: 20},
}

// TestReference protects every decision against the slow model: on random
// traces of samples, load reports, ticks, outages and backward steps, the
// controller and the model take the same action after every call, hold
// rates equal to within 1e-9 (summation order may differ in the last
// bits), agree on which reflectors rest, and count the same events.
func TestReference(t *testing.T) {
	seed := uint64(proptest.Seed(9177))
	t.Logf("seed %d (replay with AQMTEST_SEED=%d)", seed, seed)
	traces, calls := 40, 4000
	if testing.Short() {
		traces = 8
	}
	actions := map[Action]int{}
	var achievedCuts, scaledCuts uint64
	for name, cfg := range referenceConfigs {
		for tr := range traces {
			g := rand.New(rand.NewPCG(seed, uint64(tr)))
			c, err := New(cfg)
			require.NoError(t, err)
			m := newModel(cfg)
			gen := newTracer(g)
			for i := range calls {
				cl := gen.next(c.Rate())
				d := cl.replay(c)
				var want Action
				switch cl.kind {
				case 's':
					want = m.sample(cl.at, cl.refl, cl.delay)
				case 'a':
					want = m.achieved(cl.at, cl.achieved)
				default:
					want = m.tick(cl.at)
				}
				actions[want]++
				require.Equal(t, want, d.Action, "%s trace %d call %d %+v", name, tr, i, cl)
				require.Equal(t, m.rate, d.Rate, "%s trace %d call %d", name, tr, i)
				if i%100 == 0 {
					for id, r := range m.refl {
						st, ok := c.Reflector(id)
						require.True(t, ok)
						require.Equal(t, !r.resting, st.Active, "%s trace %d call %d reflector %d", name, tr, i, id)
					}
				}
			}
			require.Equal(t, m.stats, c.Stats(), "%s trace %d", name, tr)
			if cfg.AchievedCut != 0 {
				achievedCuts += m.stats.AchievedCuts
				scaledCuts += m.stats.Cuts - m.stats.AchievedCuts
			}
		}
	}
	// The traces exercise every kind of decision, and cuts both to the
	// achieved rate's share and past it.
	for a := Hold; a <= Fallback; a++ {
		require.Positive(t, actions[a], "no %v in the traces", a)
	}
	require.Positive(t, achievedCuts, "no cut to the achieved rate")
	require.Positive(t, scaledCuts, "no scaled cut with AchievedCut set")
	t.Logf("actions: %v", actions)
}
