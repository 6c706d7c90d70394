package cobalt

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/frame"
)

// TestBurstMatchesLoop protects the burst path: on random traces (bursts
// of 0..300 packets, random sizes and ECN, time steps including backward
// and far jumps, small limits that overflow and wrap the ring),
// EnqueueBatch and DequeueBatch give exactly what loops of Enqueue and
// Dequeue give: verdicts, counts, packets, order, DropFunc calls, Stats and
// Detail.
func TestBurstMatchesLoop(t *testing.T) {
	runs, ops := 40, 300
	if testing.Short() {
		runs, ops = 15, 150
	}
	r := rand.New(rand.NewPCG(14, 32))
	for run := range runs {
		c := Config{Seed: uint64(run + 1), LimitPackets: 2 + r.IntN(400)}
		if r.IntN(2) == 0 {
			c.LimitBytes = 2*frame.FullBytes + r.IntN(200000)
		}
		c.DisableECN = r.IntN(3) == 0
		var dropsA, dropsB []aqm.Packet[uint64]
		a, err := New(c, func(p aqm.Packet[uint64], _ aqm.Verdict) { dropsA = append(dropsA, p) })
		require.NoError(t, err)
		b, err := New(c, func(p aqm.Packet[uint64], _ aqm.Verdict) { dropsB = append(dropsB, p) })
		require.NoError(t, err)
		now := t0
		var seq uint64
		ps := make([]aqm.Packet[uint64], 300)
		va, vb := make([]aqm.Verdict, 300), make([]aqm.Verdict, 300)
		ba, bb := make([]aqm.Packet[uint64], 300), make([]aqm.Packet[uint64], 300)
		for op := range ops {
			switch x := r.IntN(100); {
			case x < 2:
				now += aqm.Time([]int64{-int64(time.Second), 1 << 62, int64(time.Hour)}[r.IntN(3)])
			default:
				now += aqm.Time(r.IntN(3000)) * aqm.Time(time.Microsecond)
			}
			n := r.IntN(301)
			if r.IntN(2) == 0 {
				ps := ps[:n]
				for i := range ps {
					seq++
					ps[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{
						Size: uint32([]int{1000, 1500, 64, 0, 9000}[r.IntN(5)]), ECN: aqm.ECN(r.IntN(8))}}
				}
				nv := n - r.IntN(2)*r.IntN(n+1) // sometimes fewer verdict slots
				ka := a.EnqueueBatch(ps, va[:nv], now)
				kb := aqm.EnqueueLoop[uint64](b, ps, vb[:nv], now)
				require.Equal(t, kb, ka, "run %d op %d", run, op)
				require.Equal(t, vb[:nv], va[:nv], "run %d op %d", run, op)
			} else {
				ka := a.DequeueBatch(ba[:n], now)
				kb := aqm.DequeueLoop[uint64](b, bb[:n], now)
				require.Equal(t, kb, ka, "run %d op %d", run, op)
				require.Equal(t, bb[:kb], ba[:ka], "run %d op %d", run, op)
			}
			require.Equal(t, b.Stats(), a.Stats(), "run %d op %d", run, op)
			require.Equal(t, b.Detail(), a.Detail(), "run %d op %d", run, op)
			require.Equal(t, dropsB, dropsA, "run %d op %d", run, op)
		}
	}
}

// BenchmarkBurst measures the burst path per packet: each iteration offers
// a burst of n packets with EnqueueBatch and, once 100 packets stand, takes
// n back with DequeueBatch, at one time for the burst. "standing" keeps the
// sojourn time below target (no signal); "congested" keeps it far above (the
// drop path runs). The ns/pkt metric is the figure to compare.
func BenchmarkBurst(b *testing.B) {
	for _, sc := range []struct {
		name string
		step time.Duration // time per packet
	}{{"standing", 10 * time.Microsecond}, {"congested", time.Millisecond}} {
		for _, n := range []int{1, 8, 32, 128} {
			b.Run(sc.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				q, err := New[uint64](Config{Seed: 1, LimitPackets: 10000}, nil)
				if err != nil {
					b.Fatal(err)
				}
				ps := make([]aqm.Packet[uint64], n)
				vs := make([]aqm.Verdict, n)
				out := make([]aqm.Packet[uint64], n)
				for i := range ps {
					ps[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500}}
				}
				now := t0
				step := aqm.Time(n) * aqm.Time(sc.step)
				burst := func() {
					now += step
					q.EnqueueBatch(ps, vs, now)
					if k := q.Len() - 100; k > 0 {
						q.DequeueBatch(out[:min(k, n)], now)
					}
				}
				for range 20000 / n { // warm up: the controller reaches its state
					burst()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					burst()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
			})
		}
	}
}
