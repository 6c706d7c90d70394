package cake

import (
	"math"
	"math/bits"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// This file is CAKE's shaper: the rates in fixed point, the link and tin
// clocks a packet is charged to, the tin the clocks choose, and when the
// next packet may leave.

// maxCharge caps what one packet costs a flow's or a tin's DRR deficit,
// 64 KiB (above any GSO packet), so that a packet with an absurd Size
// cannot make the schedulers rotate millions of times.
const maxCharge = 1 << 16

// shRate is a rate as nanoseconds per byte in fixed point: dur(n) =
// n·ns >> shift. ns == 0 means unlimited.
type shRate struct {
	ns    uint64
	shift uint8
}

// makeRate converts bytes per second to ns per byte with 34 fractional
// bits, fewer if the value would not fit 34 bits (slow rates), so that
// n·ns never needs more than 64+34 bits. Rates below 64 B/s count as 64.
func makeRate(bps uint64) shRate {
	if bps == 0 {
		return shRate{}
	}
	ns := (uint64(time.Second) << 34) / max(bps, minRateBytes) // 1e9·2^34 < 2^64
	shift := uint8(34)
	for ns >= 1<<34 {
		ns >>= 1
		shift--
	}
	return shRate{ns, shift}
}

// dur returns how long n bytes take, saturating.
func (r shRate) dur(n uint32) int64 {
	hi, lo := bits.Mul64(uint64(n), r.ns)
	if hi>>r.shift != 0 {
		return math.MaxInt64
	}
	v := lo >> r.shift
	if r.shift > 0 {
		v |= hi << (64 - r.shift)
	}
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// updateSpans recomputes how far ahead of now the shaper clocks may be
// before the time policy pulls them back: one second plus the time of the
// largest packet charged so far.
func (q *Queue[T]) updateSpans() {
	q.span = addSpan(int64(time.Second), q.rate.dur(q.maxAdj))
	for i := range q.tins {
		q.tins[i].span = addSpan(int64(time.Second), q.tins[i].rate.dur(q.maxAdj))
	}
}

func addSpan(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// SetRate changes the shaper's rate at now on a running queue, as tc's
// "change bandwidth": every tin's threshold, COBALT target and interval,
// flow quantum and (unless set explicitly) the byte limit follow. The
// clocks already scheduled are kept; the new rate applies from the next
// packet. Zero makes the queue unshaped. The configuration with the new
// rate is validated first; on error, an [aqm.ConfigError], nothing
// changes. The error also makes a *Queue an autorate.Setter.
func (q *Queue[T]) SetRate(rate aqm.Rate) error {
	c := q.cfg
	c.Rate = rate
	if q.memAuto {
		c.MemoryLimitBytes = 0
		c = c.withDefaults()
	}
	if err := c.Validate(); err != nil {
		return err
	}
	q.apply(c)
	return nil
}

// adjLen returns the length charged for a packet of size bytes: plus the
// overhead, at least the MPU, then cell framing (ATM: whole 53-byte cells
// of 48 bytes; PTM: 65 bytes per started 64).
func (q *Queue[T]) adjLen(size uint32) uint32 {
	n := int64(size) + int64(q.overhead)
	n = max(n, int64(q.mpu), 0)
	switch q.framing {
	case ATM:
		n = (n + 47) / 48 * 53
	case PTM:
		n += (n + 63) / 64
	}
	return uint32(min(n, math.MaxUint32))
}

// adjLenOf is adjLen for the packet m describes. A GSO super-packet is
// charged as its segments would be on the wire, each with the overhead,
// minimum size and framing: Size split evenly, the remainder on the last
// segment (as Linux charges a GSO packet per segment).
func (q *Queue[T]) adjLenOf(m aqm.Meta) uint32 {
	if m.Segments <= 1 {
		return q.adjLen(m.Size)
	}
	n := uint32(m.Segments)
	per := m.Size / n
	total := uint64(q.adjLen(per))*uint64(n-1) + uint64(q.adjLen(m.Size-per*(n-1)))
	return uint32(min(total, math.MaxUint32))
}

// charge advances the shaper clocks for adj bytes sent (or dropped, in
// ingress mode) from tin b at now. The tin clock keeps its lag, so a tin
// behind may catch up; the failsafe clock runs at 2/3 of the rate and
// ignores drops.
func (q *Queue[T]) charge(b *tin, adj uint32, now aqm.Time, drop bool) {
	if !q.shaped {
		return
	}
	td := b.rate.dur(adj)
	if b.next < now {
		b.next = addSat(b.next, td)
	} else if e := addSat(now, td); b.next < e {
		b.next = e
	}
	gd := q.rate.dur(adj)
	q.next = addSat(q.next, gd)
	if !drop {
		q.failsafe = addSat(q.failsafe, addSpan(gd, gd>>1))
	}
}

func addSat(t aqm.Time, d int64) aqm.Time {
	if s := t + aqm.Time(d); s >= t {
		return s
	}
	return math.MaxInt64
}

// reanchor applies the time policy to the shaper clocks: the link clock
// further ahead of now than a second plus the largest packet's time is
// brought back to now. The failsafe clock legitimately runs ahead of the
// link clock under a backlog (by half the busy time) but then never
// decides the gate; it is kept within the same span of the link clock.
func (q *Queue[T]) reanchor(now aqm.Time) {
	q.next, q.failsafe = q.clocks(now)
}

func (q *Queue[T]) clocks(now aqm.Time) (next, failsafe aqm.Time) {
	next, failsafe = q.next, q.failsafe
	if next > addSat(now, q.span) {
		next = now
	}
	if lim := addSat(max(next, now), q.span); failsafe > lim {
		failsafe = lim
	}
	return next, failsafe
}

// pickTin returns the tin to serve. Shaped: the highest tin whose clock
// is due, else the one whose clock is earliest (ties to the higher).
// Unshaped: weighted deficit round robin over the tins with flows.
func (q *Queue[T]) pickTin(now aqm.Time) int {
	if q.ntins == 1 {
		return 0
	}
	if q.shaped {
		best, bestT := 0, int64(math.MaxInt64)
		for i := range q.tins {
			b := &q.tins[i]
			if b.sparse+b.bulk == 0 {
				continue
			}
			if b.next > addSat(now, b.span) {
				b.next = now
			}
			d := max(int64(b.next)-int64(now), 0)
			if b.next < now {
				d = 0
			}
			if d <= bestT {
				best, bestT = i, d
			}
		}
		return best
	}
	cur, tins := q.curTin, q.tins
	for {
		b := &tins[cur]
		if b.deficit >= 0 && b.sparse+b.bulk > 0 {
			q.curTin = cur
			return cur
		}
		if b.deficit <= 0 {
			b.deficit += b.weight
		}
		if cur++; cur == len(tins) {
			cur = 0
		}
	}
}

// NextDeparture returns when Dequeue can next return a packet if nothing
// else arrives: now if it can at once, the instant the shaper releases the
// next packet if it is holding them back, or the zero Time if the queue
// is empty. A caller driving a shaped queue sleeps until then.
func (q *Queue[T]) NextDeparture(now aqm.Time) aqm.Time {
	if q.len == 0 {
		return 0
	}
	if !q.shaped {
		return now
	}
	next, fs := q.clocks(now)
	if next > now && fs > now {
		return min(next, fs)
	}
	return now
}
