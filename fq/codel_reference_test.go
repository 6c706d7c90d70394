package fq

import (
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/internal/dropcap"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/internal/tally"
	"github.com/stretchr/testify/require"
)

// fqcRef is a slow, obviously-correct FQ-CoDel written straight from RFC 8290
// sections 4 and 5 and the RFC 8289 pseudocode (dodequeue, dequeue,
// control_law), independent of the CoDel type and of package codel's
// Controller: flows are a slice of pointers indexed by bucket (nil until
// first used), each flow's queue and the new and old lists are slices whose
// first element is the head, the fattest flow is found by a plain scan, and
// the control law is interval/sqrt(count) in float64, truncated to whole
// nanoseconds. Times are int64 ns; a sojourn is max(now-enqueued, 0). It
// uses only the contract's aqm.Stats helpers and the 256-drop bound of package dropcap.
//
// Where the RFCs leave room it makes the choices doc.go documents:
//   - a flow is served while its credit is not negative; an empty new flow
//     goes to the old list even if that list is empty (RFC 8290 §4.2);
//   - a sent packet costs its size, at most 64 quanta;
//   - the MTU guard counts the flow's bytes, or the queue's with
//     GlobalBacklogGuard; "now >= first_above_time" (RFC) or ">" with
//     StrictDeadline; count rises as in the RFC or, with LinuxCount, before
//     every signal at drop_next;
//   - the re-entry rule needs a previous dropping episode;
//   - ECN: a capable packet is marked CE where the RFC drops it, and sent.
//     On entering the dropping state that is all. In the dropping loop the
//     mark ends the dequeue, and the rest of that loop iteration (the
//     dodequeue of the next packet, ++count and the reschedule from
//     drop_next if it is still ok to drop) runs when the flow is next served
//     (resume);
//   - the CE threshold marks a packet CoDel sends unmarked whose sojourn is
//     strictly above it, if it is ECN-capable (ECT(1) or CE only, with
//     CEThresholdECT1Only);
//   - after 256 drops in one Dequeue call (over all flows) the next packet is
//     sent unexamined and a dropping flow reschedules from now;
//   - overload: when an arrival exceeds LimitPackets or MemoryLimitBytes,
//     drop from the head of the fattest flow (the highest overload class,
//     fqcClass, among those the one whose class changed last while classes
//     were tracked; tracking starts above three quarters of a limit, with
//     the listed flows entering their classes in list order, and stops as
//     doc.go says) until half
//     its bytes or DropBatchPackets are gone, at least one, and repeat
//     until both limits hold; if only the arrival would be left to drop it is refused instead;
//     the drops are added to the flow's count unless KeepCountOnOverload;
//   - a packet larger than MemoryLimitBytes is refused, and so is every
//     arrival while a Reconfigure has left the queue above a limit.
//
// Classification is the one thing it takes from the fast code: the keyed
// hash is not written out again; the test asks the queue under test for each
// hash's bucket through the exported CoDel.Flow(hash).Bucket. Everything
// after the bucket number is the model's own.
type fqcRef struct {
	// Parameters, from the validated config.
	limit, memLimit int64
	quantum         int64
	chargeCap       int64 // one packet costs its flow at most 64 quanta (doc.go)
	batch           int
	target          int64
	interval        int64
	mtu             int64
	ceThreshold     int64
	ecn             bool
	ceECT1Only      bool
	strict          bool
	linuxCount      bool
	globalGuard     bool
	keepCount       bool

	flows  []*fqcRefFlow // by bucket; nil: never used
	seq    int64         // class changes so far (fqcRefFlow.entered)
	memory int           // the preallocation Detail reports (doc.go)
	// Classes are tracked only near the limits (doc.go): from above three
	// quarters of either limit until the queue is at most half full and
	// credit Dequeue calls have passed.
	tracking        bool
	credit          int64
	onPkts, onBytes int64
	flowsN          int   // Flows
	nodes           int   // packet capacity + 1
	newL, oldL      []int // buckets; [0] is the head
	n               int64 // packets queued
	bytes           int64 // bytes queued

	callDrops     int         // CoDel drops in the current Dequeue call (the 256 cap)
	callDropFlows int         // flows that dropped in the current call (coverage)
	lastDropFlow  *fqcRefFlow // the flow that dropped last in the current call

	drops  []fqcRefDrop // DropFunc calls of the current operation
	stats  aqm.Stats
	detail CoDelDetail // counters only
	cov    fqcRefCoverage
}

// fqcRefFlow is one flow queue: a FIFO, its DRR credit, its list and its
// CoDel variables named as in RFC 8289 section 5.
type fqcRefFlow struct {
	q       []aqm.Packet[uint64]
	bytes   int64
	deficit int64
	list    int // 0: idle, 1: new, 2: old

	firstAbove int64
	above      bool // first_above_time != 0 in the RFC
	dropNext   int64
	count      int64
	lastCount  int64
	dropping   bool
	episode    bool // a dropping state was entered before (re-entry rule)
	// resume: the previous dequeue from this flow ended inside the RFC's
	// dropping loop because the signal at drop_next was an ECN mark (the
	// marked packet is sent). The rest of that loop iteration, "r =
	// dodequeue(); if ok: ++count; drop_next = control_law(drop_next)",
	// runs on the flow's next packet, in its next dequeue.
	resume bool

	// class is the overload class of the flow's backlog (fqcClass; 0 when
	// empty) and entered the sequence number of its last change.
	class, entered int64
}

// fqcClass is the overload class of a non-empty flow of b bytes, from the
// rule in doc.go: 1 + b below 16 bytes; above, with e the exponent that
// brings b into [8, 16) (b / 2^e, truncated), 1 + 8e + b/2^e.
func fqcClass(b int64) int64 {
	if b < 16 {
		return 1 + b
	}
	e := int64(0)
	for b>>e >= 16 {
		e++
	}
	return 1 + 8*e + b>>e
}

// touch recomputes f's class after its backlog changed and, if it changed,
// stamps the change with the next sequence number.
func (m *fqcRef) touch(f *fqcRefFlow) {
	if !m.tracking {
		return
	}
	c := int64(0)
	if len(f.q) > 0 {
		c = fqcClass(f.bytes)
	}
	if c != f.class {
		m.seq++
		f.class, f.entered = c, m.seq
	}
}

type fqcRefDrop struct {
	p   aqm.Packet[uint64]
	why aqm.Verdict
}

// fqcRefCoverage counts which paths the traces reached.
type fqcRefCoverage struct {
	early, marks, ceMarks, overload, overloadBatches, refusedArrival,
	refusedTooBig, refusedAbove, reconfigs, reentry, capHits, capMultiFlow, chargeCapped, byCount, lawSteps, maxCount,
	lawInexact, resumes, verdicts, dequeues, emptyDequeues, trackStarts, trackStops int
}

func (c *fqcRefCoverage) add(d fqcRefCoverage) {
	c.early += d.early
	c.marks += d.marks
	c.ceMarks += d.ceMarks
	c.overload += d.overload
	c.overloadBatches += d.overloadBatches
	c.refusedArrival += d.refusedArrival
	c.refusedTooBig += d.refusedTooBig
	c.refusedAbove += d.refusedAbove
	c.reconfigs += d.reconfigs
	c.reentry += d.reentry
	c.capHits += d.capHits
	c.capMultiFlow += d.capMultiFlow
	c.chargeCapped += d.chargeCapped
	c.byCount += d.byCount
	c.lawSteps += d.lawSteps
	c.maxCount = max(c.maxCount, d.maxCount)
	c.lawInexact += d.lawInexact
	c.resumes += d.resumes
	c.verdicts += d.verdicts
	c.dequeues += d.dequeues
	c.emptyDequeues += d.emptyDequeues
	c.trackStarts += d.trackStarts
	c.trackStops += d.trackStops
}

func newFQCRef(cfg CoDelConfig) *fqcRef {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	m := &fqcRef{flows: make([]*fqcRefFlow, cfg.Flows), flowsN: cfg.Flows, nodes: cfg.LimitPackets + 1}
	m.configure(cfg)
	return m
}

// configure takes the parameters of cfg. For a Reconfigure with the same
// Flows and Seed that is all that happens: every flow keeps its packets,
// list, credit and CoDel variables (doc.go).
func (m *fqcRef) configure(cfg CoDelConfig) {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	// The packet store is rebuilt when it is too small or larger than the
	// new limit needs (doc.go): one node per packet of the limit, plus one.
	if need := max(int64(cfg.LimitPackets), m.n); need+1 > int64(m.nodes) || cfg.LimitPackets+1 < m.nodes {
		m.nodes = int(need) + 1
	}
	// 64 bytes per flow and the shared queue, 32 per flow (and 512 more)
	// of overload entries, 241 4-byte stack heads, 28 bytes per flow of
	// flood-guard state, 32 bytes per packet node (a uint64 payload).
	m.memory = 64*(m.flowsN+1) + 32*(m.flowsN+1) + 512 + 241*4 + 28*m.flowsN + 32*m.nodes
	m.limit, m.memLimit = int64(cfg.LimitPackets), int64(cfg.MemoryLimitBytes)
	m.onPkts, m.onBytes = m.limit-m.limit/4, m.memLimit-m.memLimit/4
	m.tracking, m.credit = false, 0
	m.quantum, m.chargeCap = int64(cfg.QuantumBytes), 64*int64(cfg.QuantumBytes)
	m.batch = cfg.DropBatchPackets
	m.target, m.interval, m.mtu = int64(cfg.Target), int64(cfg.Interval), int64(cfg.MTUBytes)
	m.ceThreshold, m.ecn, m.ceECT1Only = int64(cfg.CEThreshold), !cfg.DisableECN, cfg.CEThresholdECT1Only
	m.strict, m.linuxCount = cfg.StrictDeadline, cfg.LinuxCount
	m.globalGuard, m.keepCount = cfg.GlobalBacklogGuard, cfg.KeepCountOnOverload
}

func (m *fqcRef) flow(b int) *fqcRefFlow {
	if m.flows[b] == nil {
		m.flows[b] = &fqcRefFlow{}
	}
	return m.flows[b]
}

func (m *fqcRef) dropQueued(p aqm.Packet[uint64], why aqm.Verdict) {
	tally.Drop(&m.stats, why, p.Size, true)
	m.drops = append(m.drops, fqcRefDrop{p, why})
}

// enqueue is RFC 8290 section 4.1: classify, timestamp, append; a flow that
// was idle joins the tail of the new list with one quantum of credit. Then
// the overload drop of section 4.1 (with Linux's batch, doc.go).
func (m *fqcRef) enqueue(p aqm.Packet[uint64], bucket int, now int64) aqm.Verdict {
	p.ECN &= 3 // the two ECN bits
	p.Enqueued = aqm.Time(now)
	tally.NoteSize(&m.stats, p.Size)
	if int64(p.Size) > m.memLimit || m.n > m.limit || m.bytes > m.memLimit {
		if int64(p.Size) > m.memLimit {
			m.cov.refusedTooBig++
		} else {
			m.cov.refusedAbove++ // a Reconfigure left the queue above a limit
		}
		tally.Drop(&m.stats, aqm.DroppedOverlimit, p.Size, false)
		return aqm.DroppedOverlimit
	}
	f := m.flow(bucket)
	f.q = append(f.q, p)
	f.bytes += int64(p.Size)
	m.n++
	m.bytes += int64(p.Size)
	if f.list == 0 {
		f.list = 1
		f.deficit = m.quantum
		m.newL = append(m.newL, bucket)
		m.detail.NewFlowCount++
		f.class = 0 // an idle flow has no class; touch gives it one
	}
	m.touch(f)
	if !m.tracking && (m.n > m.onPkts || m.bytes > m.onBytes) {
		// Start tracking classes: every listed flow, new list then old,
		// enters its class in list order.
		m.tracking = true
		visited := int64(0)
		for _, l := range [][]int{m.newL, m.oldL} {
			for _, b := range l {
				m.flows[b].class = 0
				m.touch(m.flows[b])
				visited++
			}
		}
		m.credit = visited + 64
		m.cov.trackStarts++
	}
	if m.n > m.limit || m.bytes > m.memLimit {
		if m.overload(bucket) {
			m.cov.refusedArrival++
			tally.Drop(&m.stats, aqm.DroppedOverlimit, p.Size, false)
			return aqm.DroppedOverlimit
		}
	}
	m.stats.Enqueued.Add(p.Size)
	return aqm.Enqueued
}

// overload drops from the head of the fattest flow (the highest class, the
// latest to enter it among equals) until half
// its bytes or a batch of packets are gone, at least one, and repeats until
// both limits hold. If only the arrival itself is left to drop, it is
// refused instead: overload reports true. The drops are added to the flow's
// CoDel count unless KeepCountOnOverload.
func (m *fqcRef) overload(arrival int) bool {
	memory := m.bytes > m.memLimit
	for m.n > m.limit || m.bytes > m.memLimit {
		fat, cls, at := 0, int64(0), int64(0)
		for b, f := range m.flows {
			if f != nil && len(f.q) > 0 && (f.class > cls || f.class == cls && f.entered > at) {
				fat, cls, at = b, f.class, f.entered
			}
		}
		if m.flows[fat].bytes == 0 {
			m.cov.byCount++
		}
		f := m.flows[fat]
		half := f.bytes / 2
		dropped, droppedBytes := 0, int64(0)
		refused := false
		for {
			if fat == arrival && len(f.q) == 1 {
				// Only the arrival is left: take it back out.
				p := f.q[0]
				f.q = f.q[1:]
				f.bytes -= int64(p.Size)
				m.touch(f)
				m.n--
				m.bytes -= int64(p.Size)
				refused = true
				break
			}
			p := f.q[0]
			f.q = f.q[1:]
			f.bytes -= int64(p.Size)
			m.touch(f)
			m.n--
			m.bytes -= int64(p.Size)
			dropped++
			droppedBytes += int64(p.Size)
			m.dropQueued(p, aqm.DroppedOverlimit)
			if dropped >= m.batch || droppedBytes >= half || len(f.q) == 0 {
				break
			}
		}
		m.cov.overload += dropped
		m.cov.overloadBatches++
		m.detail.EvictedOverlimit += uint64(dropped)
		if memory {
			m.detail.EvictedOvermemory += uint64(dropped)
		}
		if !m.keepCount {
			f.count += int64(dropped)
		}
		if refused {
			return true
		}
	}
	return false
}

// controlLaw is RFC 8289's control_law: t + interval/sqrt(count), in
// float64, truncated to whole nanoseconds, at least 1 ns (doc.go via
// package codel). Each step is also checked against the exact floor
// (fqcFloorExact); a miss, a float64 rounding tie, is counted in lawInexact
// so that a mismatch it causes is not mistaken for a bug of the fast code.
func (m *fqcRef) controlLaw(t, count int64) int64 {
	step := int64(float64(m.interval) / math.Sqrt(float64(count)))
	m.cov.lawSteps++
	m.cov.maxCount = max(m.cov.maxCount, int(count))
	if !fqcFloorExact(m.interval, count, step) {
		m.cov.lawInexact++
	}
	return t + max(step, 1)
}

// fqcFloorExact reports whether s = floor(iv/sqrt(n)), that is
// s^2*n <= iv^2 < (s+1)^2*n, in big integers.
func fqcFloorExact(iv, n, s int64) bool {
	iv2 := new(big.Int).Mul(big.NewInt(iv), big.NewInt(iv))
	lo := new(big.Int).Mul(new(big.Int).Mul(big.NewInt(s), big.NewInt(s)), big.NewInt(n))
	hi := new(big.Int).Mul(new(big.Int).Mul(big.NewInt(s+1), big.NewInt(s+1)), big.NewInt(n))
	return lo.Cmp(iv2) <= 0 && hi.Cmp(iv2) > 0
}

// dodequeue is RFC 8289's dodequeue on flow f: pop the head and decide
// ok_to_drop. The "less than one MTU queued" guard looks at the bytes left
// in the flow, or in the whole queue with GlobalBacklogGuard.
func (m *fqcRef) dodequeue(f *fqcRefFlow, now int64) (p aqm.Packet[uint64], okToDrop, ok bool) {
	if len(f.q) == 0 {
		f.above = false
		return p, false, false
	}
	p = f.q[0]
	f.q = f.q[1:]
	f.bytes -= int64(p.Size)
	m.touch(f)
	m.n--
	m.bytes -= int64(p.Size)
	sojourn := max(now-int64(p.Enqueued), 0) // time going backwards is no time
	left := f.bytes
	if m.globalGuard {
		left = m.bytes
	}
	if sojourn < m.target || left <= m.mtu {
		f.above = false
		return p, false, true
	}
	if !f.above || f.firstAbove-now > m.interval {
		// Start the window, or restart it when its deadline lies more than
		// an interval ahead: it was set at a reading far in the future
		// (package codel's time policy).
		f.firstAbove, f.above = now+m.interval, true
		return p, false, true
	}
	if m.strict {
		return p, now > f.firstAbove, true
	}
	return p, now >= f.firstAbove, true
}

func (m *fqcRef) markable(p aqm.Packet[uint64]) bool { return m.ecn && p.ECN != aqm.NotECT }

// mark sets CE on a packet the control law signals instead of dropping it.
func (m *fqcRef) mark(p aqm.Packet[uint64]) aqm.Packet[uint64] {
	p.ECN = aqm.CE
	m.detail.MarkedCoDel++
	m.cov.marks++
	m.stats.Marked.Add(p.Size)
	return p
}

// deliver applies the CE threshold (RFC 8290 section 5.2.7, Linux
// ce_threshold) to a packet CoDel sends unmarked: sojourn strictly above the
// threshold, ECN-capable, and ECT(1) or CE with CEThresholdECT1Only.
func (m *fqcRef) deliver(p aqm.Packet[uint64], now int64) aqm.Packet[uint64] {
	sojourn := max(now-int64(p.Enqueued), 0)
	if m.ceThreshold > 0 && sojourn > m.ceThreshold && p.ECN != aqm.NotECT &&
		(!m.ceECT1Only || p.ECN == aqm.ECT1 || p.ECN == aqm.CE) {
		p.ECN = aqm.CE
		m.detail.MarkedCEThreshold++
		m.cov.ceMarks++
		m.stats.Marked.Add(p.Size)
	}
	return p
}

func (m *fqcRef) capped() bool { return m.callDrops >= dropcap.PerDequeue }

// resync is the documented drop cap: once a Dequeue call has dropped 256
// packets, the next packet is sent without CoDel looking at it, and a flow
// still dropping schedules its next drop one step from now.
func (m *fqcRef) resync(f *fqcRefFlow, now int64) (aqm.Packet[uint64], bool) {
	f.resume = false
	if len(f.q) == 0 {
		f.above, f.dropping = false, false
		return aqm.Packet[uint64]{}, false
	}
	p := f.q[0]
	f.q = f.q[1:]
	f.bytes -= int64(p.Size)
	m.touch(f)
	m.n--
	m.bytes -= int64(p.Size)
	if f.dropping {
		f.dropNext = m.controlLaw(now, f.count)
	}
	m.detail.CappedDequeues++
	m.cov.capHits++
	if m.callDropFlows > 1 {
		m.cov.capMultiFlow++ // the cap counts drops over all flows of the call
	}
	return p, true
}

func (m *fqcRef) codelDrop(f *fqcRefFlow, p aqm.Packet[uint64]) {
	m.callDrops++
	if f != m.lastDropFlow {
		m.lastDropFlow = f
		m.callDropFlows++
	}
	m.cov.early++
	m.dropQueued(p, aqm.DroppedEarly)
}

// codelDequeue is RFC 8289's dequeue() on flow f, with the extensions
// fq.CoDel documents: ECN marking instead of dropping (see resume), the
// LinuxCount and StrictDeadline options, the drop cap and the CE threshold.
func (m *fqcRef) codelDequeue(f *fqcRefFlow, now int64) (aqm.Packet[uint64], bool) {
	if m.capped() {
		return m.resync(f, now)
	}
	var p aqm.Packet[uint64]
	var okToDrop, ok bool
	if f.resume {
		// The rest of the dropping-loop iteration whose signal was a mark.
		f.resume = false
		m.cov.resumes++
		p, okToDrop, ok = m.dodequeue(f, now)
		if !ok {
			f.dropping = false
			return p, false
		}
		if !okToDrop {
			f.dropping = false
		} else {
			if !m.linuxCount {
				f.count++
			}
			f.dropNext = m.controlLaw(f.dropNext, f.count)
		}
	} else {
		p, okToDrop, ok = m.dodequeue(f, now)
		if !ok {
			f.dropping = false
			return p, false
		}
		if f.dropping {
			if !okToDrop {
				f.dropping = false
			}
		} else if okToDrop {
			// Enter the dropping state (RFC 8289: the Linux re-entry rule,
			// needing a previous episode, doc.go of package codel).
			delta := f.count - f.lastCount
			f.count = 1
			if delta > 1 && f.episode && now-f.dropNext < 16*m.interval && f.dropNext-now <= m.interval {
				f.count = delta
				m.cov.reentry++
			}
			f.lastCount = f.count
			f.dropNext = m.controlLaw(now, f.count)
			f.dropping, f.episode = true, true
			if m.markable(p) {
				return m.mark(p), true
			}
			m.codelDrop(f, p)
			if m.capped() {
				return m.resync(f, now)
			}
			p, _, ok = m.dodequeue(f, now)
			if !ok {
				// The RFC leaves dropping set here, but its next dequeue
				// clears it before any decision (first_above_time was
				// just reset), so clear it now.
				f.dropping = false
				return p, false
			}
			return m.deliver(p, now), true
		}
	}
	for m.reanchorDrop(f, now); f.dropping && now >= f.dropNext; m.reanchorDrop(f, now) {
		if m.linuxCount {
			f.count++
		}
		if m.markable(p) {
			f.resume = true
			return m.mark(p), true
		}
		m.codelDrop(f, p)
		if m.capped() {
			return m.resync(f, now)
		}
		p, okToDrop, ok = m.dodequeue(f, now)
		if !ok {
			f.dropping = false
			return p, false
		}
		if !okToDrop {
			f.dropping = false
		} else {
			if !m.linuxCount {
				f.count++
			}
			f.dropNext = m.controlLaw(f.dropNext, f.count)
		}
	}
	return m.deliver(p, now), true
}

// reanchorDrop is package codel's time policy for drop_next: no control-law
// step exceeds an interval, so a next drop further ahead than that was
// scheduled from a reading far in the future and is taken from now.
func (m *fqcRef) reanchorDrop(f *fqcRefFlow, now int64) {
	if f.dropping && f.dropNext-now > m.interval {
		f.dropNext = m.controlLaw(now, f.count)
	}
}

// dequeue is RFC 8290 section 4.2: serve the head of the new list, else of
// the old list; a flow with negative credit gets a quantum and goes to the
// tail of the old list; a flow whose CoDel returns nothing is empty and goes
// from the new list to the old one, or from the old list to idle; a sent
// packet costs its size (at most 64 quanta) in credit.
func (m *fqcRef) dequeue(now int64) (aqm.Packet[uint64], bool) {
	m.callDrops, m.callDropFlows, m.lastDropFlow = 0, 0, nil
	if m.tracking {
		// Each Dequeue call pays one unit of the build; once it is paid
		// for and the queue is at most half full, tracking stops.
		m.credit = max(m.credit-1, 0)
		if m.credit == 0 && m.n <= m.limit/2 && m.bytes <= m.memLimit/2 {
			m.tracking = false
			m.cov.trackStops++
		}
	}
	for {
		var list *[]int
		fromNew := false
		switch {
		case len(m.newL) > 0:
			list, fromNew = &m.newL, true
		case len(m.oldL) > 0:
			list = &m.oldL
		default:
			m.cov.emptyDequeues++
			return aqm.Packet[uint64]{}, false
		}
		b := (*list)[0]
		f := m.flows[b]
		if f.deficit < 0 {
			f.deficit += m.quantum
			*list = (*list)[1:]
			m.oldL = append(m.oldL, b)
			f.list = 2
			continue
		}
		p, ok := m.codelDequeue(f, now)
		if ok {
			cost := int64(p.Size)
			if cost > m.chargeCap {
				cost = m.chargeCap
				m.cov.chargeCapped++
			}
			f.deficit -= cost
			m.stats.Dequeued.Add(p.Size)
			m.cov.dequeues++
			return p, true
		}
		*list = (*list)[1:]
		if fromNew {
			m.oldL = append(m.oldL, b)
			f.list = 2
		} else {
			f.list = 0
		}
	}
}

// fullDetail returns the model's CoDelDetail, gauges included.
func (m *fqcRef) fullDetail() CoDelDetail {
	d := m.detail
	d.NewFlowsLen, d.OldFlowsLen = len(m.newL), len(m.oldL)
	for _, f := range m.flows {
		if f != nil {
			d.MaxFlowBacklog = max(d.MaxFlowBacklog, int(f.bytes))
		}
	}
	d.MemoryBytes = m.memory
	return d
}

// fqcRefCase is one configuration the traces run under, with the shape of
// its load.
type fqcRefCase struct {
	name   string
	cfg    CoDelConfig
	hashes int           // distinct flow hashes (more than Flows: collisions)
	step   time.Duration // largest time step between operations
	burst  int           // largest burst into one flow
	// sizes picks the size mix: fqcSizesMixed, fqcSizesTiny (half of them
	// zero bytes, so the fattest flow is sometimes chosen by packets, the
	// rest 0 to 4 bytes, so halves are often odd) or fqcSizesFixed (500 bytes: ties between flows and
	// guard comparisons at equality).
	sizes int
	// grid, if set, puts every instant on a multiple of it, so sojourn
	// times hit Target, CEThreshold and the deadlines exactly (the <
	// versus <= choices).
	grid time.Duration
	// reconf makes the trace Reconfigure the limits, quantum, batch, ECN
	// and CE threshold now and then (same Flows and Seed: state is kept).
	reconf bool
	// stalls is the chance per thousand operations of a stall of 1 to 40
	// intervals (default 3).
	stalls int
}

const (
	fqcSizesMixed = iota
	fqcSizesTiny
	fqcSizesFixed
)

func fqcRefCases() []fqcRefCase {
	const us, ms = time.Microsecond, time.Millisecond
	return []fqcRefCase{
		{name: "defaults-64flows", cfg: CoDelConfig{Flows: 64, LimitPackets: 400},
			hashes: 120, step: 300 * us, burst: 200},
		{name: "small-limits-batch1", cfg: CoDelConfig{Flows: 8, LimitPackets: 24, MemoryLimitBytes: 15000,
			DropBatchPackets: 1}, hashes: 30, step: 2 * ms, burst: 40},
		{name: "small-limits-batch3-mem", cfg: CoDelConfig{Flows: 16, LimitPackets: 60, MemoryLimitBytes: 9000,
			DropBatchPackets: 3, QuantumBytes: 300}, hashes: 40, step: ms, burst: 50},
		{name: "tiny-quantum-ce", cfg: CoDelConfig{Flows: 16, QuantumBytes: 256, LimitPackets: 300,
			Control: codel.Control{CEThreshold: 2 * ms}}, hashes: 40, step: 500 * us, burst: 120},
		{name: "ce-ect1-noecn", cfg: CoDelConfig{Flows: 32, LimitPackets: 300, Control: codel.Control{DisableECN: true, CEThreshold: ms, CEThresholdECT1Only: true, Target: 2 * ms, Interval: 30 * ms}}, hashes: 64, step: 300 * us, burst: 100},
		{name: "linux", cfg: CoDelConfig{Flows: 32, LimitPackets: 500, Control: codel.Control{LinuxCount: true, StrictDeadline: true}, GlobalBacklogGuard: true}, hashes: 60, step: 400 * us, burst: 150},
		{name: "linux-keepcount-mtu", cfg: CoDelConfig{Flows: 8, LimitPackets: 120, MemoryLimitBytes: 60000,
			Control: codel.Control{LinuxCount: true, MTUBytes: 300, Target: ms, Interval: 10 * ms}, KeepCountOnOverload: true},
			hashes: 20, step: 200 * us, burst: 80},
		{name: "drop-cap", cfg: CoDelConfig{Flows: 8, LimitPackets: 3000, Control: codel.Control{DisableECN: true, Target: 100 * us, Interval: ms, MTUBytes: 100}}, hashes: 10, step: 40 * us, burst: 400},
		{name: "drop-cap-multiflow", cfg: CoDelConfig{Flows: 4, LimitPackets: 3000, Control: codel.Control{DisableECN: true, Target: 100 * us, Interval: ms, MTUBytes: 100}, GlobalBacklogGuard: true}, hashes: 4, step: 40 * us, burst: 200, stalls: 20},
		{name: "odd-interval-global", cfg: CoDelConfig{Flows: 128, LimitPackets: 1000, MemoryLimitBytes: 400000,
			Control: codel.Control{Target: 3333333, Interval: 77777777, StrictDeadline: true, CEThreshold: 7 * ms}, GlobalBacklogGuard: true, QuantumBytes: 1000, DropBatchPackets: 16}, hashes: 300, step: 200 * us, burst: 300},
		{name: "tiny-sizes", cfg: CoDelConfig{Flows: 8, LimitPackets: 16, DropBatchPackets: 4, Control: codel.Control{MTUBytes: 2}},
			hashes: 12, step: ms, burst: 30, sizes: fqcSizesTiny},
		{name: "grid-rfc", cfg: CoDelConfig{Flows: 16, LimitPackets: 150, Control: codel.Control{MTUBytes: 1500, CEThreshold: 2 * ms}, QuantumBytes: 1000}, hashes: 30, step: 2 * ms, burst: 100, sizes: fqcSizesFixed, grid: 500 * us},
		{name: "grid-linux", cfg: CoDelConfig{Flows: 8, LimitPackets: 100, Control: codel.Control{MTUBytes: 2000, CEThreshold: 3 * ms, CEThresholdECT1Only: true, StrictDeadline: true, LinuxCount: true, Target: 4 * ms, Interval: 40 * ms}, GlobalBacklogGuard: true}, hashes: 20, step: 2 * ms, burst: 80, sizes: fqcSizesFixed, grid: ms},
		{name: "reconfigure", cfg: CoDelConfig{Flows: 16, LimitPackets: 100, MemoryLimitBytes: 50000,
			Control: codel.Control{CEThreshold: 3 * ms}}, hashes: 40, step: 500 * us, burst: 120, reconf: true},
		{name: "reconfigure-linux", cfg: CoDelConfig{Flows: 4, LimitPackets: 40, MemoryLimitBytes: 30000,
			Control: codel.Control{LinuxCount: true, StrictDeadline: true, Target: ms, Interval: 20 * ms}, GlobalBacklogGuard: true},
			hashes: 16, step: 300 * us, burst: 60, reconf: true},
	}
}

// fqcRefSize draws a packet size: mostly full-size and small packets, some
// zero and some absurd (above the charge cap, or above the memory limit).
func fqcRefSize(src *rng.Source) uint32 {
	switch r := src.Uint64() % 100; {
	case r < 55:
		return uint32(1000 + src.Uint64()%515)
	case r < 80:
		return uint32(40 + src.Uint64()%160)
	case r < 95:
		return uint32(200 + src.Uint64()%800)
	case r < 98:
		return 0
	default:
		return uint32(2000 + src.Uint64()%120000)
	}
}

// runFQCRefTrace drives CoDel and the model with one random trace and
// requires identical behaviour after every operation.
func runFQCRefTrace(t *testing.T, c fqcRefCase, seed uint64, ops int) fqcRefCoverage {
	t.Helper()
	cfg := c.cfg
	cfg.Seed = seed*0x9e3779b97f4a7c15 + 1
	var got []fqcRefDrop
	// The model is RFC 8290's scheduler, without the flood guard.
	cfg.DisableFloodGuard = true
	q, err := NewCoDel(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) { got = append(got, fqcRefDrop{p, why}) })
	require.NoError(t, err)
	m := newFQCRef(cfg)
	require.NoError(t, cfg.Validate())
	vcfg := cfg.withDefaults()
	src := rng.New(seed ^ 0xfc0de1)

	// Flow hashes; several of them share a bucket when hashes > Flows.
	hashes := make([]uint32, c.hashes)
	bucket := map[uint32]int{}
	for i := range hashes {
		hashes[i] = uint32(src.Uint64())
		// The only use of the fast code's classification (see fqcRef).
		bucket[hashes[i]] = flowState(q.Flow(hashes[i])).Bucket
	}
	pickHash := func() uint32 {
		u := src.Float64()
		return hashes[int(u*u*u*float64(len(hashes)))] // skewed: a few heavy flows, many sparse ones
	}

	now := int64(time.Second)
	id := uint64(0)
	grid := max(int64(c.grid), 1)
	tick := func() int64 { return grid * int64(src.Uint64()%uint64(int64(c.step)/grid+1)) }
	var pEnq float64
	where := func(op int, what string) string {
		s := fmt.Sprintf("%s seed %d op %d (%s) now %d", c.name, seed, op, what, now)
		if m.cov.lawInexact > 0 {
			s += fmt.Sprintf(" [the model's float64 control law missed the exact floor %d times: "+
				"a rounding tie of the model, not necessarily a bug]", m.cov.lawInexact)
		}
		return s
	}
	checkDrops := func(op int, what string) {
		if len(m.drops) > 0 || len(got) > 0 {
			require.Equal(t, m.drops, got, where(op, what)+": DropFunc calls")
		}
		m.drops, got = m.drops[:0], got[:0]
	}
	checkState := func(op int) {
		require.Equal(t, m.fullDetail(), q.Detail(), where(op, "detail"))
		s := q.Stats()
		ms := m.stats
		ms.Len, ms.Backlog = int(m.n), int(m.bytes)
		require.Equal(t, ms, s, where(op, "stats"))
		for _, h := range hashes {
			b := bucket[h]
			ff := flowState(q.Flow(h))
			mf := m.flows[b]
			if mf == nil {
				mf = &fqcRefFlow{}
			}
			fa := int64(0)
			if mf.above {
				fa = mf.firstAbove
			}
			want := [9]int64{int64(len(mf.q)), mf.bytes, mf.deficit, fqcB2i(mf.list == 1), fqcB2i(mf.list == 2),
				mf.count, mf.lastCount, mf.dropNext, fa}
			have := [9]int64{int64(ff.Packets), int64(ff.Bytes), int64(ff.Deficit), fqcB2i(ff.New), fqcB2i(ff.Old),
				int64(ff.CoDel.Count), int64(ff.CoDel.LastCount), int64(ff.CoDel.DropNext), int64(ff.CoDel.FirstAbove)}
			require.Equal(t, want, have, where(op, fmt.Sprintf("flow %d state: packets bytes deficit new old count lastcount dropnext firstabove", b)))
		}
	}
	enqueue := func(op int, h uint32) {
		id++
		ecn := aqm.ECN(src.Uint64() % 4)
		if src.Uint64()%16 == 0 {
			ecn |= aqm.ECN(src.Uint64()) &^ aqm.ECNMask // stray high bits
		}
		size := fqcRefSize(&src)
		switch c.sizes {
		case fqcSizesTiny:
			size = uint32(src.Uint64() % 5)
			if src.Uint64()%2 == 0 {
				size = 0
			}
		case fqcSizesFixed:
			size = 500
		}
		p := aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: size, Hash: h, ECN: ecn}, Enqueued: aqm.Time(src.Uint64())}
		v := q.Enqueue(p, aqm.Time(now))
		mv := m.enqueue(p, bucket[h], now)
		m.cov.verdicts++
		require.Equal(t, mv, v, where(op, fmt.Sprintf("enqueue %d size %d", id, p.Size)))
		checkDrops(op, "enqueue")
	}
	dequeue := func(op int) bool {
		p, ok := q.Dequeue(aqm.Time(now))
		mp, mok := m.dequeue(now)
		require.Equal(t, mok, ok, where(op, "dequeue presence"))
		require.Equal(t, mp, p, where(op, "dequeued packet"))
		checkDrops(op, "dequeue")
		return ok
	}

	for op := range ops {
		if op%200 == 0 {
			// A new phase: arrivals from well below to well above the
			// service rate of one dequeue per operation pair.
			pEnq = 0.2 + 0.6*src.Float64()
		}
		stalls := uint64(3)
		if c.stalls > 0 {
			stalls = uint64(c.stalls)
		}
		switch r := src.Uint64() % 1000; {
		case r < stalls: // stall: nothing happens for 1 to 40 intervals
			now += m.interval * int64(1+src.Uint64()%40)
		case r < stalls+3: // the clock goes backwards a little
			now -= tick()
		case r < stalls+9: // a burst into one to four flows (overload)
			for range 1 + src.Uint64()%4 {
				h := pickHash()
				for range 1 + src.Uint64()%uint64(c.burst) {
					enqueue(op, h)
				}
			}
		case r < stalls+11: // drain at one instant
			for dequeue(op) {
			}
		case r < stalls+14 && c.reconf: // new limits, possibly below the occupancy
			nc := cfg
			nc.LimitPackets = 3 + int(src.Uint64()%uint64(2*vcfg.LimitPackets))
			nc.MemoryLimitBytes = 3*vcfg.MTUBytes + int(src.Uint64()%uint64(2*vcfg.MemoryLimitBytes))
			nc.QuantumBytes = 256 + int(src.Uint64()%2000)
			nc.DropBatchPackets = 1 + int(src.Uint64()%64)
			nc.DisableECN = src.Uint64()%2 == 0
			nc.CEThreshold = time.Duration(src.Uint64() % uint64(5*time.Millisecond))
			require.NoError(t, q.Reconfigure(nc))
			m.configure(nc)
			m.cov.reconfigs++
		default:
			now += tick()
			if src.Float64() < pEnq {
				enqueue(op, pickHash())
			} else {
				dequeue(op)
			}
		}
		require.Equal(t, int(m.n), q.Len(), where(op, "Len"))
		require.Equal(t, int(m.bytes), q.Backlog(), where(op, "Backlog"))
		if op%64 == 0 {
			checkState(op)
		}
	}
	for dequeue(ops) {
	}
	checkState(ops)
	require.Zero(t, q.Len())
	return m.cov
}

func fqcB2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestCoDelReferenceRFC8290 protects FQ-CoDel's agreement with a slow model
// written from RFC 8290 and RFC 8289: on random traces (many flows with
// bucket collisions, bursts into the limits, stalls, time going backwards,
// odd sizes and ECN codepoints) under several configurations, every verdict,
// every dequeued packet (all fields, ECN included), every DropFunc call
// (packet and reason), Len and Backlog after every operation, and the
// stats, Detail and per-flow state every 64 operations must be identical.
// The tolerance is zero: the control law is exact in both (package codel
// floors interval/sqrt(count) exactly; the model's float64 truncation is
// checked against the exact floor in big integers at every step and must
// never differ, lawInexact == 0).
func TestCoDelReferenceRFC8290(t *testing.T) {
	seeds, ops := 4, 4000
	if testing.Short() {
		seeds, ops = 2, 2500
	}
	var total fqcRefCoverage
	for _, c := range fqcRefCases() {
		t.Run(c.name, func(t *testing.T) {
			var cov fqcRefCoverage
			for seed := range uint64(seeds) {
				cov.add(runFQCRefTrace(t, c, seed, ops))
			}
			t.Logf("%+v", cov)
			total.add(cov)
		})
	}
	t.Logf("total %+v", total)
	require.Zero(t, total.lawInexact, "float64 control law differs from the exact floor")
	require.Less(t, total.maxCount, 1<<16, "TestCoDelReferenceLawFloat64 covers the counts reached")
	// The traces must reach every path the model has.
	require.Greater(t, total.early, 1000, "CoDel drops")
	require.Greater(t, total.marks, 100, "ECN marks")
	require.Greater(t, total.ceMarks, 100, "CE threshold marks")
	require.Greater(t, total.overload, 100, "overload drops")
	require.Greater(t, total.refusedArrival, 0, "arrival refused by the overload drop")
	require.Greater(t, total.refusedTooBig, 0, "packet above the memory limit")
	require.Greater(t, total.refusedAbove, 0, "arrival while a Reconfigure left the queue above a limit")
	require.Greater(t, total.reentry, 0, "re-entry with count = delta")
	require.Greater(t, total.capHits, 0, "drop cap")
	require.Greater(t, total.capMultiFlow, 0, "drop cap reached by drops from several flows")
	require.Greater(t, total.chargeCapped, 0, "deficit charge cap")
	require.Greater(t, total.byCount, 0, "fattest flow by packets (zero bytes)")
	require.Greater(t, total.resumes, 100, "marks inside the dropping loop")
	require.Greater(t, total.trackStarts, 100, "class tracking started")
	require.Greater(t, total.trackStops, 100, "class tracking stopped")
}

// TestCoDelReferenceLawFloat64 protects the zero tolerance of
// TestCoDelReferenceRFC8290: for every Interval its cases use and every count
// up to 2^16 (above any count the traces reach, which that test checks), the
// model's float64 interval/sqrt(count), truncated, is the exact floor that
// package codel computes. (sqrt and the division are correctly rounded, so
// the float64 quotient is within about 2^-52 of the real one relatively,
// under 3e-7 ns for intervals below 2^30 ns; it can only truncate wrongly if
// the real quotient is that close to a whole number. For a count that is not
// a square the quotient is irrational; for a square k^2 it is iv/k, a whole
// number, which float64 gets exactly, or at least 1/k away from one.)
func TestCoDelReferenceLawFloat64(t *testing.T) {
	const maxN = 1 << 16
	seen := map[int64]bool{}
	for _, c := range fqcRefCases() {
		require.NoError(t, c.cfg.Validate())
		iv := int64(c.cfg.withDefaults().Interval)
		if seen[iv] {
			continue
		}
		seen[iv] = true
		for n := int64(1); n <= maxN; n++ {
			s := int64(float64(iv) / math.Sqrt(float64(n)))
			if !fqcFloorExact(iv, n, s) {
				t.Fatalf("interval %d count %d: float64 gives %d, not the exact floor", iv, n, s)
			}
		}
	}
	require.Greater(t, len(seen), 3)
}
