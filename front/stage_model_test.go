package front_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/red"
)

// event is one thing a front did with a packet, in the order it happened.
type event struct {
	kind    string // "out", "drop" (queue's DropFunc) or "refused"
	payload uint64
	why     aqm.Verdict
}

// stagedQueues are the queues the staged and unstaged fronts are compared
// over: a refusing FIFO, RED (random early drops at enqueue) and FQ-CoDel
// (fattest-flow drops at enqueue, CoDel drops at dequeue).
var stagedQueues = []struct {
	name string
	make func(onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error)
}{
	{"fifo", func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return fifo.New(fifo.Config{LimitPackets: 40}, d)
	}},
	{"red", func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return red.New(red.Config{MinThreshold: 5, MaxThreshold: 15, MaxP: 0.2, Weight: 0.05, LimitPackets: 60, Seed: 3}, d)
	}},
	{"fq-codel", func(d aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return fq.NewCoDel(fq.CoDelConfig{Flows: 16, LimitPackets: 50, Control: codel.Control{Target: time.Millisecond, Interval: 10 * time.Millisecond}, Seed: 3}, d)
	}},
}

// opReader hands out a trace's bytes, then zeros.
type opReader []byte

func (r *opReader) next() int {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return int(b)
}

// runStagedTrace plays ops against a front over queue k (staged or not) on
// one goroutine with a manual clock and returns what happened to every
// packet, in order. Each op is a few bytes: the time step, then one packet,
// a batch (sometimes bigger than the hand-over) or a look by the consumer.
func runStagedTrace(t testing.TB, k int, rate aqm.Rate, staged bool, ops []byte) []event {
	var evs []event
	onDrop := func(p aqm.Packet[uint64], v aqm.Verdict) { evs = append(evs, event{"drop", p.Payload, v}) }
	q, err := stagedQueues[k].make(onDrop)
	require.NoError(t, err)
	clk := new(clock.Manual)
	f, err := front.New(q, clk, front.Config{Rate: rate, Staged: staged})
	require.NoError(t, err)
	f.OnRefused(func(p aqm.Packet[uint64], v aqm.Verdict) { evs = append(evs, event{"refused", p.Payload, v}) })
	r := opReader(ops)
	buf := make([]aqm.Packet[uint64], 64)
	ps := make([]aqm.Packet[uint64], 300)
	vs := make([]aqm.Verdict, 300)
	seq := uint64(0)
	packet := func() aqm.Packet[uint64] {
		seq++
		b := r.next()
		return aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: uint32(64 + 6*b), Hash: uint32(b % 6)}}
	}
	for len(r) > 0 {
		clk.Advance(time.Duration(r.next()) * time.Duration(r.next()) * 10 * time.Nanosecond)
		switch op := r.next(); {
		case op < 80: // one packet
			p := packet()
			v, err := f.Enqueue(p)
			require.NoError(t, err)
			if !v.Accepted() {
				evs = append(evs, event{"refused", p.Payload, v})
			}
		case op < 160: // a batch, sometimes bigger than the hand-over
			n := 1 + op%40
			if op%8 == 0 {
				n = 100 + r.next()%200
			}
			for i := range n {
				ps[i] = packet()
			}
			_, err := f.EnqueueBatch(ps[:n], vs[:n])
			require.NoError(t, err)
			for i := range n {
				if !vs[i].Accepted() {
					evs = append(evs, event{"refused", ps[i].Payload, vs[i]})
				}
			}
		default: // the consumer looks
			n, _ := f.TryDequeueBatch(buf[:1+op%len(buf)])
			for _, p := range buf[:n] {
				evs = append(evs, event{"out", p.Payload, 0})
			}
		}
	}
	f.Close()
	f.Flush(func(p aqm.Packet[uint64], _ aqm.Verdict) { evs = append(evs, event{"out", p.Payload, 0}) })
	return evs
}

// TestStagedIsUnstaged protects the staged hand-over's promise that it
// changes where the queue's work runs, not what the queue decides: on one
// goroutine, a staged front and an ordinary one over identically seeded
// queues deliver, drop and refuse the same packets in the same order on
// random traces (single and batched arrivals at advancing instants, looks
// by the consumer, a rate on some traces, hand-overs that fill up),
// because the consumer replays the arrivals at their instants before each
// look.
func TestStagedIsUnstaged(t *testing.T) {
	for k, qt := range stagedQueues {
		for trace := range 40 {
			t.Run(fmt.Sprintf("%s/%d", qt.name, trace), func(t *testing.T) {
				rate := aqm.Rate(0)
				if trace%2 == 1 {
					rate = 10 * aqm.Mbit
				}
				rng := rand.New(rand.NewPCG(uint64(trace), 7))
				ops := make([]byte, 2000)
				for i := range ops {
					ops[i] = byte(rng.IntN(256))
				}
				want := runStagedTrace(t, k, rate, false, ops)
				require.NotEmpty(t, want)
				require.Equal(t, want, runStagedTrace(t, k, rate, true, ops))
			})
		}
	}
}

// FuzzStagedIsUnstaged is TestStagedIsUnstaged on fuzzed traces.
func FuzzStagedIsUnstaged(f *testing.F) {
	f.Add(uint8(0), false, []byte{1, 2, 3, 200, 5, 5, 100, 1, 1, 250})
	f.Add(uint8(2), true, []byte{0, 0, 8, 255, 9, 9, 170, 3, 3, 210})
	f.Fuzz(func(t *testing.T, k uint8, shaped bool, ops []byte) {
		rate := aqm.Rate(0)
		if shaped {
			rate = 10 * aqm.Mbit
		}
		i := int(k) % len(stagedQueues)
		require.Equal(t, runStagedTrace(t, i, rate, false, ops), runStagedTrace(t, i, rate, true, ops))
	})
}
