package front_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/front"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/red"
)

// event is one thing a front did with a packet, in the order it happened.
type event struct {
	kind    string // "out", "drop" (queue's DropFunc) or "refused"
	payload uint64
	why     aqm.Verdict
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
	queues := []struct {
		name string
		make func(onDrop aqm.DropFunc[uint64]) aqm.Queue[uint64]
	}{
		{"fifo", func(d aqm.DropFunc[uint64]) aqm.Queue[uint64] {
			q, err := aqm.NewFIFO(aqm.FIFOConfig{LimitPackets: 40}, d)
			require.NoError(t, err)
			return q
		}},
		{"red", func(d aqm.DropFunc[uint64]) aqm.Queue[uint64] {
			q, err := red.New(red.Config{MinThreshold: 5, MaxThreshold: 15, MaxP: 0.2, Weight: 0.05, LimitPackets: 60, Seed: 3}, d)
			require.NoError(t, err)
			return q
		}},
		{"fq-codel", func(d aqm.DropFunc[uint64]) aqm.Queue[uint64] {
			q, err := fq.NewCoDel(fq.CoDelConfig{Flows: 16, LimitPackets: 50, Target: time.Millisecond, Interval: 10 * time.Millisecond, Seed: 3}, d)
			require.NoError(t, err)
			return q
		}},
	}
	for _, qt := range queues {
		for trace := range 40 {
			t.Run(fmt.Sprintf("%s/%d", qt.name, trace), func(t *testing.T) {
				rate := aqm.Rate(0)
				if trace%2 == 1 {
					rate = 10 * aqm.Mbit
				}
				var got [2][]event
				run := func(staged bool) []event {
					var evs []event
					onDrop := func(p aqm.Packet[uint64], v aqm.Verdict) { evs = append(evs, event{"drop", p.Payload, v}) }
					clk := new(clock.Manual)
					f, err := front.New(qt.make(onDrop), clk, front.Config{Rate: rate, Staged: staged})
					require.NoError(t, err)
					f.OnRefused(func(p aqm.Packet[uint64], v aqm.Verdict) { evs = append(evs, event{"refused", p.Payload, v}) })
					rng := rand.New(rand.NewPCG(uint64(trace), 7))
					buf := make([]aqm.Packet[uint64], 64)
					ps := make([]aqm.Packet[uint64], 300)
					vs := make([]aqm.Verdict, 300)
					seq := uint64(0)
					for range 400 {
						clk.Advance(time.Duration(rng.IntN(400)) * time.Microsecond)
						switch op := rng.IntN(10); {
						case op < 3: // one packet
							seq++
							p := aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: uint32(64 + rng.IntN(1400)), Hash: uint32(rng.IntN(6))}}
							v, err := f.Enqueue(p)
							require.NoError(t, err)
							if !v.Accepted() {
								evs = append(evs, event{"refused", p.Payload, v})
							}
						case op < 6: // a batch, sometimes bigger than the hand-over
							n := 1 + rng.IntN(40)
							if rng.IntN(8) == 0 {
								n = 100 + rng.IntN(200)
							}
							for i := range n {
								seq++
								ps[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: uint32(64 + rng.IntN(1400)), Hash: uint32(rng.IntN(6))}}
							}
							_, err := f.EnqueueBatch(ps[:n], vs[:n])
							require.NoError(t, err)
							for i := range n {
								if !vs[i].Accepted() {
									evs = append(evs, event{"refused", ps[i].Payload, vs[i]})
								}
							}
						default: // the consumer looks
							n, _ := f.TryDequeueBatch(buf[:1+rng.IntN(len(buf))])
							for _, p := range buf[:n] {
								evs = append(evs, event{"out", p.Payload, 0})
							}
						}
					}
					f.Close()
					f.Flush(func(p aqm.Packet[uint64], v aqm.Verdict) { evs = append(evs, event{"out", p.Payload, 0}) })
					return evs
				}
				got[0], got[1] = run(false), run(true)
				require.NotEmpty(t, got[0])
				require.Equal(t, got[0], got[1])
			})
		}
	}
}
