package pie

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestControllerMatchesQueue protects Controller's promise to run exactly the
// algorithm of Queue: a FIFO driven through Controller.Update, Decide and
// Dequeued (the way a flow-queueing scheduler embeds it) gives the same
// verdicts, probability and burst allowance as a Queue with the same seed,
// with and without the rate estimator, derandomization and byte mode.
func TestControllerMatchesQueue(t *testing.T) {
	for tr := range 12 {
		g := rand.New(rand.NewPCG(uint64(tr), 16))
		cfg := Config{Control: Control{Target: 5 * time.Millisecond, TUpdate: 4 * time.Millisecond, MaxBurst: time.Duration(g.IntN(30)) * time.Millisecond, Alpha: 2, Beta: 8, RateEstimator: tr%3 == 1, DequeueThresholdBytes: 3000, Derandomize: tr%4 == 2, ByteMode: tr%5 == 3, DisableECN: tr%2 == 0}, LimitPackets: 100000, Seed: uint64(tr + 1)}
		q, err := New[uint64](cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		fp := cfg.Params()
		var f Controller
		f.Init(&fp, cfg.Seed)
		var fifo []aqm.Packet[uint64]
		backlog := 0
		update := func(now aqm.Time) {
			var head aqm.Time
			if len(fifo) > 0 {
				head = fifo[0].Enqueued
			}
			f.Update(&fp, now, len(fifo) == 0, head, backlog)
		}
		now := aqm.Time(time.Second)
		signals := 0
		for step := range 6000 {
			now += aqm.Time(g.IntN(int(900 * time.Microsecond)))
			if g.IntN(500) == 0 {
				now += aqm.Time(g.IntN(2000)) * aqm.Time(time.Millisecond)
			}
			if g.IntN(100) < 60 {
				p := aqm.Packet[uint64]{Payload: uint64(step), Meta: aqm.Meta{Size: uint32(64 + g.IntN(1437)), ECN: aqm.ECN(g.IntN(4))}}
				want := q.Enqueue(p, now)
				update(now)
				got := f.Decide(&fp, now, p.Size, backlog, p.ECN)
				if got != want {
					t.Fatalf("trace %d step %d: Controller %v, Queue %v", tr, step, got, want)
				}
				if got.Accepted() {
					p.Enqueued = now
					fifo = append(fifo, p)
					backlog += int(p.Size)
				}
				if got != aqm.Enqueued {
					signals++
				}
			} else {
				_, ok := q.Dequeue(now)
				update(now)
				if ok != (len(fifo) > 0) {
					t.Fatalf("trace %d step %d: Queue dequeue %v with %d queued in the model", tr, step, ok, len(fifo))
				}
				if ok {
					f.Dequeued(&fp, now, fifo[0].Size, backlog)
					backlog -= int(fifo[0].Size)
					fifo = fifo[1:]
				}
			}
			d, s := q.Detail(), f.State()
			if d.Prob != s.Prob || d.BurstAllowance != s.BurstAllowance || d.Updates != s.Updates {
				t.Fatalf("trace %d step %d: Controller %+v, Queue %+v", tr, step, s, d)
			}
		}
		if signals == 0 {
			t.Fatalf("trace %d: no signal, the trace is too gentle", tr)
		}
	}
}
