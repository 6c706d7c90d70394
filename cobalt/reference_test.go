package cobalt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/require"
)

// refCobalt is a slow model of a COBALT queue written from the published
// description (CAKE's COBALT, with ns-3's standalone queue and BLUE
// ceiling): plain int64 and float64 state, a slice for the FIFO, big
// integers for the control law's exact spacing floor(interval/sqrt(n)).
type refCobalt struct {
	target, interval, mtuGuard, blueCeil int64
	inc, dec                             float64
	ecn                                  bool
	limitP, limitB                       int

	fifo        []aqm.Packet[uint64]
	bytes       int
	count       int64
	next, stamp int64
	dropping    bool
	p           float64
	src         rng.Source
	dropped     []aqm.Packet[uint64]
	dropWhy     []aqm.Verdict
}

func newRef(cfg Config) *refCobalt {
	d := cfg.withDefaults()
	r := &refCobalt{
		target: int64(d.Target), interval: int64(d.Interval), mtuGuard: 4 * int64(d.MTUTime),
		blueCeil: math.MaxInt64, inc: d.BlueIncrement, dec: d.BlueDecrement, ecn: !d.DisableECN,
		limitP: d.LimitPackets, limitB: d.LimitBytes,
	}
	if !d.DisableBlueThreshold {
		r.blueCeil = int64(d.BlueThreshold)
	}
	r.src.Seed(d.Seed)
	return r
}

// gap is the control law's spacing after n signals: floor(interval/sqrt(n)),
// computed as the integer square root of floor(interval²/n).
func (r *refCobalt) gap(n int64) int64 {
	if n <= 1 {
		return r.interval
	}
	x := new(big.Int).Mul(big.NewInt(r.interval), big.NewInt(r.interval))
	x.Quo(x, big.NewInt(n))
	return x.Sqrt(x).Int64()
}

const pMax = float64(1<<32-1) / (1 << 32) // the fast code's saturated 1.0

func (r *refCobalt) timePolicy(now int64) {
	if r.next > now+r.interval {
		r.next = now + r.gap(r.count)
	}
	if r.stamp > now {
		r.stamp = now
	}
}

func (r *refCobalt) blueUp(now int64) {
	if now-r.stamp > r.target {
		r.p = math.Min(r.p+r.inc, pMax)
		r.stamp = now
	}
}

func (r *refCobalt) enqueue(p aqm.Packet[uint64], now int64) aqm.Verdict {
	p.ECN &= aqm.ECNMask
	p.Enqueued = aqm.Time(now)
	if len(r.fifo) >= r.limitP || r.limitB > 0 && r.bytes+int(p.Size) > r.limitB {
		r.timePolicy(now)
		r.blueUp(now)
		r.dropping, r.next = true, now
		r.count = max(r.count, 1)
		return aqm.DroppedOverlimit
	}
	r.fifo = append(r.fifo, p)
	r.bytes += int(p.Size)
	return aqm.Enqueued
}

func (r *refCobalt) dequeue(now int64) (aqm.Packet[uint64], bool) {
	for drops := 0; ; {
		if len(r.fifo) == 0 {
			r.timePolicy(now)
			if r.p > 0 && now-r.stamp > r.target {
				r.p = math.Max(r.p-r.dec, 0)
				r.stamp = now
			}
			r.dropping = false
			if r.count > 0 && now >= r.next {
				r.count--
				r.next += r.gap(r.count)
			}
			return aqm.Packet[uint64]{}, false
		}
		p := r.fifo[0]
		r.fifo = r.fifo[1:]
		r.bytes -= int(p.Size)
		act := Deliver
		if drops < MaxDropsPerDequeue {
			act = r.signal(p, now)
		}
		switch act {
		case Mark:
			p.ECN = aqm.CE
		case DropCoDel, DropBlue:
			why := aqm.DroppedEarly
			if act == DropBlue && p.ECN != aqm.NotECT {
				why = aqm.DroppedOverload
			}
			drops++
			r.dropped = append(r.dropped, p)
			r.dropWhy = append(r.dropWhy, why)
			continue
		}
		return p, true
	}
}

func (r *refCobalt) signal(p aqm.Packet[uint64], now int64) Action {
	r.timePolicy(now)
	soj := max(now-int64(p.Enqueued), 0)
	if soj > r.blueCeil {
		r.blueUp(now)
	}
	above := soj > r.target && soj > r.mtuGuard
	n := r.count
	late := now - r.next
	due := n > 0 && late >= 0
	act := Deliver
	if above {
		if !r.dropping {
			r.dropping = true
			r.next = now + r.gap(n)
		}
		if n == 0 {
			n = 1
		}
	} else {
		r.dropping = false
	}
	if due && r.dropping {
		if p.ECN != aqm.NotECT && r.ecn {
			act = Mark
		} else {
			act = DropCoDel
		}
		n++
		r.next += r.gap(n)
		late = now - r.next
	} else if due {
		if late >= n*r.interval {
			n = 0
		}
		for steps := 0; n > 0 && late >= 0 && steps < 64; steps++ {
			n--
			r.next += r.gap(n)
			late = now - r.next
		}
	}
	if act != DropCoDel && r.p > 0 && float64(r.src.Uint32()) < r.p*(1<<32) {
		act = DropBlue
	}
	r.count = n
	if n == 0 {
		r.next = now + r.interval
	} else if late > 0 && (act == Deliver || act == Mark) {
		r.next = now
	}
	return act
}

// TestMatchesReference protects COBALT's decisions: on random traces the
// queue and the slow model, fed the same random stream, return the same
// verdicts, the same packets and the same drops with the same reasons.
func TestMatchesReference(t *testing.T) {
	traces := 300
	if testing.Short() {
		traces = 60
	}
	var drops, marks, blue int
	for tr := range traces {
		g := rand.New(rand.NewPCG(uint64(tr), 99))
		cfg := Config{
			Target:        time.Duration(1+g.IntN(10)) * time.Millisecond,
			Interval:      time.Duration(20+g.IntN(200)) * time.Millisecond,
			LimitPackets:  20 + g.IntN(200),
			DisableECN:    g.IntN(4) == 0,
			BlueThreshold: time.Duration(50+g.IntN(400)) * time.Millisecond,
			Seed:          uint64(tr + 1),
		}
		if g.IntN(3) == 0 {
			cfg.MTUTime = time.Duration(g.IntN(3)) * time.Millisecond
		}
		if g.IntN(3) == 0 {
			cfg.LimitBytes = 20000 + g.IntN(200000)
		}
		var qd []aqm.Packet[uint64]
		var qw []aqm.Verdict
		q, err := New(cfg, func(p aqm.Packet[uint64], v aqm.Verdict) { qd = append(qd, p); qw = append(qw, v) })
		require.NoError(t, err)
		ref := newRef(cfg)
		now := int64(time.Second)
		var seq uint64
		checked := 0
		// Arrivals at a rate that swings between under and over the
		// service rate, so episodes start, end, overflow and decay.
		rate := 0.5 + g.Float64()*2
		for step := range 4000 {
			switch {
			case g.IntN(200) == 0:
				now += int64(g.IntN(3)) * int64(time.Second) // idle gap
			case g.IntN(500) == 0:
				now -= int64(g.IntN(5)) * int64(time.Millisecond) // backwards
			default:
				now += int64(time.Millisecond)
			}
			if step%500 == 0 {
				rate = 0.5 + g.Float64()*2
			}
			for k := 0; float64(k) < rate+g.Float64()-0.5; k++ {
				seq++
				p := aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: uint32(64 + g.IntN(1437)), ECN: aqm.ECN(g.IntN(4))}}
				require.Equal(t, ref.enqueue(p, now), q.Enqueue(p, aqm.Time(now)), "trace %d step %d", tr, step)
			}
			want, wok := ref.dequeue(now)
			got, gok := q.Dequeue(aqm.Time(now))
			require.Equal(t, wok, gok, "trace %d step %d", tr, step)
			require.Equal(t, want, got, "trace %d step %d", tr, step)
			require.Equal(t, len(ref.dropped), len(qd), "trace %d step %d", tr, step)
			for ; checked < len(qd); checked++ {
				require.Equal(t, ref.dropped[checked], qd[checked], "trace %d step %d", tr, step)
				require.Equal(t, ref.dropWhy[checked], qw[checked], "trace %d step %d", tr, step)
			}
			if got.ECN == aqm.CE {
				marks++
			}
		}
		drops += len(qd)
		blue += int(q.Detail().BlueDrops)
	}
	t.Logf("%d drops (%d by BLUE), %d CE packets out", drops, blue, marks)
	require.Positive(t, drops)
	require.Positive(t, blue, "the traces must exercise BLUE")
}
