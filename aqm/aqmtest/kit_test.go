package aqmtest

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/stretchr/testify/require"
)

// broken wraps a FIFO and breaks the contract in one chosen way.
type broken struct {
	*fifo.Queue[Payload]
	fault  string
	repeat *aqm.Packet[Payload]
	n      int

	// For "parks-idle-start": when the queue last went empty, and what the
	// wrapper refused on its own.
	idleStart aqm.Time
	early     aqm.Count
	maxSize   uint32

	// For "parks-update": a toy AQM that refuses arrivals while its last
	// periodic update (every 10 ms) found more than 5 packets queued; the
	// next update is never pulled back from a far-future reading.
	nextUpdate aqm.Time
	active     bool

	// For "reorders": packets taken out and put back at the tail, which the
	// FIFO counted as dequeued and enqueued once more.
	requeued aqm.Count

	// For "segments-as-one": the Segments of packets the wrapper hid from
	// the FIFO, which then counts each super-packet as one packet.
	hidden map[Payload]uint16
}

// singleOnly hides every method of a queue but those of aqm.Queue, so that
// a broken single-call path is not bypassed by the FIFO's burst path.
type singleOnly struct{ aqm.Queue[Payload] }

var allocSink []byte

func (b *broken) Enqueue(p aqm.Packet[Payload], now aqm.Time) aqm.Verdict {
	switch b.fault {
	case "allocates":
		allocSink = make([]byte, 64+len(allocSink)%3)
	case "marks-not-ect":
		if v := b.Queue.Enqueue(p, now); !v.Accepted() {
			return v
		}
		return aqm.Marked
	case "parks-update":
		if now >= b.nextUpdate && now < math.MaxInt64-aqm.Time(time.Hour) {
			b.nextUpdate = now + aqm.Time(10*time.Millisecond)
			b.active = b.Queue.Len() > 5
		}
		if b.active {
			b.maxSize = max(b.maxSize, p.Size)
			b.early.Add(p.Size)
			return aqm.DroppedEarly
		}
	case "segments-as-one":
		if b.hidden == nil {
			b.hidden = make(map[Payload]uint16)
		}
		segs := p.Segments
		p.Segments = 0
		v := b.Queue.Enqueue(p, now)
		if v.Accepted() && segs != 0 {
			b.hidden[p.Payload] = segs
		}
		return v
	case "parks-idle-start":
		// RED's old defect: an idle start recorded at a far-future reading
		// stays ahead of the clock, and arrivals "before" it are refused.
		if now < b.idleStart {
			b.maxSize = max(b.maxSize, p.Size)
			b.early.Add(p.Size)
			return aqm.DroppedEarly
		}
	}
	return b.Queue.Enqueue(p, now)
}

func (b *broken) Dequeue(now aqm.Time) (aqm.Packet[Payload], bool) {
	switch b.fault {
	case "loses":
		p, ok := b.Queue.Dequeue(now)
		if ok && p.Payload%7 == 0 {
			return b.Queue.Dequeue(now) // the 7th packet vanishes
		}
		return p, ok
	case "duplicates":
		if b.repeat != nil {
			p := *b.repeat
			b.repeat = nil
			return p, true
		}
		p, ok := b.Queue.Dequeue(now)
		if ok && p.Payload%5 == 0 {
			b.repeat = &p
		}
		return p, ok
	case "reorders":
		b.n++
		if b.n%4 == 0 && b.Queue.Len() >= 2 {
			first, _ := b.Queue.Dequeue(now)
			second, _ := b.Queue.Dequeue(now)
			b.Queue.Enqueue(first, first.Enqueued) // back at the tail: out of order
			b.requeued.Add(first.Size)             // kept out of Stats: only the order is wrong
			return second, true
		}
	case "false-empty":
		if b.Queue.Len() == 3 {
			return aqm.Packet[Payload]{}, false
		}
	case "stray-bits":
		p, ok := b.Queue.Dequeue(now)
		if p.Payload%3 == 0 {
			p.ECN |= 0x80
		}
		return p, ok
	case "restamps":
		p, ok := b.Queue.Dequeue(now)
		p.Enqueued = now
		return p, ok
	case "segments-as-one":
		p, ok := b.Queue.Dequeue(now)
		if segs, hid := b.hidden[p.Payload]; ok && hid {
			p.Segments = segs
			delete(b.hidden, p.Payload)
		}
		return p, ok
	case "parks-idle-start":
		p, ok := b.Queue.Dequeue(now)
		if b.Queue.Len() == 0 && now > b.idleStart {
			b.idleStart = now // never moves back: the defect
		}
		return p, ok
	}
	return b.Queue.Dequeue(now)
}

func (b *broken) Stats() aqm.Stats {
	s := b.Queue.Stats()
	if b.fault == "miscounts" && s.Dequeued.Packets > 10 {
		s.Dequeued.Packets--
	}
	s.Enqueued.Packets -= b.requeued.Packets
	s.Enqueued.Bytes -= b.requeued.Bytes
	s.Dequeued.Packets -= b.requeued.Packets
	s.Dequeued.Bytes -= b.requeued.Bytes
	s.DroppedEarly = s.DroppedEarly.Plus(b.early)
	s.MaxSize = max(s.MaxSize, b.maxSize)
	return s
}

func brokenFactory(fault string, cfg fifo.Config, declared int) Factory {
	return Factory{
		New: func(_ uint64, onDrop aqm.DropFunc[Payload]) (aqm.Queue[Payload], error) {
			q, err := fifo.New(cfg, onDrop)
			return singleOnly{&broken{Queue: q, fault: fault}}, err
		},
		LimitPackets: declared,
	}
}

// runChecks runs every check and returns the names of those that failed.
func runChecks(f Factory) (failed []string, msgs string) {
	for _, c := range checks {
		if err := c.fn(f); err != nil {
			failed = append(failed, c.name)
			msgs += c.name + ": " + err.Error() + "\n"
		}
	}
	if err := checkProperties(f, defaultSeed, 30); err != nil {
		failed = append(failed, "Properties")
		msgs += "Properties: " + err.Error() + "\n"
	}
	return failed, msgs
}

// TestKitCatchesBrokenQueues protects the kit itself: each deliberately
// broken queue must fail the checks named for it, with a message that says
// what went wrong.
func TestKitCatchesBrokenQueues(t *testing.T) {
	cfg := fifo.Config{LimitPackets: 64}
	cases := []struct {
		fault    string
		declared int      // LimitPackets declared to the kit
		mustFail []string // checks that must catch it
		says     string   // a phrase the report must contain
	}{
		{"loses", 64, []string{"FIFO", "RandomTraces", "Properties"}, "lost"},
		{"duplicates", 64, []string{"FIFO", "RandomTraces", "Properties"}, "duplicated"},
		{"allocates", 64, []string{"ZeroAllocs"}, "allocations per Enqueue+Dequeue"},
		{"marks-not-ect", 64, []string{"FIFO", "ECN"}, "Not-ECT packet"},
		{"reorders", 64, []string{"FIFO", "RandomTraces"}, "reordered"},
		{"false-empty", 64, []string{"FIFO"}, "Dequeue returned nothing but Len is 3"},
		{"restamps", 64, []string{"FIFO"}, "want the enqueue instant"},
		{"stray-bits", 64, []string{"StrayECNBits", "FIFO"}, "stray ECN bits"},
		{"miscounts", 64, []string{"FIFO", "Limits"}, "Stats.Dequeued"},
		{"overfills", 32, []string{"Limits", "RandomTraces"}, "exceeds LimitPackets 32"},
		{"segments-as-one", 64, []string{"GSO", "GSOLimits", "Properties"}, "(Len in wire packets: 1 queued packets)"},
	}
	for _, c := range cases {
		t.Run(c.fault, func(t *testing.T) {
			if c.fault == "allocates" && raceEnabled {
				t.Skip("allocation counts are not meaningful under the race detector")
			}
			failed, msgs := runChecks(brokenFactory(c.fault, cfg, c.declared))
			for _, name := range c.mustFail {
				require.Contains(t, failed, name, "check %s missed fault %q; report:\n%s", name, c.fault, msgs)
			}
			require.True(t, strings.Contains(msgs, c.says), "report for %q lacks %q:\n%s", c.fault, c.says, msgs)
		})
	}
}

// TestKitCatchesLossyReconfigure protects the Reconfigure check: a
// reconfiguration that silently discards the queue is caught.
func TestKitCatchesLossyReconfigure(t *testing.T) {
	f := brokenFactory("none", fifo.Config{LimitPackets: 64}, 64)
	f.Reconfigure = func(q aqm.Queue[Payload], i int) error {
		b := q.(singleOnly).Queue.(*broken)
		fresh, err := fifo.New[Payload](fifo.Config{LimitPackets: 64}, nil)
		b.Queue = fresh // everything queued is lost
		return err
	}
	err := checkReconfigure(f)
	require.Error(t, err)
	require.Contains(t, err.Error(), "Len/Backlog")
}

// TestKitPassesCorrectFIFO protects against a kit that fails everything: the
// same wrapper with no fault passes every check.
func TestKitPassesCorrectFIFO(t *testing.T) {
	failed, msgs := runChecks(brokenFactory("none", fifo.Config{LimitPackets: 64}, 64))
	if raceEnabled {
		failed = removeAll(failed, "ZeroAllocs")
	}
	require.Empty(t, failed, msgs)
}

func removeAll(s []string, x string) []string {
	out := s[:0]
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// TestDecodeCoversOddCases protects the decoder's reach: random bytes must
// produce every odd input the kit promises to exercise.
func TestDecodeCoversOddCases(t *testing.T) {
	ops := decode(randomBytes(7, 4*5000))
	var zero, huge, stray, back, jump, burst bool
	for _, o := range ops {
		zero = zero || (o.Kind == opEnqueue && o.Size == 0)
		huge = huge || o.Size == 1<<32-1
		stray = stray || o.ECN&^aqm.ECNMask != 0
		back = back || o.Dt < 0
		jump = jump || o.JumpTo >= hugeTime
		burst = burst || o.Count > 500
	}
	require.True(t, zero && huge && stray && back && jump && burst,
		"zero=%v huge=%v stray=%v back=%v jump=%v burst=%v", zero, huge, stray, back, jump, burst)
}

// TestPropertySeedFromEnv protects replayability: AQMTEST_SEED selects the
// gopter seed.
func TestPropertySeedFromEnv(t *testing.T) {
	t.Setenv("AQMTEST_SEED", "12345")
	require.Equal(t, int64(12345), propertySeed())
	t.Setenv("AQMTEST_SEED", "")
	require.Equal(t, int64(defaultSeed), propertySeed())
}

// TestTraceBudget protects the fuzz driver's bound: a trace of huge bursts
// stops after the budget and is still drained and checked.
func TestTraceBudget(t *testing.T) {
	ops := []traceOp{{Kind: opEnqueue, Count: 1 << 20, Size: 100}, {Kind: opDequeue, Count: 1 << 20}}
	h, err := newHarness(brokenFactory("none", fifo.Config{LimitPackets: 1 << 16}, 1<<16), 1, false)
	require.NoError(t, err)
	h.budget = 1000
	require.NoError(t, h.play(ops))
	require.Equal(t, Payload(1000), h.seq, "1000 packet operations, then the drain")
	require.Equal(t, 0, h.q.Len())
}

// burstBroken is a FIFO with a burst path of its own (a loop over the
// FIFO's single calls) that breaks the burst contract in one chosen way.
type burstBroken struct {
	*fifo.Queue[Payload]
	fault  string
	onDrop aqm.DropFunc[Payload]
	mute   bool
	lost   uint64 // bytes the burst path forgot to count
}

var _ aqm.BatchQueue[Payload] = (*burstBroken)(nil)

func (b *burstBroken) EnqueueBatch(ps []aqm.Packet[Payload], vs []aqm.Verdict, now aqm.Time) int {
	n := min(len(ps), len(vs))
	if b.fault == "ignores-verdict-len" {
		n = len(ps)
	}
	accepted := 0
	for i := range n {
		t := now
		if b.fault == "stamps" && i > 0 {
			t = now + 1 // a later instant for all but the first packet
		}
		b.mute = b.fault == "skips-drop" && i == n-1
		v := b.Queue.Enqueue(ps[i], t)
		b.mute = false
		if i < len(vs) {
			vs[i] = v
		}
		if v.Accepted() {
			accepted++
			if b.fault == "miscounts" && i == 1 {
				b.lost += uint64(ps[i].Size)
			}
		}
	}
	return accepted
}

func (b *burstBroken) DequeueBatch(buf []aqm.Packet[Payload], now aqm.Time) int {
	want := len(buf)
	if b.fault == "short" && want > 4 {
		want--
	}
	n := aqm.DequeueLoop[Payload](b.Queue, buf[:want], now)
	if b.fault == "reorders" && n >= 3 {
		buf[1], buf[2] = buf[2], buf[1]
	}
	return n
}

func (b *burstBroken) Stats() aqm.Stats {
	s := b.Queue.Stats()
	s.Enqueued.Bytes -= b.lost
	return s
}

func burstFactory(fault string) Factory {
	return Factory{
		New: func(_ uint64, onDrop aqm.DropFunc[Payload]) (aqm.Queue[Payload], error) {
			b := &burstBroken{fault: fault, onDrop: onDrop}
			q, err := fifo.New(fifo.Config{LimitPackets: 64, LimitBytes: 60000, HeadDrop: true}, func(p aqm.Packet[Payload], v aqm.Verdict) {
				if !b.mute && b.onDrop != nil {
					b.onDrop(p, v)
				}
			})
			b.Queue = q
			return b, err
		},
		LimitPackets: 64,
		LimitBytes:   60000,
	}
}

// TestKitCatchesBrokenBursts protects the Burst check: a burst path that
// reorders, skips a DropFunc call, miscounts Stats, stamps another time,
// offers packets it has no verdict slot for, or stops a dequeue burst early
// is caught, and a correct one passes.
func TestKitCatchesBrokenBursts(t *testing.T) {
	require.True(t, hasBurstPath(burstFactory("none")))
	require.NoError(t, checkBurst(burstFactory("none")))
	cases := []struct{ fault, says string }{
		{"reorders", "DequeueBatch packet 1 is"},
		{"skips-drop", "DropFunc call"},
		{"miscounts", "Stats after the burst path differ"},
		{"stamps", "enq="},
		{"ignores-verdict-len", "accepted"},
		{"short", "DequeueBatch of"},
	}
	for _, c := range cases {
		t.Run(c.fault, func(t *testing.T) {
			err := checkBurst(burstFactory(c.fault))
			require.Error(t, err, "fault %q not caught", c.fault)
			require.ErrorContains(t, err, c.says)
			// The fuzz driver drives bursts too.
			caught := false
			for s := range uint64(20) {
				if fuzzOne(burstFactory(c.fault), randomBytes(s, 4*200), s) != nil {
					caught = true
					break
				}
			}
			require.True(t, caught, "fuzz driver never caught fault %q", c.fault)
		})
	}
}

// TestKitCatchesClockGlitch protects the ClockGlitch check: a queue that
// parks its idle start at a far-future reading and refuses arrivals until
// the clock passes it (RED's old defect) is caught; the opt-out turns the
// check off; a correct FIFO passes (TestKitPassesCorrectFIFO).
func TestKitCatchesClockGlitch(t *testing.T) {
	f := brokenFactory("parks-idle-start", fifo.Config{LimitPackets: 64}, 64)
	err := checkClockGlitch(f)
	require.Error(t, err)
	require.ErrorContains(t, err, "after Dequeue at now+2^62: light traffic fared differently from the control queue in 100 of 100 packets")
	require.ErrorContains(t, err, "refused (dropped-early), on the control queue delivered")
	require.ErrorContains(t, err, "after Dequeue at MaxInt64: light traffic fared differently")
	f.SkipClockGlitch = true
	require.NoError(t, checkClockGlitch(f))
}

// TestKitCatchesStoppedControlLoop protects the ClockGlitch check's
// overload phase: a queue whose periodic update a far-future reading parks
// (and which shows nothing in light traffic or in a Detail) is caught,
// while the same toy AQM without a glitch passes.
func TestKitCatchesStoppedControlLoop(t *testing.T) {
	f := brokenFactory("parks-update", fifo.Config{LimitPackets: 64}, 64)
	err := runGlitch(f, glitch{"nothing", func(*harness, aqm.Time) {}})
	require.NoError(t, err, "the toy AQM is fine when the clock is")
	err = checkClockGlitch(f)
	require.Error(t, err)
	require.ErrorContains(t, err, "after Enqueue at now+2^62: under overload after the recovery and measurement, the queue held 62.0 packets on average, the control queue 5.0")
	require.ErrorContains(t, err, "its AQM did not recover")
	require.NotContains(t, err.Error(), "fared differently")
}

// TestKitGlitchCatchesLoss protects conservation in the ClockGlitch check:
// a queue that loses the packets it took at a far-future reading is caught.
func TestKitGlitchCatchesLoss(t *testing.T) {
	f := brokenFactory("none", fifo.Config{LimitPackets: 64}, 64)
	inner := f.New
	f.New = func(seed uint64, onDrop aqm.DropFunc[Payload]) (aqm.Queue[Payload], error) {
		q, err := inner(seed, onDrop)
		return &losesFuture{Queue: q}, err
	}
	err := checkClockGlitch(f)
	require.Error(t, err)
	require.ErrorContains(t, err, "after Enqueue at now+2^62: glitched queue")
	require.ErrorContains(t, err, "Len/Backlog = 0/0, want 1/1000")
}

// losesFuture forgets every packet enqueued after 2^62 ns when it next
// dequeues at a normal time (while still counting it as dequeued).
type losesFuture struct {
	aqm.Queue[Payload]
}

func (l *losesFuture) Dequeue(now aqm.Time) (aqm.Packet[Payload], bool) {
	for {
		p, ok := l.Queue.Dequeue(now)
		if !ok || p.Enqueued < hugeTime || now >= hugeTime {
			return p, ok
		}
	}
}

// parksSchedule is a correct FIFO whose Detail reports a periodic update
// that is scheduled a second after the latest reading and never pulled
// back: after a far-future reading it stays parked there.
type parksSchedule struct {
	aqm.Queue[Payload]
	next aqm.Time
}

type parkedDetail struct {
	Inner struct{ NextUpdate aqm.Time }
}

func (p *parksSchedule) Dequeue(now aqm.Time) (aqm.Packet[Payload], bool) {
	if t := now + aqm.Time(time.Second); now < math.MaxInt64-aqm.Time(time.Second) && t > p.next {
		p.next = t
	}
	return p.Queue.Dequeue(now)
}

func (p *parksSchedule) Detail() parkedDetail {
	var d parkedDetail
	d.Inner.NextUpdate = p.next
	return d
}

// TestKitCatchesParkedSchedule protects the ClockGlitch check's look into
// Detail: an instant left parked in the far future is named even when the
// light traffic does not show it.
func TestKitCatchesParkedSchedule(t *testing.T) {
	f := brokenFactory("none", fifo.Config{LimitPackets: 64}, 64)
	inner := f.New
	f.New = func(seed uint64, onDrop aqm.DropFunc[Payload]) (aqm.Queue[Payload], error) {
		q, err := inner(seed, onDrop)
		return &parksSchedule{Queue: q}, err
	}
	err := checkClockGlitch(f)
	require.Error(t, err)
	require.ErrorContains(t, err, "after Dequeue at now+2^62: after 1s of recovery, a second of light traffic and 2s of overload, Detail still holds instants more than 24h0m0s ahead of the clock: Detail.Inner.NextUpdate=")
	require.NotContains(t, err.Error(), "fared differently")
}

// allocBurst is a FIFO whose burst path allocates.
type allocBurst struct{ *fifo.Queue[Payload] }

func (a allocBurst) EnqueueBatch(ps []aqm.Packet[Payload], vs []aqm.Verdict, now aqm.Time) int {
	allocSink = make([]byte, 64+len(allocSink)%3)
	return a.Queue.EnqueueBatch(ps, vs, now)
}

// TestKitCatchesAllocatingBurst protects the ZeroAllocs check's burst
// phase: a burst path that allocates is caught, while its single calls do
// not allocate.
func TestKitCatchesAllocatingBurst(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	f := Factory{New: func(_ uint64, onDrop aqm.DropFunc[Payload]) (aqm.Queue[Payload], error) {
		q, err := fifo.New(fifo.Config{LimitPackets: 64}, onDrop)
		return allocBurst{q}, err
	}}
	err := checkAllocs(f)
	require.Error(t, err)
	require.ErrorContains(t, err, "burst standing: 1.00 allocations per EnqueueBatch+DequeueBatch")
	require.NotContains(t, err.Error(), "per Enqueue+Dequeue")
}

// TestBurstNeverUsesSeedZero protects the Burst check on queues whose zero
// Seed draws a secret one: the two queues it compares must share a seed
// that means the same stream, so seed 0 is never passed for them.
func TestBurstNeverUsesSeedZero(t *testing.T) {
	var seeds []uint64
	f := brokenFactory("none", fifo.Config{LimitPackets: 64}, 64)
	inner := f.New
	f.New = func(seed uint64, onDrop aqm.DropFunc[Payload]) (aqm.Queue[Payload], error) {
		seeds = append(seeds, seed)
		return inner(seed, onDrop)
	}
	require.NoError(t, fuzzOne(f, randomBytes(3, 64), 0))
	require.Len(t, seeds, 4, "one queue for the op-by-op run, two for the burst comparison, one for the run as GSO super-packets")
	require.NotZero(t, seeds[1])
	require.Equal(t, seeds[1], seeds[2])
}

// TestLossMarginSeparatesNoise protects the ClockGlitch check's count
// comparison: the margin covers two random counts a few losses apart, but
// not a queue that loses half or all of the light traffic the control
// queue loses a tenth of.
func TestLossMarginSeparatesNoise(t *testing.T) {
	require.GreaterOrEqual(t, lossMargin(6, 16, 100), 10)
	require.Less(t, lossMargin(10, 50, 100), 40)
	require.Less(t, lossMargin(10, 100, 100), 90)
	require.Equal(t, 5, lossMargin(0, 1, 100))
}
