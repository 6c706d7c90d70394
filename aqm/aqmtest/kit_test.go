package aqmtest

import (
	"strings"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// broken wraps a FIFO and breaks the contract in one chosen way.
type broken struct {
	*aqm.FIFO[Payload]
	fault  string
	repeat *aqm.Packet[Payload]
	n      int
}

var allocSink []byte

func (b *broken) Enqueue(p aqm.Packet[Payload], now aqm.Time) aqm.Verdict {
	switch b.fault {
	case "allocates":
		allocSink = make([]byte, 64+len(allocSink)%3)
	case "marks-not-ect":
		if v := b.FIFO.Enqueue(p, now); !v.Accepted() {
			return v
		}
		return aqm.Marked
	}
	return b.FIFO.Enqueue(p, now)
}

func (b *broken) Dequeue(now aqm.Time) (aqm.Packet[Payload], bool) {
	switch b.fault {
	case "loses":
		p, ok := b.FIFO.Dequeue(now)
		if ok && p.Payload%7 == 0 {
			return b.FIFO.Dequeue(now) // the 7th packet vanishes
		}
		return p, ok
	case "duplicates":
		if b.repeat != nil {
			p := *b.repeat
			b.repeat = nil
			return p, true
		}
		p, ok := b.FIFO.Dequeue(now)
		if ok && p.Payload%5 == 0 {
			b.repeat = &p
		}
		return p, ok
	case "reorders":
		b.n++
		if b.n%4 == 0 && b.FIFO.Len() >= 2 {
			first, _ := b.FIFO.Dequeue(now)
			second, _ := b.FIFO.Dequeue(now)
			b.FIFO.Enqueue(first, first.Enqueued) // back at the tail: out of order
			return second, true
		}
	case "false-empty":
		if b.FIFO.Len() == 3 {
			return aqm.Packet[Payload]{}, false
		}
	case "stray-bits":
		p, ok := b.FIFO.Dequeue(now)
		if p.Payload%3 == 0 {
			p.ECN |= 0x80
		}
		return p, ok
	case "restamps":
		p, ok := b.FIFO.Dequeue(now)
		p.Enqueued = now
		return p, ok
	}
	return b.FIFO.Dequeue(now)
}

func (b *broken) Stats() aqm.Stats {
	s := b.FIFO.Stats()
	if b.fault == "miscounts" && s.Dequeued.Packets > 10 {
		s.Dequeued.Packets--
	}
	return s
}

func brokenFactory(fault string, cfg aqm.FIFOConfig, declared int) Factory {
	return Factory{
		New: func(_ uint64, onDrop aqm.DropFunc[Payload]) (aqm.Queue[Payload], error) {
			q, err := aqm.NewFIFO(cfg, onDrop)
			return &broken{FIFO: q, fault: fault}, err
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
	cfg := aqm.FIFOConfig{LimitPackets: 64}
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
	f := brokenFactory("none", aqm.FIFOConfig{LimitPackets: 64}, 64)
	f.Reconfigure = func(q aqm.Queue[Payload], i int) error {
		b := q.(*broken)
		fresh, err := aqm.NewFIFO[Payload](aqm.FIFOConfig{LimitPackets: 64}, nil)
		b.FIFO = fresh // everything queued is lost
		return err
	}
	err := checkReconfigure(f)
	require.Error(t, err)
	require.Contains(t, err.Error(), "Len/Backlog")
}

// TestKitPassesCorrectFIFO protects against a kit that fails everything: the
// same wrapper with no fault passes every check.
func TestKitPassesCorrectFIFO(t *testing.T) {
	failed, msgs := runChecks(brokenFactory("none", aqm.FIFOConfig{LimitPackets: 64}, 64))
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
	ops := Decode(randomBytes(7, 4*5000))
	var zero, huge, stray, back, jump, burst bool
	for _, o := range ops {
		zero = zero || (o.Kind == OpEnqueue && o.Size == 0)
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
	ops := []Op{{Kind: OpEnqueue, Count: 1 << 20, Size: 100}, {Kind: OpDequeue, Count: 1 << 20}}
	h, err := newHarness(brokenFactory("none", aqm.FIFOConfig{LimitPackets: 1 << 16}, 1<<16), 1, false)
	require.NoError(t, err)
	h.budget = 1000
	require.NoError(t, h.play(ops))
	require.Equal(t, Payload(1000), h.seq, "1000 packet operations, then the drain")
	require.Equal(t, 0, h.q.Len())
}
