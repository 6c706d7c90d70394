package sim

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// Shaper is an HTB-like rate limiter between the bottleneck queue (its
// leaf qdisc) and a faster physical link (Config.RateBps is then the line
// rate): one class with rate, ceil, burst and cburst. With ceil equal to
// rate it is a lone root class (which never borrows); with ceil above rate
// it is a leaf under a parent class that holds the tree to the rate. While the leaf may send, the
// link dequeues from the queue and sends at line rate; when it may not, the
// link waits until its tokens allow it, plus a wake-up latency.
//
// It follows Linux HTB's token accounting: tokens are nanoseconds of
// transmission time, capped at burst/rate (cburst/ceil for the ceil
// bucket), charged len/rate after each dequeue, and a packet is sent
// whenever the mode allows it, however few tokens are left (so tokens go
// negative). The leaf sends on its own tokens (both buckets ≥ 0), or
// borrows from the parent while its ceil bucket is ≥ 0 and the parent's
// tokens are ≥ 0; a borrowing leaf is charged only its ceil bucket.
//
// Differences from Linux HTB: one leaf and one parent, not a tree (no DRR
// quantum, no prio, no direct queue); the parent's rate and ceil are the
// leaf's rate and its burst and cburst the leaf's burst (the tc setup
// where a speed-test link is capped at one rate); the wake-up latency is a
// fixed delay, where Linux's is the hrtimer plus softirq and driver
// latency, which varies; no hysteresis (Linux's default); no GSO: every
// packet is one MSS.
type Shaper struct {
	// RateBps is the class's assured rate in bits per second.
	RateBps float64
	// CeilBps is the rate the class may reach by borrowing. Zero means
	// RateBps (no borrowing).
	CeilBps float64 `json:",omitempty"`
	// BurstBytes and CBurstBytes are the bucket depths at rate and at ceil.
	// Zero means tc's default with high-resolution timers: one 1600-byte
	// MTU.
	BurstBytes, CBurstBytes int `json:",omitempty"`
	// WakeupLatency is how late the shaper dequeues after its tokens allow
	// (timer, softirq and driver latency). Zero means
	// DefaultShaperWakeup.
	WakeupLatency time.Duration `json:",omitempty"`
}

// Shaper defaults.
const (
	// DefaultShaperBurst is tc's default burst with high-resolution
	// timers: rate/HZ + mtu with HZ = 10^9, that is the 1600-byte MTU.
	DefaultShaperBurst = 1600
	// DefaultShaperWakeup is the timer-to-dequeue latency that makes a
	// small burst under-use a fast link. It is a calibration, not a
	// measurement: chosen so that the speed-test study's under-use without
	// burst shaping appears at 500-900 Mb/s; the lab router's latency is
	// unknown, and the dip's depth follows this one number.
	DefaultShaperWakeup = 30 * time.Microsecond
	// htbMaxDebt bounds token debt as Linux's mbuffer does (60 s).
	htbMaxDebt = float64(60 * time.Second)
)

func (sh *Shaper) validate(bad func(field string, v any, rule string)) {
	if !(sh.RateBps > 0) {
		bad("Shaper.RateBps", sh.RateBps, "must be positive")
	}
	if sh.CeilBps != 0 && !(sh.CeilBps >= sh.RateBps) {
		bad("Shaper.CeilBps", sh.CeilBps, "must be zero or at least RateBps")
	}
	if sh.BurstBytes < 0 || sh.CBurstBytes < 0 {
		bad("Shaper.BurstBytes", fmt.Sprintf("%d/%d", sh.BurstBytes, sh.CBurstBytes), "and CBurstBytes must not be negative")
	}
	if sh.WakeupLatency < 0 {
		bad("Shaper.WakeupLatency", sh.WakeupLatency, "must not be negative")
	}
}

// bucket is one HTB token bucket in nanoseconds of transmission time.
type bucket struct {
	nsPerByte float64 // 8e9 / rate
	depth     float64 // burst in ns at the rate
	tokens    float64
}

func newBucket(rateBps float64, burstBytes int) bucket {
	b := bucket{nsPerByte: 8e9 / rateBps}
	b.depth = float64(burstBytes) * b.nsPerByte
	b.tokens = b.depth
	return b
}

func (b *bucket) refill(dt float64) { b.tokens = min(b.tokens+dt, b.depth) }

func (b *bucket) charge(size uint32) {
	b.tokens = max(b.tokens-float64(size)*b.nsPerByte, -htbMaxDebt)
}

// htb is the shaper's state.
type htb struct {
	leaf, leafC     bucket // rate and ceil buckets of the leaf
	parent, parentC bucket
	hasParent       bool // ceil > rate: the leaf may borrow
	last            aqm.Time
	wake            time.Duration
	pending         bool // a wake-up event is scheduled
	borrowed        uint64
}

func newHTB(sh Shaper) *htb {
	ceil := sh.CeilBps
	if ceil == 0 {
		ceil = sh.RateBps
	}
	burst, cburst := sh.BurstBytes, sh.CBurstBytes
	if burst == 0 {
		burst = DefaultShaperBurst
	}
	if cburst == 0 {
		cburst = DefaultShaperBurst
	}
	wake := sh.WakeupLatency
	if wake == 0 {
		wake = DefaultShaperWakeup
	}
	return &htb{
		leaf: newBucket(sh.RateBps, burst), leafC: newBucket(ceil, cburst),
		parent: newBucket(sh.RateBps, burst), parentC: newBucket(sh.RateBps, burst),
		hasParent: ceil > sh.RateBps, wake: wake,
	}
}

// advance adds the time since the last update to every bucket.
func (h *htb) advance(now aqm.Time) {
	if now > h.last {
		dt := min(float64(now-h.last), htbMaxDebt)
		h.leaf.refill(dt)
		h.leafC.refill(dt)
		h.parent.refill(dt)
		h.parentC.refill(dt)
		h.last = now
	}
}

func (h *htb) parentCanSend() bool {
	return h.hasParent && h.parent.tokens >= 0 && h.parentC.tokens >= 0
}

// canSend reports whether the leaf may dequeue now (after advance).
func (h *htb) canSend() bool {
	return h.leafC.tokens >= 0 && (h.leaf.tokens >= 0 || h.parentCanSend())
}

// untilSend is how long until canSend becomes true, in ns.
func (h *htb) untilSend() float64 {
	own := max(-h.leaf.tokens, 0)
	if !h.hasParent {
		return max(-h.leafC.tokens, own)
	}
	borrow := max(-h.parent.tokens, -h.parentC.tokens, 0)
	return max(-h.leafC.tokens, min(own, borrow), 0)
}

// charge accounts for a dequeued packet: on its own tokens the leaf and the
// parent pay at their rates; a borrowing leaf pays only its ceil bucket and
// the parent pays the rest.
func (h *htb) charge(size uint32) {
	if h.leaf.tokens >= 0 {
		h.leaf.charge(size)
	} else {
		h.borrowed++
	}
	h.leafC.charge(size)
	h.parent.charge(size)
	h.parentC.charge(size)
}

// shaperBlocks reports whether the shaper holds the link at s.now, and if
// so schedules the wake-up.
func (s *Sim) shaperBlocks() bool {
	h := s.htb
	if h.pending {
		return true
	}
	h.advance(s.now)
	if h.canSend() {
		return false
	}
	h.pending = true
	s.ag.push(event{at: s.now + aqm.Time(h.untilSend()+0.999) + aqm.Time(h.wake), kind: evShaper})
	return true
}

// shaperWake is the wake-up event: the link tries to send again.
func (s *Sim) shaperWake() {
	s.htb.pending = false
	if !s.busy {
		s.startTx()
	}
}
