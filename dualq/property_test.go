package dualq_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/internal/proptest"
)

const propSeed = 20260518

func propParams(t *testing.T, full, short int) *gopter.TestParameters {
	t.Helper()
	return proptest.Parameters(t, propSeed, full, short)
}

// TestPropProbabilitiesInRange protects p', p_C and p_CL staying in [0, 1]
// with p_C ≤ p' ≤ max(p_CL, …) on random traces and random gains, k and
// overload modes.
func TestPropProbabilitiesInRange(t *testing.T) {
	props := gopter.NewProperties(propParams(t, 200, 40))
	props.Property("probabilities in [0,1]", prop.ForAll(
		func(seed uint64, k int, alpha, beta float64, overflow bool) bool {
			q, err := dualq.New[uint64](dualq.Config{CouplingFactor: k, Alpha: alpha, Beta: beta, OverflowOnOverload: overflow, Seed: seed, LimitPackets: 200}, nil)
			if err != nil {
				return false
			}
			r := rand.New(rand.NewPCG(seed, 1))
			now := t0
			for range 3000 {
				now += aqm.Time(r.Int64N(int64(3 * time.Millisecond)))
				if r.IntN(500) == 0 {
					now += aqm.Time(r.Int64N(int64(time.Hour)))
				}
				if r.IntN(10) < 6 {
					q.Enqueue(pkt(aqm.ECN(r.IntN(4)), uint32(r.IntN(1500)), 0), now)
				} else {
					q.Dequeue(now)
				}
				d := q.Detail()
				for _, p := range []float64{d.Prob, d.ProbClassic, d.ProbL4SCoupled} {
					if !(p >= 0 && p <= 1) {
						return false
					}
				}
				if d.ProbClassic > d.Prob || (overflow && d.Prob > 1/float64(k)) || d.ProbRaw > 1<<32 {
					return false
				}
			}
			return true
		},
		gen.UInt64(), gen.IntRange(1, 8), gen.Float64Range(0.001, 100), gen.Float64Range(0.001, 100), gen.Bool(),
	))
	props.TestingRun(t)
}

// TestPropClassicNotStarved protects the Classic queue's weight: while both
// queues stay backlogged, the Classic bytes served are at least wc % of all
// bytes served, minus a constant. Derivation: the credit equals
// init + wc·B_L − wl·B_C, L is served only at credit ≤ 0 so the credit
// never exceeds max(init, wc·maxSize); hence 100·B_C ≥ wc·(B_L+B_C) − S
// with S = max(init, wc·maxSize) − init.
func TestPropClassicNotStarved(t *testing.T) {
	props := gopter.NewProperties(propParams(t, 200, 40))
	props.Property("Classic gets its weight", prop.ForAll(
		func(seed uint64, wc, mtu int) bool {
			q, err := dualq.New[uint64](dualq.Config{ClassicProtectionPercent: wc, MTUBytes: mtu, StepThreshold: time.Second, Seed: seed}, nil)
			if err != nil {
				return false
			}
			r := rand.New(rand.NewPCG(seed, 2))
			size := func() uint32 { return uint32(64 + r.IntN(1437)) }
			init := int64(mtu) * int64(wc-(100-wc))
			S := max(init, int64(wc)*1500) - init
			var bl, bc int64
			for range 3000 {
				for q.Detail().PacketsL4S < 4 {
					q.Enqueue(pkt(aqm.ECT1, size(), 0), t0)
				}
				for q.Detail().PacketsClassic < 4 {
					q.Enqueue(pkt(aqm.ECT0, size(), 0), t0)
				}
				p, ok := q.Dequeue(t0)
				if !ok {
					return false
				}
				if p.ECN == aqm.ECT0 { // p' stays 0 (time never moves): no marks
					bc += int64(p.Size)
				} else {
					bl += int64(p.Size)
				}
				if 100*bc < int64(wc)*(bl+bc)-S {
					t.Logf("wc=%d: B_C=%d B_L=%d", wc, bc, bl)
					return false
				}
			}
			return true
		},
		gen.UInt64(), gen.IntRange(1, 99), gen.IntRange(64, 9000),
	))
	props.TestingRun(t)
}

// TestPropL4SSojourn protects the L4S queue's latency under unresponsive
// Classic overload: with an open-loop link (deterministic serialization at
// rate R), L4S arrivals at a constant rate below the L4S share wl·R and
// unresponsive Not-ECT Classic arrivals at 1.5–3·R, every L4S packet's
// sojourn stays below the step threshold plus one scheduler round, a round
// being the time to send 100/wc MTUs (wl/wc MTUs of L4S and one of Classic).
func TestPropL4SSojourn(t *testing.T) {
	props := gopter.NewProperties(propParams(t, 60, 12))
	props.Property("L4S sojourn bounded", prop.ForAll(
		func(seed uint64, wc int, lshare, cover float64, mbps int) bool {
			const mtu = 1500
			cfg := dualq.Config{ClassicProtectionPercent: wc, Seed: seed}
			q, err := dualq.New[uint64](cfg, nil)
			if err != nil {
				return false
			}
			r := rand.New(rand.NewPCG(seed, 3))
			nsPerByte := 8000.0 / float64(mbps) // ns per byte at mbps Mb/s
			wl := float64(100 - wc)
			lSize, cSize := uint32(200+r.IntN(1301)), uint32(64+r.IntN(1437))
			// Inter-arrival times: L at lshare·(wl/100)·R, C at cover·R.
			lGap := aqm.Time(float64(lSize) * nsPerByte / (lshare * wl / 100))
			cGap := aqm.Time(float64(cSize) * nsPerByte / cover)
			round := time.Duration(100.0 / float64(wc) * mtu * nsPerByte)
			bound := dualq.DefaultStepThreshold + round
			nextL, nextC, linkFree := t0, t0+1, t0
			end := t0 + aqm.Time(3*time.Second)
			var worst time.Duration
			for {
				now := min(nextL, nextC, linkFree)
				if now > end {
					break
				}
				switch now {
				case nextL:
					q.Enqueue(pkt(aqm.ECT1, lSize, 0), now)
					nextL += lGap
				case nextC:
					q.Enqueue(pkt(aqm.NotECT, cSize, 0), now)
					nextC += cGap
				default:
					p, ok := q.Dequeue(now)
					if !ok {
						linkFree = min(nextL, nextC)
						continue
					}
					if p.ECN != aqm.NotECT {
						worst = max(worst, p.Enqueued.Since(now))
					}
					linkFree = now + aqm.Time(float64(p.Size)*nsPerByte)
				}
			}
			if worst > bound {
				t.Logf("wc=%d lshare=%.2f cover=%.2f %d Mb/s: worst L4S sojourn %v > %v", wc, lshare, cover, mbps, worst, bound)
				return false
			}
			return true
		},
		gen.UInt64(), gen.IntRange(5, 50), gen.Float64Range(0.05, 0.9), gen.Float64Range(1.5, 3), gen.IntRange(10, 200),
	))
	props.TestingRun(t)
}

// TestPropNoDropTail protects against configurations that silently turn
// DualPI2 into a drop-tail queue: for random configurations that Validate
// accepts (limits from 2 packets and 4 MTUs up, MTUs of 64 to 9000 bytes,
// targets from 1 ms to 10 s, time or packet steps, StepMinQueuePackets,
// DropEnqueue, OverflowOnOverload), an unresponsive overload at twice the
// link rate, in packets no larger than the MTU and of every ECN
// codepoint, is signalled: some packet is marked or dropped by the AQM,
// not only refused at the limit. "Overload" means a queue the AQM is
// meant to act on: the link drains the full buffer in more than three
// times Target plus Tupdate, so the standing delay exceeds the target.
func TestPropNoDropTail(t *testing.T) {
	props := gopter.NewProperties(propParams(t, 60, 12))
	props.Property("overload is signalled", prop.ForAll(
		func(seed uint64) bool {
			r := rand.New(rand.NewPCG(seed, 4))
			cfg := dualq.Config{Seed: seed}
			cfg.LimitPackets = int(math.Exp(math.Log(2) + r.Float64()*math.Log(1500))) // 2 … 3000, small ones often
			cfg.MTUBytes = 64 + r.IntN(9000-64+1)
			if r.IntN(2) == 0 {
				cfg.LimitBytes = 4*cfg.MTUBytes + r.IntN(3_000_000)
			}
			cfg.Target = time.Duration(math.Exp(math.Log(1e6) + r.Float64()*math.Log(1e4))) // 1 ms … 10 s
			switch r.IntN(3) {
			case 0:
				cfg.StepThreshold = time.Duration(1 + r.Int64N(int64(10*time.Second)))
			case 1:
				cfg.StepThresholdPackets = 1 + r.IntN(cfg.LimitPackets-1)
			default:
				cfg.Ramp = true
			}
			if cfg.StepThresholdPackets > cfg.LimitPackets-2 {
				cfg.StepThresholdPackets = 0
			}
			cfg.StepMinQueuePackets = r.IntN(cfg.LimitPackets)
			cfg.DropEnqueue = r.IntN(2) == 0
			cfg.OverflowOnOverload = r.IntN(2) == 0
			if err := cfg.Validate(); err != nil {
				t.Logf("generated a refused configuration: %v", err)
				return false
			}
			q, err := dualq.New[uint64](cfg, nil)
			if err != nil {
				return false
			}
			eff := q.Config()
			size := func() uint32 { return uint32(1 + r.IntN(eff.MTUBytes)) }
			mean := float64(eff.MTUBytes+1) / 2
			buf := math.Min(float64(eff.LimitBytes), float64(eff.LimitPackets)*mean)
			drain := 3*(eff.Target+eff.Tupdate) + 10*time.Millisecond
			nsPerByte := float64(drain) / buf
			horizon := 12 * (eff.Target + eff.Tupdate + time.Millisecond)
			now, linkFree, nextArr := t0, t0, t0
			end := t0 + aqm.Time(horizon)
			for now < end {
				if nextArr <= linkFree {
					now = nextArr
					s := size()
					q.Enqueue(pkt(aqm.ECN(r.IntN(3)+1)%4, s, 0), now) // Not-ECT, ECT(1), ECT(0)
					nextArr += aqm.Time(float64(s) * nsPerByte / 2)   // twice the link rate
					continue
				}
				now = linkFree
				if p, ok := q.Dequeue(now); ok {
					linkFree = now + aqm.Time(float64(p.Size)*nsPerByte)
				} else {
					linkFree = nextArr
				}
			}
			st := q.Stats()
			signals := st.Marked.Packets + st.DroppedEarly.Packets + st.DroppedOverload.Packets
			if signals == 0 {
				t.Logf("no signal: %+v, %d refused at the limit, p'=%v", eff, st.DroppedOverlimit.Packets, q.Detail().Prob)
				return false
			}
			return true
		},
		gen.UInt64(),
	))
	props.TestingRun(t)
}
