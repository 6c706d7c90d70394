package red

import (
	"iter"
	"math"
	"math/bits"
	"unsafe"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/metrics"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// Fixed-point scales and guards.
const (
	// one is probability 1 in Q0.32: a probability p is carried as the
	// integer p·2^32, so max_p = 1 is representable (1<<32 needs 33 bits,
	// which is why probabilities are uint64, not uint32 as in Linux, whose
	// Q0.32 max_P of 1.0 wraps to 0).
	one = 1 << 32
	// maxCount caps count so that count·p (p ≤ 2^32 + 1 after rounding,
	// see prob) stays below 2^63 and cannot wrap. A count this large needs
	// 2^31 arrivals at a probability that rounds to zero; the cap changes no
	// decision (the next non-zero probability signals at once either way).
	maxCount = 1 << 31
	// tinyAvg: after an idle decay an average below this is set to zero,
	// so that repeated decays never produce subnormal floats (which cost
	// ~100 cycles per operation on x86). Thresholds are at least 1 packet or
	// 1 byte, so no decision can depend on the difference.
	tinyAvg = 1e-12
	// maxAdaptSteps bounds one catch-up of Adaptive RED. Each pass either
	// changes max_p or ends or skips the catch-up (see adapt); max_p can
	// grow from 0.01 to 0.5 in at most 53 additive steps (7 steps of ×1.25
	// up to 0.04, then 46 of +0.01) and shrink from 0.5 to 0.01 in at most
	// 38 steps of ×0.9, so 53 + 38 + a few skips is far below this bound,
	// which is a safety net only.
	maxAdaptSteps = 512
	// unstarted marks nextTick before the first arrival.
	unstarted = aqm.Time(math.MinInt64)
)

// Queue is a RED, Gentle RED or Adaptive RED queue of packets with payload
// type T. Create it with [New]. It implements [aqm.Queue] and is not safe
// for concurrent use.
type Queue[T any] struct {
	// Per-packet state, kept together.
	avg      float64 // average queue, packets or bytes
	count    int64   // arrivals since the last early signal in the band; -1 outside it
	r        uint64  // R·2^32 with R uniform in (0, 1] (times MeanPacketBytes in byte mode)
	slope    float64 // p·2^32 per unit of average above min_th: max_p·2^32/(max_th−min_th)
	gBase    float64 // gentle region: p·2^32 = gBase + (avg−max_th)·gSlope
	gSlope   float64
	lastProb uint64 // p_b·2^32 of the last arrival in the band or above it
	backlog  uint64
	ring     ring.Ring[aqm.Packet[T]]
	p        params
	rng      rng.Source

	maxP      float64  // current max_p
	idleStart aqm.Time // when the queue last became empty (valid while it is)
	nextTick  aqm.Time // Adaptive RED: the next adaptation instant

	onDrop aqm.DropFunc[T]
	stats  aqm.Stats
	cnt    counters
	cfg    Config
}

type counters struct {
	probDrops, probMarks, forcedDrops, forcedMarks, adaptations uint64
}

var (
	_ aqm.Queue[int]      = (*Queue[int])(nil)
	_ aqm.BatchQueue[int] = (*Queue[int])(nil)
)

// New returns an empty queue configured by cfg. onDrop may be nil: a RED
// queue decides everything at enqueue and never drops a packet it has
// accepted, so it never calls onDrop; the parameter keeps the constructor
// shape of the other queues. The error wraps [aqm.ErrInvalidConfig] once per
// bad field.
func New[T any](cfg Config, onDrop aqm.DropFunc[T]) (*Queue[T], error) {
	eff, p, err := cfg.derive()
	if err != nil {
		return nil, err
	}
	eff.Seed = rng.SeedOrRandom(cfg.Seed)
	q := &Queue[T]{
		p:         p,
		cfg:       eff,
		onDrop:    onDrop,
		count:     -1,
		maxP:      p.maxP,
		idleStart: math.MinInt64,
		nextTick:  unstarted,
		rng:       rng.New(eff.Seed),
	}
	q.ring.Init(p.limitPackets)
	q.setSlopes()
	return q, nil
}

// setSlopes recomputes the probability constants from max_p. They are
// float64 multipliers that yield the Q0.32 probability directly, so the hot
// path does one multiply and one conversion per packet.
func (q *Queue[T]) setSlopes() {
	q.slope = q.maxP * one / (q.p.maxTh - q.p.minTh)
	q.gBase = q.maxP * one
	q.gSlope = (1 - q.maxP) * one / q.p.maxTh
}

// Enqueue offers p at time now. RED updates its average queue, then
// accepts p ([aqm.Enqueued]), marks it CE ([aqm.Marked], ECN-capable
// packets only), or refuses it: [aqm.DroppedEarly] for RED's congestion
// drops, [aqm.DroppedOverload] for an ECN-capable packet dropped where RED's
// signal is forced (see DisableHardDrop), [aqm.DroppedOverlimit] when a hard
// limit is full or p alone exceeds LimitBytes.
func (q *Queue[T]) Enqueue(p aqm.Packet[T], now aqm.Time) aqm.Verdict {
	ecn := p.ECN & aqm.ECNMask
	q.stats.NoteSize(p.Size)
	size := uint64(p.Size)
	if size > q.p.limitBytes {
		// Refused before RED sees it: it could never be queued.
		q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
		return aqm.DroppedOverlimit
	}
	if q.p.adaptive && q.adaptDue(now) {
		q.adapt(now)
	}
	n := q.ring.Len()
	if n == 0 {
		q.endIdle(now)
	} else {
		cur := float64(n)
		if q.p.byteMode {
			cur = float64(q.backlog)
		}
		q.avg = q.avg*q.p.omw + q.p.w*cur
	}
	v := aqm.Enqueued
	if q.avg < q.p.minTh {
		q.count = -1
	} else {
		v = q.signal(p.Size, ecn)
		if !v.Accepted() {
			q.stats.CountDrop(v, p.Size, false)
			return v
		}
	}
	if n >= q.p.limitPackets || q.backlog+size > q.p.limitBytes {
		q.stats.CountDrop(aqm.DroppedOverlimit, p.Size, false)
		return aqm.DroppedOverlimit
	}
	if v == aqm.Marked {
		ecn = aqm.CE
		q.stats.Marked.Add(p.Size)
	}
	p.ECN, p.Enqueued = ecn, now
	q.ring.PushBack(p) // room: n < limitPackets ≤ Cap
	q.backlog += size
	q.stats.Enqueued.Add(p.Size)
	return v
}

// EnqueueBatch offers ps[i] for i < n = min(len(ps), len(vs)) at now, as
// n calls of Enqueue would, writes each verdict to vs[i] and returns the
// number accepted (see [aqm.BatchQueue]). The common case, an arrival to a
// busy queue with room for it, runs inline and writes the packet straight
// into its ring slot; the rest (an empty queue, a full limit, the end of
// the ring's storage, an Adaptive RED instant) is handed to Enqueue.
func (q *Queue[T]) EnqueueBatch(ps []aqm.Packet[T], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	if n == 1 { // no run to share the set-up with
		v := q.Enqueue(ps[0], now)
		vs[0] = v
		if v.Accepted() {
			return 1
		}
		return 0
	}
	ps, vs = ps[:n], vs[:n]
	// The average, the backlog, the queue length and the counters live in
	// registers for the burst and are written back before any call that
	// reads them. Accepted packets go into run, the ring's free slots, and
	// are committed in one step.
	w, omw, minTh, maxTh := q.p.w, q.p.omw, q.p.minTh, q.p.maxTh
	limP, limB := q.p.limitPackets, q.p.limitBytes
	byteMode, adaptive := q.p.byteMode, q.p.adaptive
	plainBand := !q.p.wait && !byteMode // Figure 17's test inline
	avg, backlog, maxSize, count := q.avg, q.backlog, q.stats.MaxSize, q.count
	qlen := q.ring.Len()
	run := q.ring.Spare(n)
	j := 0          // slots of run written
	base := backlog // the backlog before the packets in run[:j]
	accepted := 0   // packets accepted by Enqueue and committed runs
	for i := range ps {
		p := &ps[i]
		size := uint64(p.Size)
		if j >= len(run) || qlen == 0 || qlen >= limP || backlog+size > limB || (adaptive && q.adaptDue(now)) {
			// Rare: hand the packet to Enqueue with the state written back.
			q.ring.Commit(j)
			q.avg, q.backlog, q.stats.MaxSize, q.count = avg, backlog, maxSize, count
			q.stats.Enqueued.Packets += uint64(j)
			q.stats.Enqueued.Bytes += backlog - base
			accepted += j
			v := q.Enqueue(*p, now)
			avg, backlog, maxSize, count = q.avg, q.backlog, q.stats.MaxSize, q.count
			base = backlog
			qlen = q.ring.Len()
			run, j = q.ring.Spare(n-i-1), 0
			vs[i] = v
			if v.Accepted() {
				accepted++
			}
			continue
		}
		maxSize = max(maxSize, p.Size)
		cur := float64(qlen)
		if byteMode {
			cur = float64(backlog)
		}
		avg = avg*omw + w*cur
		ecn := p.ECN & aqm.ECNMask
		v := aqm.Enqueued
		switch {
		case avg < minTh:
			count = -1
		case plainBand && avg < maxTh && count >= 0 && count < maxCount &&
			uint64(count+1)*q.prob(avg) < q.r:
			// In the band, not signalled: signal's outcome, without the call.
			count++
			q.lastProb = q.prob(avg)
		default:
			q.avg, q.count = avg, count
			v = q.signal(p.Size, ecn)
			count = q.count
			if !v.Accepted() {
				q.stats.CountDrop(v, p.Size, false)
				vs[i] = v
				continue
			}
			if v == aqm.Marked {
				ecn = aqm.CE
				q.stats.Marked.Add(p.Size)
			}
		}
		m := p.Meta
		m.ECN = ecn
		run[j] = aqm.Packet[T]{Payload: p.Payload, Meta: m, Enqueued: now}
		j++
		qlen++
		backlog += size
		vs[i] = v
	}
	q.ring.Commit(j)
	q.avg, q.backlog, q.stats.MaxSize, q.count = avg, backlog, maxSize, count
	q.stats.Enqueued.Packets += uint64(j)
	q.stats.Enqueued.Bytes += backlog - base
	return accepted + j
}

// DequeueBatch removes up to len(buf) packets into buf at now, as that
// many calls of Dequeue would, and returns how many (see
// [aqm.BatchQueue]). The packets leave the ring in whole runs.
func (q *Queue[T]) DequeueBatch(buf []aqm.Packet[T], now aqm.Time) int {
	if len(buf) == 1 { // no run to share the set-up with
		p, ok := q.Dequeue(now)
		if !ok {
			return 0
		}
		buf[0] = p
		return 1
	}
	k := q.ring.PopFrontN(buf)
	if k == 0 {
		return 0
	}
	var bytes uint64
	for i := range buf[:k] {
		bytes += uint64(buf[i].Size)
	}
	q.backlog -= bytes
	q.stats.Dequeued.Packets += uint64(k)
	q.stats.Dequeued.Bytes += bytes
	if q.ring.Len() == 0 {
		q.idleStart = now
	}
	return k
}

// signal runs RED's decision for an arrival with the average at or above
// min_th (Floyd and Jacobson 1993, Figure 17): count the arrival, and signal
// it if count·p_b ≥ R, where R is uniform in (0, 1] and drawn afresh
// whenever count is 0. With a constant p_b this spaces signals uniformly
// over 1..1/p_b arrivals, the same distribution as marking each packet with
// p_a = p_b/(1 − (count−1)·p_b), but with one random draw per signal
// instead of one per packet and no division. With Wait the test is
// waitHit's, on the same count and R.
func (q *Queue[T]) signal(size uint32, ecn aqm.ECN) aqm.Verdict {
	a := q.avg
	if a >= q.p.forcedTh {
		q.count = -1
		q.lastProb = one
		return q.act(ecn, true)
	}
	pb := q.prob(a)
	q.lastProb = pb
	if q.count < maxCount {
		q.count++
	}
	if q.count > 0 {
		var hit bool
		switch {
		case q.p.wait:
			hit = q.waitHit(uint64(q.count), pb, size)
		case q.p.byteMode:
			// count·p_b·Size/MeanPacketBytes ≥ R  ⇔  count·pb·Size ≥ R·2^32·Mean.
			hi, lo := bits.Mul64(uint64(q.count)*pb, uint64(size))
			hit = hi != 0 || lo >= q.r
		default:
			hit = uint64(q.count)*pb >= q.r
		}
		if !hit {
			return aqm.Enqueued
		}
		q.count = 0
		q.drawR()
		return q.act(ecn, false)
	}
	q.drawR() // first arrival in the band: choose R, do not signal
	return aqm.Enqueued
}

// waitHit is the count test of the Wait option (ns-2's wait_, ns-3's
// Wait): whether the n-th arrival since the last signal (n ≥ 1) is
// signalled, for the probability p = P/U, where U is probability 1 in the
// units of R (2^32, or 2^32·MeanPacketBytes in byte mode) and P = p_b·U in
// packet mode, min(p_b·Size/MeanPacketBytes, 1)·U in byte mode.
//
// ns marks the n-th arrival with probability 0 while n·p < 1, then
// p/(2 − n·p) while n·p < 2, then 1. With c0 = ⌈1/p⌉, the first n with
// n·p ≥ 1, the chance of no signal up to n telescopes to
//
//	S(n) = 1                                 n < c0
//	S(n) = max(0, (2 − (n+1)·p)/(2 − c0·p))  n ≥ c0
//
// and with d = c0·p − 1 ∈ [0, p) and m = n + 1 − c0 ≥ 1 that is
// 1 − m·p/(1 − d): from c0 on, Figure 17's test with the probability
// p/(1 − d). The arrival is therefore signalled iff n·p ≥ 1 and
// m·p ≥ R·(1 − d), i.e. in integers
//
//	n·P ≥ U  and  m·P·U ≥ r·(U − D),  D = c0·P − U ∈ [0, P)
//
// which, with R uniform in (0, 1] drawn after each signal, gives every
// arrival exactly ns's probability when p_b is constant (as Figure 17 gives
// Figure 2's), with no random draw per packet. For a constant p the gap X
// between signals has P(X = n) = p/(1 − d) for c0 ≤ n up to about 2/p: for
// 1/p = K an integer it is uniform on K..2K−1, mean (3K−1)/2, rate
// 2·p/(3 − p).
//
// The exact test needs c0, a division; it is needed only in a window of
// width 2P around r. With e = n·P − U = D + (m−1)·P, the left side m·P =
// e − D + P lies in [e+1, e+P] (integers, D < P) and r·(U−D) in
// (r·U − r·P, r·U]: e + 1 ≥ r signals for certain, e + 2·P ≤ r (r ≤ U)
// certainly not. All arithmetic is exact: U ≤ 2^56 and, in the window,
// e < r ≤ U, so m·P < 2^57, and the two products are 128-bit. The only
// error is P's own (see Fixed point and precision).
func (q *Queue[T]) waitHit(n, pb uint64, size uint32) bool {
	u, P := uint64(one), min(pb, one)
	if q.p.byteMode {
		u = one * q.p.meanBytes // ≤ 2^56
		hi, lo := bits.Mul64(pb, uint64(size))
		P = lo
		if hi != 0 || lo > u {
			P = u
		}
	}
	hi, lo := bits.Mul64(n, P)
	switch {
	case hi != 0:
		return true // n·p ≥ 2^64/U ≥ 2^8: past 2/p, S = 0
	case lo < u:
		return false // n·p < 1: ns waits
	}
	e := lo - u
	switch {
	case e+1 >= q.r:
		return true
	case e+2*P <= q.r:
		return false
	}
	c0 := (u + P - 1) / P // P > 0 since n·P ≥ U
	d := c0*P - u
	lh, ll := bits.Mul64((n+1-c0)*P, u)
	rh, rl := bits.Mul64(q.r, u-d)
	return lh > rh || (lh == rh && ll >= rl)
}

// prob returns p_b·2^32 for an average min_th ≤ a < forcedTh: the linear
// region below max_th, the gentle ramp above it. Both are one multiply-add
// in float64 and a truncating conversion; see the package doc for the error
// bound. The conversion goes through int64 (one instruction on amd64); the
// value is below 2^33, so it is exact.
func (q *Queue[T]) prob(a float64) uint64 {
	if a < q.p.maxTh {
		return uint64(int64((a - q.p.minTh) * q.slope))
	}
	return uint64(int64(q.gBase + (a-q.p.maxTh)*q.gSlope))
}

// drawR draws R uniform in (0, 1] as R·2^32 ∈ [1, 2^32]. Excluding zero
// means a zero probability never signals (the paper's R/p_b is then
// infinite).
func (q *Queue[T]) drawR() {
	q.r = uint64(q.rng.Uint32()) + 1
	if q.p.byteMode {
		q.r *= q.p.meanBytes // ≤ 2^32·2^24, no overflow
	}
}

// act turns a congestion signal into a verdict.
func (q *Queue[T]) act(ecn aqm.ECN, forced bool) aqm.Verdict {
	if q.p.ecn && ecn.Capable() {
		if !forced {
			q.cnt.probMarks++
			return aqm.Marked
		}
		if !q.p.hardDrop {
			q.cnt.forcedMarks++
			return aqm.Marked
		}
		q.cnt.forcedDrops++
		return aqm.DroppedOverload
	}
	if forced {
		q.cnt.forcedDrops++
	} else {
		q.cnt.probDrops++
	}
	return aqm.DroppedEarly
}

// elapsedNs returns to−from in nanoseconds as a float64, for to > from,
// exact in uint64 even when the int64 difference would overflow.
func elapsedNs(from, to aqm.Time) float64 { return float64(uint64(to) - uint64(from)) }

// decay returns (1−w_q)^(d/s) for an idle time of d nanoseconds (d > 0).
func (q *Queue[T]) decay(d float64) float64 { return math.Exp(d * q.p.decayPerNs) }

// endIdle applies the idle decay at an arrival to the empty queue: the
// average decays as if m = idle/s mean-sized packets had left an empty
// queue, avg·(1−w_q)^m, in closed form whatever the idle time.
func (q *Queue[T]) endIdle(now aqm.Time) {
	if now <= q.idleStart {
		// No time, or time went backwards: no decay, and the idle period
		// restarts now, so that a start left in the future by a wrong
		// reading cannot stop later arrivals from decaying the average.
		q.idleStart = now
		return
	}
	if q.avg > 0 {
		q.avg *= q.decay(elapsedNs(q.idleStart, now))
		if q.avg < tinyAvg {
			q.avg = 0
		}
	}
	// The average is now current as of now; if p is refused the queue
	// stays empty and the next arrival decays from here, not again from
	// the old start.
	q.idleStart = now
}

// adapt catches Adaptive RED up with every adaptation instant up to now.
// The average between arrivals is constant while the queue is busy, and
// decays as avg·(1−w_q)^(t/s) while it is empty, so the average at each
// missed instant is known in closed form. Because it is constant or
// decreasing, the missed instants fall into runs of increases, no-ops and
// decreases; a run of no-ops is skipped in one step (see maxAdaptSteps).
func (q *Queue[T]) adapt(now aqm.Time) {
	I := uint64(q.p.interval)
	if q.nextTick == unstarted || now < q.nextTick {
		// The first arrival starts the clock; an instant further ahead
		// than one interval (left there by a reading in the future) is
		// re-anchored to now.
		q.nextTick = satAdd(now, I)
		return
	}
	n := (uint64(now)-uint64(q.nextTick))/I + 1 // instants nextTick + j·I ≤ now
	idle := q.ring.Len() == 0
	changed := false
	steps := 0
	for j := uint64(0); j < n && steps < maxAdaptSteps; steps++ {
		t := aqm.Time(uint64(q.nextTick) + j*I) // ≤ now, no overflow
		a := q.avg
		if idle && t > q.idleStart {
			a *= q.decay(elapsedNs(q.idleStart, t))
		}
		switch {
		case a > q.p.tgtHi && q.maxP < MaxAdaptiveMaxP:
			q.maxP = min(q.maxP+min(AdaptiveAlpha, q.maxP/4), MaxAdaptiveMaxP)
			changed = true
			q.cnt.adaptations++
			j++
		case a < q.p.tgtLo && q.maxP > MinAdaptiveMaxP:
			q.maxP = max(q.maxP*AdaptiveBeta, MinAdaptiveMaxP)
			changed = true
			q.cnt.adaptations++
			j++
		case !idle || a < q.p.tgtLo:
			// A no-op with a constant average, or below the band with
			// max_p at its floor: every later instant is a no-op too.
			j = n
		default:
			// Idle, at or above the band, max_p at its ceiling or in the
			// band: nothing happens until the decaying average falls below
			// tgtLo. Jump to the first instant after that crossing.
			cross := math.Log(q.p.tgtLo/q.avg) / q.p.decayPerNs // ns after idleStart, ≥ 0
			off := float64(q.idleStart) - float64(q.nextTick) + cross
			jf := math.Ceil(off / float64(I))
			switch {
			case !(jf < float64(n)): // also NaN
				j = n
			case jf > float64(j+1):
				j = uint64(jf)
			default:
				j++
			}
		}
	}
	q.nextTick = satAdd(q.nextTick, n*I)
	if changed {
		q.setSlopes()
	}
}

// adaptDue reports whether Adaptive RED has work at now: an adaptation
// instant has passed (now ≥ nextTick), or the next instant is more than one
// interval ahead and must be re-anchored. The difference is taken modulo
// 2^64, which is exact when nextTick > now.
func (q *Queue[T]) adaptDue(now aqm.Time) bool {
	return now >= q.nextTick || uint64(q.nextTick)-uint64(now) > uint64(q.p.interval)
}

// satAdd returns t+d, saturating at the largest Time. The headroom
// MaxInt64−t is computed modulo 2^64, which is exact for every int64 t.
func satAdd(t aqm.Time, d uint64) aqm.Time {
	if d > uint64(math.MaxInt64)-uint64(t) {
		return math.MaxInt64
	}
	return aqm.Time(uint64(t) + d)
}

// Dequeue returns the oldest packet. When it empties the queue, the idle
// period that the next arrival's decay is measured from starts at now.
func (q *Queue[T]) Dequeue(now aqm.Time) (p aqm.Packet[T], ok bool) {
	if p, ok = q.ring.PopFront(); !ok {
		return p, false
	}
	q.backlog -= uint64(p.Size)
	q.stats.Dequeued.Add(p.Size)
	if q.ring.Len() == 0 {
		q.idleStart = now
	}
	return p, true
}

// Len returns the number of queued packets.
func (q *Queue[T]) Len() int { return q.ring.Len() }

// Backlog returns the number of queued bytes.
func (q *Queue[T]) Backlog() int { return int(q.backlog) }

// Stats returns a snapshot of the counters.
func (q *Queue[T]) Stats() aqm.Stats {
	s := q.stats
	s.Len, s.Backlog = q.ring.Len(), int(q.backlog)
	return s
}

// Config returns the configuration in use, with every default filled in.
func (q *Queue[T]) Config() Config { return q.cfg }

// Detail is a snapshot of RED's state, the analogue of Linux's RED xstats.
type Detail struct {
	// Avg is the average queue as of the last arrival (or the last
	// adaptation), in packets, or bytes in ByteMode.
	Avg float64 `metric:"average_queue,gauge,unit=ByteMode"`
	// MaxP is the current max_p; Adaptive RED moves it.
	MaxP float64 `metric:"max_probability,gauge"`
	// Prob is p_b, the early drop probability before the count
	// uniformization and the byte-mode scaling, at the last arrival whose
	// average was at or above MinThreshold; 1 in the forced region.
	Prob float64 `metric:"probability,gauge"`
	// Count is the number of arrivals since the last early signal while the
	// average stayed in the probabilistic band, or −1 when the last
	// arrival's average was outside it.
	Count int64 `metric:"count_packets,gauge"`
	// MinThreshold, MaxThreshold and Weight are the thresholds and w_q in
	// use (after defaults).
	MinThreshold float64 `metric:"min_threshold,gauge,unit=ByteMode"`
	MaxThreshold float64 `metric:"max_threshold,gauge,unit=ByteMode"`
	Weight       float64 `metric:"weight,gauge"`
	// TargetLow and TargetHigh are Adaptive RED's target band for the
	// average: 0.4 and 0.6 of the way from MinThreshold to MaxThreshold.
	TargetLow  float64 `metric:"target_low,gauge,unit=ByteMode"`
	TargetHigh float64 `metric:"target_high,gauge,unit=ByteMode"`
	// ProbDrops and ProbMarks count probabilistic early signals, dropped or
	// marked. ForcedDrops and ForcedMarks count signals where the average
	// was at or above MaxThreshold (2·MaxThreshold with Gentle); ForcedDrops
	// includes the ECN-capable packets dropped as [aqm.DroppedOverload]. A
	// signal is counted when decided: a marked packet then refused by a
	// full hard limit is in ProbMarks or ForcedMarks and in
	// Stats.DroppedOverlimit, not in Stats.Marked.
	ProbDrops   uint64 `metric:"dropped_probabilistic_packets,counter"`
	ProbMarks   uint64 `metric:"marked_probabilistic_packets,counter"`
	ForcedDrops uint64 `metric:"dropped_forced_packets,counter"`
	ForcedMarks uint64 `metric:"marked_forced_packets,counter"`
	// Adaptations counts the changes Adaptive RED made to max_p.
	Adaptations uint64 `metric:"adaptations,counter"`
	// ByteMode reports whether Avg, the thresholds and the targets are in
	// bytes (true) or packets; their metric names end in _bytes or
	// _packets accordingly.
	ByteMode bool `metric:"-"`
	// MemoryBytes is the memory the queue preallocated for its
	// configuration: the packet ring (LimitPackets rounded up to a power of
	// two, times the size of an [aqm.Packet] of T) and the queue itself.
	MemoryBytes int `metric:"memory_bytes,gauge"`
}

// Metrics lists the values of d as [aqm.Metric]s with lower_snake names
// that carry their units ("_packets" or "_bytes" after the average and the
// thresholds, as ByteMode says).
func (d Detail) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Of(d) }

var detailMetrics = metrics.Declare[Detail]("")

// Metrics lists the queue's [aqm.Stats] metrics, then its [Detail]'s, from
// one snapshot taken when it is called; a *Queue is an [aqm.MetricSource].
func (q *Queue[T]) Metrics() iter.Seq[aqm.Metric] { return detailMetrics.Queue(q.Stats(), q.Detail()) }

// memoryBytes is what the queue preallocates: the ring's slots (its
// capacity rounded up to a power of two, as the ring allocates them) and
// the queue value itself.
func (q *Queue[T]) memoryBytes() int {
	slots := 1
	for slots < q.ring.Cap() {
		slots <<= 1
	}
	return slots*int(unsafe.Sizeof(aqm.Packet[T]{})) + int(unsafe.Sizeof(*q))
}

// Detail returns a snapshot of RED's state.
func (q *Queue[T]) Detail() Detail {
	return Detail{
		Avg:          q.avg,
		MaxP:         q.maxP,
		Prob:         float64(q.lastProb) / one,
		Count:        q.count,
		MinThreshold: q.p.minTh,
		MaxThreshold: q.p.maxTh,
		Weight:       q.p.w,
		TargetLow:    q.p.tgtLo,
		TargetHigh:   q.p.tgtHi,
		ProbDrops:    q.cnt.probDrops,
		ProbMarks:    q.cnt.probMarks,
		ForcedDrops:  q.cnt.forcedDrops,
		ForcedMarks:  q.cnt.forcedMarks,
		Adaptations:  q.cnt.adaptations,
		ByteMode:     q.p.byteMode,
		MemoryBytes:  q.memoryBytes(),
	}
}

// Reconfigure validates cfg and applies it while packets are queued: none
// is lost, duplicated or reordered. RED's state carries over: the average
// (reset to the current queue size if ByteMode changes, since its unit
// does), the count, and, if both the old and new configurations are
// Adaptive, the adapted max_p (Linux's red_change discards it). A new Seed
// reseeds the random source. A packet limit below the current length keeps
// the queued packets and refuses arrivals until the queue is below it. A
// zero Seed keeps the current random stream. It may allocate.
func (q *Queue[T]) Reconfigure(cfg Config) error {
	eff, p, err := cfg.derive()
	if err != nil {
		return err
	}
	old := q.p
	if p.byteMode != old.byteMode {
		q.avg = float64(q.ring.Len())
		if p.byteMode {
			q.avg = float64(q.backlog)
		}
		q.count = -1
	}
	if !(old.adaptive && p.adaptive) {
		q.maxP = p.maxP
	}
	if p.adaptive && !old.adaptive {
		q.nextTick = unstarted
	}
	switch {
	case cfg.Seed == 0:
		eff.Seed = q.cfg.Seed // keep the current stream
	case cfg.Seed != q.cfg.Seed:
		q.rng.Seed(cfg.Seed)
	}
	q.ring.Resize(p.limitPackets) // keeps every queued packet, in order
	q.p, q.cfg = p, eff
	if p.byteMode != old.byteMode || p.meanBytes != old.meanBytes {
		q.count = -1 // R was scaled for the old mode: draw a fresh one on re-entry
	}
	q.setSlopes()
	return nil
}
