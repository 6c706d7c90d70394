package configcheck

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/dualq"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/internal/frame"
	"github.com/aqmkit/aqmkit/internal/proptest"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/aqmkit/aqmkit/queues"
	"github.com/aqmkit/aqmkit/red"
	"github.com/aqmkit/aqmkit/sfq"
)

// The no-drop-tail property.
//
// A configuration is drop-tail in disguise when, under a sustained
// unresponsive overload, its AQM never signals and only the hard limit
// drops. The overload is defined as follows, for one configuration C that
// Validate accepts, with E the configuration the queue reports in effect:
//
//   - One flow (one Hash), so that the per-flow guards of the fair queues
//     see the whole buffer; every packet's ECN codepoint is drawn from
//     Not-ECT, ECT(0) and ECT(1) (no CE arrives, so a CE that leaves is a
//     mark); sizes are uniform in [lo, hi], the sizes E is meant for (up to
//     the MTU where E has one, around the mean packet size where E has
//     one).
//   - B, the buffer, is the bytes E's limits hold in packets of the mean
//     size (the smaller of the byte limit and the packet limit times the
//     mean size).
//   - T is the sum of E's time constants: every delay the AQM waits for
//     before it may signal (target, interval, update period, burst
//     allowance, MTU-time guards). A link of rate R drains B in
//     D = 3·T + 10 ms: the standing delay of a full buffer is three times
//     anything the AQM waits for, so a queue that is meant to act on it
//     must. A queue that shapes itself (CAKE with a Rate) is its own link:
//     its Rate is chosen from B and D the same way. A configuration that
//     states the link's rate gets that link: COBALT's MTUTime is set to a
//     full-size packet's time at R, and RED's LinkRate, which times its
//     idle decay, is the link's rate (RED's thresholds count packets or
//     bytes, not time, so D plays no part for it).
//   - Packets arrive back to back at 2·R (the open loop: the sender does
//     not slow down) for 2·D + 12·(T + 1 ms), so the buffer fills (in D)
//     and then stays full for several time constants, and for at least
//     5000 arrivals, so that a buffer of a few packets is overloaded for
//     more than a handful of decisions. RED gets at least 10/w + 20000
//     arrivals, w its averaging weight (its average moves per arrival, not
//     per second), and PIE 20000 (see piePlan).
//
// The property: some packet is signalled by the AQM, an [aqm.Marked]
// verdict, a CE on a packet leaving Dequeue, or a drop counted as
// DroppedEarly or DroppedOverload, not only refused or evicted by the hard
// limit (DroppedOverlimit). FIFO and SFQ have no AQM and are exempt.
//
// The generators draw each field from a wide range that includes the
// values Validate refuses, and the property is checked on the accepted
// ones, so a rule missing from Validate shows up as a failure. Ranges are
// narrower than Validate's where a value only stretches a time constant
// beyond what a test can simulate (RED weights below 1e-4, PIE gains below
// 1/64 Hz, BLUE steps below 1/4096, delays of hours): such values make the
// AQM slow, not silent.

// dropTailSeed is the default seed of TestPropNoDropTail.
const dropTailSeed = 20260707

// minOverloadArrivals is the fewest arrivals of an overload: a buffer of a
// few packets fills and drains in a few packet times, and needs that many
// to be overloaded for longer than a handful of decisions.
const minOverloadArrivals = 5000

// overloadPlan is how one configuration is driven: packet sizes, the
// buffer and the time constants, as defined above.
type overloadPlan struct {
	lo, hi      int           // packet sizes, bytes
	buffer      float64       // B, bytes
	constant    time.Duration // T
	minArrivals int           // at least this many arrivals (RED)
	// shapedRate, if set, is the queue's own shaping rate: it is the link.
	shapedRate aqm.Rate
	// linkRate, if set, is the link rate the configuration states (RED's
	// LinkRate, which times its idle decay): the link runs at it.
	linkRate aqm.Rate
	// outside, if set, says why no overload of the sizes above is one the
	// configuration is meant to act on (see RED's plan).
	outside string
}

// dropTailCase generates a random configuration of one type (often one
// Validate refuses) and, for the configuration in effect, its plan.
type dropTailCase struct {
	gen  func(r *rand.Rand) any
	plan func(eff any) overloadPlan
}

// logUniform returns a value log-uniformly distributed in [lo, hi].
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

// often0 returns 0 one time in k, and v() otherwise.
func often0[V any](r *rand.Rand, k int, v func() V) V {
	var zero V
	if r.IntN(k) == 0 {
		return zero
	}
	return v()
}

func logInt(r *rand.Rand, lo, hi int) int { return int(logUniform(r, float64(lo), float64(hi))) }

func logDur(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return time.Duration(logUniform(r, float64(lo), float64(hi)))
}

// bufferOf is B for a byte limit (0: none) and a packet limit.
func bufferOf(limitBytes, limitPackets int, mean float64) float64 {
	b := float64(limitPackets) * mean
	if limitBytes > 0 {
		b = math.Min(b, float64(limitBytes))
	}
	return b
}

func genCoDel(r *rand.Rand) codel.Config {
	c := codel.Config{LimitPackets: often0(r, 4, func() int { return logInt(r, 1, 3000) }), LimitBytes: often0(r, 2, func() int { return logInt(r, 1, 4<<20) }), Control: codel.Control{Interval: logDur(r, 100*time.Microsecond, 10*time.Second), MTUBytes: often0(r, 3, func() int { return logInt(r, 1, 1<<20) }), DisableECN: r.IntN(3) == 0, CEThreshold: often0(r, 2, func() time.Duration { return logDur(r, time.Microsecond, time.Second) })}}
	c.Target = logDur(r, time.Microsecond, c.Interval)
	c.CEThresholdECT1Only = r.IntN(2) == 0
	c.StrictDeadline = r.IntN(2) == 0
	c.LinuxCount = r.IntN(2) == 0
	return c
}

func genCobalt(r *rand.Rand) cobalt.Config {
	c := cobalt.Config{LimitPackets: often0(r, 4, func() int { return logInt(r, 1, 3000) }), LimitBytes: often0(r, 2, func() int { return logInt(r, 1, 4<<20) }), Control: cobalt.Control{Interval: logDur(r, 100*time.Microsecond, 10*time.Second), BlueIncrement: often0(r, 3, func() float64 { return logUniform(r, 1.0/4096, 1) }), BlueDecrement: often0(r, 3, func() float64 { return logUniform(r, 1e-6, 1) }), BlueThreshold: often0(r, 2, func() time.Duration { return logDur(r, time.Microsecond, 10*time.Second) }), DisableBlueThreshold: r.IntN(2) == 0, DisableECN: r.IntN(3) == 0}}
	c.Target = logDur(r, time.Microsecond, c.Interval)
	// MTUTime, when set, is what it means: the time of one full-size
	// packet at the test's link rate (set by the plan, see cobaltMTUTime).
	if r.IntN(2) == 0 {
		c.MTUTime = 1
	}
	return c
}

func genPIE(r *rand.Rand) pie.Config {
	return pie.Config{LimitPackets: often0(r, 4, func() int { return logInt(r, 1, 3000) }), LimitBytes: often0(r, 2, func() int { return logInt(r, 1, 4<<20) }), Control: pie.Control{Target: logDur(r, 100*time.Microsecond, time.Second), TUpdate: logDur(r, 100*time.Microsecond, 250*time.Millisecond), Alpha: often0(r, 3, func() float64 { return logUniform(r, 1.0/64, 16.0) }), Beta: often0(r, 3, func() float64 { return logUniform(r, 1.0/64, 16.0) }), MaxBurst: often0(r, 3, func() time.Duration { return logDur(r, time.Microsecond, time.Second) }), DisableBurstAllowance: r.IntN(3) == 0, MeanPacketBytes: often0(r, 3, func() int { return logInt(r, 1, 65535) }), DisableECN: r.IntN(3) == 0, ECNThreshold: often0(r, 2, func() float64 { return r.Float64() }), Derandomize: r.IntN(2) == 0, ByteMode: r.IntN(2) == 0, RateEstimator: r.IntN(2) == 0, DequeueThresholdBytes: often0(r, 3, func() int { return logInt(r, 1, 1<<20) }), HighDelayBoost: r.IntN(2) == 0}}
}

// genSched fills in the scheduler fields that FQ-CoDel, FQ-COBALT and
// FQ-PIE share.
func genSched(r *rand.Rand) (flows, quantum, batch int) {
	flows = often0(r, 3, func() int { return logInt(r, 1, 1<<16) })
	quantum = often0(r, 3, func() int { return logInt(r, 256, 1<<20) })
	batch = often0(r, 3, func() int { return logInt(r, 1, 1<<16) })
	return
}

// cobaltMTUTime is the MTUTime a COBALT configuration means at link rate
// R given as nanoseconds per byte: one full-size packet's time, or 0.
func cobaltMTUTime(set bool, nsPerByte float64) time.Duration {
	if !set {
		return 0
	}
	return time.Duration(float64(frame.FullBytes) * nsPerByte)
}

// dropTailCases holds a generator and a plan for every configuration type
// with an AQM, by type.
var dropTailCases = map[reflect.Type]dropTailCase{
	reflect.TypeFor[red.Config](): {
		gen: func(r *rand.Rand) any {
			c := red.Config{
				ByteMode:        r.IntN(2) == 0,
				Gentle:          r.IntN(2) == 0,
				Adaptive:        r.IntN(3) == 0,
				MeanPacketBytes: often0(r, 3, func() int { return logInt(r, 64, 9000) }),
				LinkRate:        aqm.Rate(logUniform(r, float64(aqm.Mbit), float64(aqm.Gbit))),
				TargetDelay:     often0(r, 2, func() time.Duration { return logDur(r, time.Millisecond, time.Second) }),
				AdaptInterval:   often0(r, 2, func() time.Duration { return logDur(r, time.Millisecond, time.Second) }),
				Wait:            r.IntN(2) == 0,
				DisableECN:      r.IntN(3) == 0,
				DisableHardDrop: r.IntN(2) == 0,
			}
			if r.IntN(2) == 0 {
				c.Weight = logUniform(r, 1e-4, 1)
			}
			c.MaxP = often0(r, 3, func() float64 { return logUniform(r, 1e-3, 1) })
			if c.Adaptive && c.MaxP != 0 {
				c.MaxP = logUniform(r, 0.01, 0.5)
			}
			unit := 1
			if c.ByteMode {
				unit = max(c.MeanPacketBytes, 1)
			}
			c.MinThreshold = often0(r, 2, func() int { return unit * logInt(r, 1, 500) })
			c.MaxThreshold = often0(r, 2, func() int { return unit * logInt(r, 1, 1500) })
			c.LimitPackets = often0(r, 3, func() int { return logInt(r, 1, 3000) })
			c.LimitBytes = often0(r, 2, func() int { return logInt(r, 64, 8<<20) })
			return c
		},
		plan: func(eff any) overloadPlan {
			c := eff.(red.Config)
			m := c.MeanPacketBytes
			b := bufferOf(c.LimitBytes, c.LimitPackets, float64(m))
			t := time.Millisecond
			if c.Adaptive {
				t += 2 * c.AdaptInterval // max_p adapts at most once per AdaptInterval
			}
			pl := overloadPlan{lo: 1, hi: 2*m - 1, buffer: b, constant: t, minArrivals: int(10/c.Weight) + 20000, linkRate: c.LinkRate}
			// RED's thresholds count one unit; its limit in the other
			// unit bounds memory for packets of any size, and RED cannot
			// relate the two without knowing the sizes. A limit that holds
			// fewer than MaxThreshold mean-size packets keeps such packets
			// near or below the thresholds, where RED signals rarely or
			// never (documented in package red; Validate asks the same of
			// the limit in RED's own unit).
			if th := float64(c.MaxThreshold); (c.ByteMode && b < th) || (!c.ByteMode && b < th*float64(m)) {
				pl.outside = "the limit in the other unit holds fewer than MaxThreshold mean-size packets"
			}
			return pl
		},
	},
	reflect.TypeFor[codel.Config](): {
		gen: func(r *rand.Rand) any { return genCoDel(r) },
		plan: func(eff any) overloadPlan {
			c := eff.(codel.Config)
			return overloadPlan{lo: 1, hi: c.MTUBytes, buffer: bufferOf(c.LimitBytes, c.LimitPackets, float64(c.MTUBytes+1)/2),
				constant: c.Target + c.Interval}
		},
	},
	reflect.TypeFor[cobalt.Config](): {
		gen: func(r *rand.Rand) any { return genCobalt(r) },
		plan: func(eff any) overloadPlan {
			c := eff.(cobalt.Config)
			return overloadPlan{lo: 64, hi: frame.FullBytes, buffer: bufferOf(c.LimitBytes, c.LimitPackets, float64(64+frame.FullBytes)/2),
				constant: c.Target + c.Interval}
		},
	},
	reflect.TypeFor[pie.Config](): {
		gen: func(r *rand.Rand) any { return genPIE(r) },
		plan: func(eff any) overloadPlan {
			c := eff.(pie.Config)
			return piePlan(c.MeanPacketBytes, c.LimitBytes, c.LimitPackets, c.Target, c.TUpdate, c.MaxBurst, c.DisableBurstAllowance)
		},
	},
	reflect.TypeFor[dualq.Config](): {
		gen: func(r *rand.Rand) any {
			// The ranges of dualq's own TestPropNoDropTail, widened to
			// include refused limits.
			c := dualq.Config{
				LimitPackets: logInt(r, 1, 3000),
				MTUBytes:     logInt(r, 64, 9000),
				Target:       logDur(r, time.Millisecond, 10*time.Second),
			}
			c.LimitBytes = often0(r, 2, func() int { return logInt(r, 1, 3_000_000) })
			switch r.IntN(3) {
			case 0:
				c.StepThreshold = time.Duration(1 + r.Int64N(int64(10*time.Second)))
			case 1:
				c.StepThresholdPackets = 1 + r.IntN(c.LimitPackets)
			default:
				c.Ramp = true
			}
			c.StepMinQueuePackets = r.IntN(c.LimitPackets + 1)
			c.DropEnqueue = r.IntN(2) == 0
			c.OverflowOnOverload = r.IntN(2) == 0
			return c
		},
		plan: func(eff any) overloadPlan {
			c := eff.(dualq.Config)
			return overloadPlan{lo: 1, hi: c.MTUBytes, buffer: bufferOf(c.LimitBytes, c.LimitPackets, float64(c.MTUBytes+1)/2),
				constant: c.Target + c.Tupdate}
		},
	},
	reflect.TypeFor[fq.CoDelConfig](): {
		gen: func(r *rand.Rand) any {
			cc := genCoDel(r)
			c := fq.CoDelConfig{LimitPackets: cc.LimitPackets, MemoryLimitBytes: cc.LimitBytes, GlobalBacklogGuard: r.IntN(2) == 0, KeepCountOnOverload: r.IntN(2) == 0, Control: codel.Control{Target: cc.Target, Interval: cc.Interval, MTUBytes: cc.MTUBytes, DisableECN: cc.DisableECN, CEThreshold: cc.CEThreshold, CEThresholdECT1Only: cc.CEThresholdECT1Only, StrictDeadline: cc.StrictDeadline, LinuxCount: cc.LinuxCount}}
			c.Flows, c.QuantumBytes, c.DropBatchPackets = genSched(r)
			// A memory limit of under six MTUs with batch overload drops is
			// the case package fq's doc gives as a known gap (one batch can
			// take half the flow's bytes and leave CoDel too little to
			// signal on); it is not drawn here, so that the property holds
			// the rules Validate does apply.
			mtu := c.MTUBytes
			if mtu == 0 {
				mtu = 1514 // codel's default MTUBytes
			}
			if c.DropBatchPackets != 1 && c.MemoryLimitBytes > 0 && c.MemoryLimitBytes < 6*mtu {
				c.MemoryLimitBytes = 6 * mtu
			}
			return c
		},
		plan: func(eff any) overloadPlan {
			c := eff.(fq.CoDelConfig)
			return overloadPlan{lo: 1, hi: c.MTUBytes, buffer: bufferOf(c.MemoryLimitBytes, c.LimitPackets, float64(c.MTUBytes+1)/2),
				constant: c.Target + c.Interval}
		},
	},
	reflect.TypeFor[fq.CobaltConfig](): {
		gen: func(r *rand.Rand) any {
			cc := genCobalt(r)
			c := fq.CobaltConfig{LimitPackets: cc.LimitPackets, MemoryLimitBytes: cc.LimitBytes, Control: cobalt.Control{Target: cc.Target, Interval: cc.Interval, MTUTime: cc.MTUTime, BlueIncrement: cc.BlueIncrement, BlueDecrement: cc.BlueDecrement, BlueThreshold: cc.BlueThreshold, DisableBlueThreshold: cc.DisableBlueThreshold, DisableECN: cc.DisableECN}}
			c.Flows, c.QuantumBytes, c.DropBatchPackets = genSched(r)
			return c
		},
		plan: func(eff any) overloadPlan {
			c := eff.(fq.CobaltConfig)
			return overloadPlan{lo: 64, hi: frame.FullBytes, buffer: bufferOf(c.MemoryLimitBytes, c.LimitPackets, float64(64+frame.FullBytes)/2),
				constant: c.Target + c.Interval}
		},
	},
	reflect.TypeFor[fq.PIEConfig](): {
		gen: func(r *rand.Rand) any {
			pc := genPIE(r)
			c := fq.PIEConfig{LimitPackets: pc.LimitPackets, MemoryLimitBytes: pc.LimitBytes, Control: pie.Control{Target: pc.Target, TUpdate: pc.TUpdate, Alpha: pc.Alpha, Beta: pc.Beta, MaxBurst: pc.MaxBurst, DisableBurstAllowance: pc.DisableBurstAllowance, MeanPacketBytes: pc.MeanPacketBytes, DisableECN: pc.DisableECN, ECNThreshold: pc.ECNThreshold, Derandomize: pc.Derandomize, ByteMode: pc.ByteMode, RateEstimator: pc.RateEstimator, DequeueThresholdBytes: pc.DequeueThresholdBytes, HighDelayBoost: pc.HighDelayBoost}}
			c.Flows, c.QuantumBytes, c.DropBatchPackets = genSched(r)
			return c
		},
		plan: func(eff any) overloadPlan {
			c := eff.(fq.PIEConfig)
			return piePlan(c.MeanPacketBytes, c.MemoryLimitBytes, c.LimitPackets, c.Target, c.TUpdate, c.MaxBurst, c.DisableBurstAllowance)
		},
	},
	reflect.TypeFor[cake.Config](): {
		gen: func(r *rand.Rand) any {
			c := cake.Config{
				TinMode:          cake.TinMode(r.IntN(int(cake.Precedence) + 1)),
				FlowMode:         cake.FlowMode(r.IntN(int(cake.DualDstHost) + 1)),
				Interval:         logDur(r, 100*time.Microsecond, 10*time.Second),
				Overhead:         often0(r, 2, func() int { return -64 + r.IntN(256+64+1) }),
				MPU:              often0(r, 2, func() int { return r.IntN(256 + 1) }),
				Framing:          cake.Framing(r.IntN(int(cake.PTM) + 1)),
				Ingress:          r.IntN(3) == 0,
				LimitPackets:     often0(r, 4, func() int { return logInt(r, 1, 3000) }),
				MemoryLimitBytes: often0(r, 2, func() int { return logInt(r, 1, 8<<20) }),
			}
			c.Target = logDur(r, time.Microsecond, c.Interval)
			if r.IntN(2) == 0 {
				c.Rate = 1 // set by the plan from the buffer: the queue is the link
			}
			return c
		},
		plan: func(eff any) overloadPlan {
			c := eff.(cake.Config)
			mean := float64(64+cakeMTU) / 2
			return overloadPlan{lo: 64, hi: cakeMTU, buffer: bufferOf(c.MemoryLimitBytes, c.LimitPackets, mean),
				constant: c.Target + c.Interval}
		},
	},
}

// piePlan is the plan of PIE and FQ-PIE: sizes around the mean packet
// size, so that the "two packets" safeguard means what it says; T covers
// the target, one update period and the burst allowance.
func piePlan(mean, limitBytes, limitPackets int, target, tupdate, burst time.Duration, noBurst bool) overloadPlan {
	if noBurst {
		burst = 0
	}
	// PIE's probability starts at zero and grows per update with the
	// delay error, by 2^-11 of it while below 10^-6 and by larger shares
	// a decade at a time (RFC 8033's auto-tuning): reaching a percent
	// takes a few dozen updates, counted as 40 update periods. Each
	// arrival is then signalled with that probability, so a buffer of a
	// few packets, which sees few arrivals per time constant, also gets
	// 20000 arrivals.
	return overloadPlan{lo: 1, hi: 2*mean - 1, buffer: bufferOf(limitBytes, limitPackets, float64(mean)),
		constant: target + 40*tupdate + burst, minArrivals: 20000}
}

// effectiveConfig returns q.Config().
func effectiveConfig(q any) any {
	return reflect.ValueOf(q).MethodByName("Config").Call(nil)[0].Interface()
}

// dropTailRun is the result of one overload.
type dropTailRun struct {
	signals, refused, arrivals int
	desc                       string
}

// runOverload builds a queue from cfg (after fixing the fields the plan
// derives from the link), drives it through the overload and counts the
// AQM's signals. ok is false if Validate refuses cfg.
func runOverload(t *testing.T, c dropTailCase, cfg any, r *rand.Rand) (dropTailRun, bool) {
	t.Helper()
	// The link: first from the configuration as generated, then again
	// with the fields that depend on it (MTUTime, CAKE's Rate).
	q, err := queues.FromConfig[uint64](cfg, nil)
	if err != nil {
		return dropTailRun{}, false
	}
	pl := c.plan(effectiveConfig(q))
	if pl.outside != "" {
		return dropTailRun{desc: pl.outside}, false
	}
	drain := 3*pl.constant + 10*time.Millisecond
	nsPerByte := float64(drain) / pl.buffer
	switch v := cfg.(type) {
	case cobalt.Config:
		v.MTUTime = cobaltMTUTime(v.MTUTime != 0, nsPerByte)
		cfg = v
	case fq.CobaltConfig:
		v.MTUTime = cobaltMTUTime(v.MTUTime != 0, nsPerByte)
		cfg = v
	case cake.Config:
		if v.Rate != 0 {
			// CAKE's tins add MTU times to target and interval, and
			// the rate sets the byte limit it derives: iterate.
			for range 3 {
				v.Rate = aqm.Rate(max(8e9/nsPerByte, 1000)) // at least 1 kbit/s, so that MTU times stay finite
				q, err = queues.FromConfig[uint64](any(v), nil)
				if err != nil {
					return dropTailRun{}, false
				}
				mtu := time.Duration(min(float64(cakeMTU)*nsPerByte, float64(time.Hour)))
				pl = c.plan(effectiveConfig(q))
				pl.constant += 3*mtu + 4*mtu // the tin's target rise (1.5 MTU times, twice) and the 4-MTU guard
				pl.shapedRate = v.Rate
				nsPerByte = float64(3*pl.constant+10*time.Millisecond) / pl.buffer
			}
		}
		cfg = v
	}
	q, err = queues.FromConfig[uint64](cfg, nil)
	if err != nil {
		return dropTailRun{}, false
	}
	eff := effectiveConfig(q)
	if r := max(pl.shapedRate, pl.linkRate); r != 0 {
		nsPerByte = 8e9 / float64(r)
	}
	drain = time.Duration(pl.buffer * nsPerByte)
	horizon := 2*drain + 12*(pl.constant+time.Millisecond)
	t0 := aqm.Time(time.Second)
	end := t0 + aqm.Time(horizon)
	paced, _ := q.(aqm.Paced)
	if pl.shapedRate == 0 {
		paced = nil
	}
	size := func() uint32 { return uint32(pl.lo + r.IntN(pl.hi-pl.lo+1)) }
	var run dropTailRun
	now, linkFree, nextArr := t0, t0, t0
	minArrivals := max(pl.minArrivals, minOverloadArrivals)
	for i := 0; now < end || run.arrivals < minArrivals; i++ {
		if nextArr <= linkFree {
			now = nextArr
			s := size()
			ecn := [...]aqm.ECN{aqm.NotECT, aqm.ECT0, aqm.ECT1}[r.IntN(3)]
			if q.Enqueue(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: s, Hash: 0x5eed, ECN: ecn}}, now) == aqm.Marked {
				run.signals++
			}
			run.arrivals++
			nextArr += aqm.Time(max(float64(s)*nsPerByte/2, 1)) // twice the link rate
			continue
		}
		now = linkFree
		p, ok := q.Dequeue(now)
		switch {
		case ok:
			if p.ECN == aqm.CE {
				run.signals++
			}
			if paced != nil {
				linkFree = now // the queue paces itself; ask it when it is next due
				if nd := paced.NextDeparture(now); nd > now {
					linkFree = nd
				}
			} else {
				linkFree = now + aqm.Time(max(float64(p.Size)*nsPerByte, 1))
			}
		case paced != nil && q.Len() > 0:
			linkFree = max(paced.NextDeparture(now), now+1)
		default:
			linkFree = nextArr
		}
	}
	st := q.Stats()
	run.signals += int(st.DroppedEarly.Packets + st.DroppedOverload.Packets)
	run.refused = int(st.DroppedOverlimit.Packets)
	run.desc = fmt.Sprintf("%T%+v: %d arrivals over %v, B %.0f bytes, T %v, link %.3g ns/byte, sizes [%d, %d]; %d dropped at the limit",
		eff, eff, run.arrivals, horizon, pl.buffer, pl.constant, nsPerByte, pl.lo, pl.hi, run.refused)
	return run, true
}

// TestPropNoDropTail protects every AQM of the registry against
// configurations that silently turn it into drop-tail: for random
// configurations that Validate accepts, a sustained unresponsive overload
// at twice the link rate (defined at the top of this file) is signalled by
// the AQM (a mark, or an early or overload drop), not only by the hard
// limit. FIFO and SFQ have no AQM and are exempt.
func TestPropNoDropTail(t *testing.T) {
	exempt := map[reflect.Type]bool{reflect.TypeFor[fifo.Config](): true, reflect.TypeFor[sfq.Config](): true}
	for _, zero := range registryConfigs() {
		typ := reflect.TypeOf(zero)
		if exempt[typ] {
			continue
		}
		c, ok := dropTailCases[typ]
		if !ok {
			t.Errorf("%v has no no-drop-tail generator; add one to dropTailCases", typ)
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			refused, accepted, outside := 0, 0, 0
			props := gopter.NewProperties(proptest.Parameters(t, dropTailSeed, 40, 8))
			props.Property("overload is signalled", prop.ForAllNoShrink(
				func(seed uint64) bool {
					r := rand.New(rand.NewPCG(seed, 7))
					for range 1000 {
						cfg := c.gen(r)
						v := reflect.New(typ).Elem()
						v.Set(reflect.ValueOf(cfg))
						if f := v.FieldByName("Seed"); f.IsValid() {
							f.SetUint(seed | 1)
						}
						run, ok := runOverload(t, c, v.Interface(), r)
						if !ok {
							if run.desc != "" {
								outside++
							} else {
								refused++
							}
							continue
						}
						accepted++
						if run.signals == 0 {
							t.Logf("no AQM signal: %s", run.desc)
							return false
						}
						return true
					}
					t.Logf("no accepted configuration in 1000 draws")
					return false
				},
				gen.UInt64(),
			))
			props.TestingRun(t)
			t.Logf("%d configurations accepted, %d refused by Validate, %d outside the overload's definition", accepted, refused, outside)
			if accepted < refused/20 {
				t.Errorf("only %d of %d generated configurations accepted: the generator no longer tests much", accepted, accepted+refused)
			}
		})
	}
}

// cakeMTU is the packet size CAKE derives its tins' parameters from (an
// Ethernet MTU plus its header, stated in cake's docs).
const cakeMTU = 1514
