package autorate

import (
	"math/rand/v2"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// call is one call of a random trace.
type call struct {
	at       aqm.Time
	kind     byte // 's' sample, 'a' achieved, 't' tick
	refl     int
	delay    time.Duration
	achieved aqm.Rate
}

// tracer draws the calls of a random but plausible life: up to five
// reflectors (one sometimes out of range) with their own base delays,
// episodes of a queue building and draining, noise, a reflector that goes
// silent or drifts, load reports every 200 ms that follow the current rate,
// probe outages longer than the timeout, and now and then a clock step
// backwards.
type tracer struct {
	g        *rand.Rand
	now      aqm.Time
	base     []float64 // ns
	silent   int
	queue    float64 // ms
	load     float64
	nextLoad aqm.Time
}

func newTracer(g *rand.Rand) *tracer {
	tr := &tracer{g: g, now: aqm.Time(time.Second) + aqm.Time(g.Int64N(int64(time.Second))), silent: -1, load: 0.5}
	tr.base = make([]float64, 1+g.IntN(5))
	for i := range tr.base {
		tr.base[i] = float64(5+g.IntN(60)) * 1e6
	}
	tr.nextLoad = tr.now
	return tr
}

// next returns the next call; rate is the controller's current rate.
func (tr *tracer) next(rate aqm.Rate) call {
	g := tr.g
	for {
		switch r := g.IntN(1000); {
		case r < 3: // a probe outage, some longer than ProbeTimeout
			tr.now = tr.now.Add(time.Duration(g.IntN(15000)) * time.Millisecond)
		case r < 5:
			tr.now -= aqm.Time(g.IntN(int(200 * time.Millisecond)))
		default:
			tr.now = tr.now.Add(time.Duration(1+g.IntN(60)) * time.Millisecond)
		}
		switch g.IntN(50) {
		case 0:
			tr.queue = float64(g.IntN(200))
		case 1:
			tr.queue = 0
		}
		tr.queue = max(0, tr.queue+g.NormFloat64()*3)
		if g.IntN(200) == 0 {
			tr.load = []float64{0.05, 0.5, 0.8, 0.95, 1.1}[g.IntN(5)]
		}
		if g.IntN(300) == 0 {
			tr.silent = g.IntN(len(tr.base)+1) - 1
		}
		if g.IntN(400) == 0 {
			tr.base[g.IntN(len(tr.base))] += float64(g.IntN(40)) * 1e6
		}
		if !tr.now.Before(tr.nextLoad) {
			tr.nextLoad = tr.now.Add(200 * time.Millisecond)
			return call{at: tr.now, kind: 'a', achieved: aqm.Rate(float64(rate) * tr.load * (0.9 + 0.2*g.Float64()))}
		}
		if g.IntN(20) == 0 {
			return call{at: tr.now, kind: 't'}
		}
		i := g.IntN(len(tr.base))
		if i == tr.silent {
			continue
		}
		d := tr.base[i] + tr.queue*1e6 + g.ExpFloat64()*2e6
		refl := i
		if g.IntN(500) == 0 {
			refl = []int{-1, 1000}[g.IntN(2)]
		}
		if g.IntN(1000) == 0 {
			d = -1
		}
		return call{at: tr.now, kind: 's', refl: refl, delay: time.Duration(d)}
	}
}

// replay makes one call on c.
func (cl call) replay(c *Controller) Decision {
	switch cl.kind {
	case 's':
		return c.Sample(cl.at, cl.refl, cl.delay)
	case 'a':
		return c.Achieved(cl.at, cl.achieved)
	}
	return c.Tick(cl.at)
}
