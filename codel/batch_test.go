package codel

import (
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/stretchr/testify/require"
)

type dropRec struct {
	id  uint64
	why aqm.Verdict
	ecn aqm.ECN
}

// TestBatchMatchesLoopOnGrid protects the burst path where the kit's
// random traces rarely go: on a grid of whole milliseconds with 1000-byte
// packets, deadlines fall exactly on readings and backlogs exactly on the
// MTU guard, and short bursts end at those boundaries. EnqueueBatch and
// DequeueBatch give exactly the verdicts, packets, order, DropFunc calls,
// Stats and Detail of the loop of single calls.
func TestBatchMatchesLoopOnGrid(t *testing.T) {
	traces := 28
	if testing.Short() {
		traces = 7
	}
	cfgs := []Config{
		{},
		{Control: Control{DisableECN: true}},
		{LimitPackets: 50, LimitBytes: 30000, Control: Control{Target: time.Millisecond, Interval: 10 * time.Millisecond}},
		{Control: Control{CEThreshold: 500 * time.Microsecond, LinuxCount: true, StrictDeadline: true}},
		{Control: Control{Target: 1, Interval: 2, MTUBytes: 1}, LimitPackets: 4000},
		{Control: Control{StrictDeadline: true, MTUBytes: 2000, Target: 2 * time.Millisecond, Interval: 10 * time.Millisecond}},
		{Control: Control{MTUBytes: 3000, Target: 2 * time.Millisecond, Interval: 10 * time.Millisecond, DisableECN: true}},
	}
	for seed := range uint64(traces) {
		cfg := cfgs[seed%uint64(len(cfgs))]
		src := rng.New(seed + 1)
		var dropsA, dropsB []dropRec
		a, err := New(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) { dropsA = append(dropsA, dropRec{p.Payload, why, p.ECN}) })
		require.NoError(t, err)
		b, err := New(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) { dropsB = append(dropsB, dropRec{p.Payload, why, p.ECN}) })
		require.NoError(t, err)
		now := t0
		id := uint64(0)
		ps := make([]aqm.Packet[uint64], 300)
		vsA, vsB := make([]aqm.Verdict, 300), make([]aqm.Verdict, 300)
		bufA, bufB := make([]aqm.Packet[uint64], 300), make([]aqm.Packet[uint64], 300)
		for op := range 400 {
			switch r := src.Uint64() % 100; {
			case r < 2:
				now = aqm.Time(math.MaxInt64 - int64(src.Uint64()%2))
			case r < 4:
				now = aqm.Time(math.MinInt64 + int64(src.Uint64()%2))
			case r < 8:
				now = t0 + aqm.Time(op)*aqm.Time(10*time.Millisecond)
			case r < 30:
				// same instant
			default:
				now = aqm.Time(int64(now) + int64(src.Uint64()%uint64(20*time.Millisecond)))
			}
			now -= now % aqm.Time(time.Millisecond)
			n := int(src.Uint64() % 301)
			if src.Uint64()%2 == 0 {
				n %= 5 // short bursts end at the boundaries too
			}
			if src.Uint64()%2 == 0 {
				for i := range n {
					id++
					ps[i] = aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: 1000, ECN: aqm.ECN(src.Uint64() % 4)}}
				}
				m := min(n, len(vsA)-int(src.Uint64()%3)) // len(vs) may be shorter
				accA := a.EnqueueBatch(ps[:n], vsA[:m], now)
				accB := aqm.EnqueueLoop[uint64](b, ps[:n], vsB[:m], now)
				require.Equal(t, accB, accA, "seed %d op %d: accepted", seed, op)
				require.Equal(t, vsB[:m], vsA[:m], "seed %d op %d: verdicts", seed, op)
			} else {
				dropsA, dropsB = dropsA[:0], dropsB[:0]
				gotA := a.DequeueBatch(bufA[:n], now)
				gotB := aqm.DequeueLoop[uint64](b, bufB[:n], now)
				require.Equal(t, gotB, gotA, "seed %d op %d: dequeued", seed, op)
				require.Equal(t, bufB[:gotB], bufA[:gotA], "seed %d op %d: packets", seed, op)
				require.Equal(t, dropsB, dropsA, "seed %d op %d: drops", seed, op)
			}
			require.Equal(t, b.Stats(), a.Stats(), "seed %d op %d: stats", seed, op)
			require.Equal(t, b.Detail(), a.Detail(), "seed %d op %d: detail", seed, op)
		}
	}
}

// TestDetailMetrics protects Detail.Metrics: unique lower_snake names and
// values equal to the Detail's fields, and MemoryBytes equal to the ring's
// preallocation (a power of two of 32-byte packets).
func TestDetailMetrics(t *testing.T) {
	q, err := New[uint64](Config{LimitPackets: 1000, Control: Control{DisableECN: true}}, nil)
	require.NoError(t, err)
	for range 300 {
		q.Enqueue(pkt(1, 1000, aqm.NotECT), t0)
	}
	for k := 1; k <= 200; k++ {
		q.Dequeue(t0 + aqm.Time(k)*aqm.Time(time.Millisecond))
	}
	d := q.Detail()
	require.True(t, d.Dropping)
	require.Equal(t, 1024*32, d.MemoryBytes)
	got := map[string]float64{}
	for m := range d.metrics() {
		require.NotContains(t, got, m.Name, "duplicate metric")
		require.Regexp(t, `^[a-z]+(_[a-z]+)*$`, m.Name)
		got[m.Name] = m.Value
	}
	require.Equal(t, map[string]float64{
		"count": float64(d.Count), "lastcount": float64(d.LastCount), "dropping": 1,
		"ldelay_seconds": d.LastSojourn.Seconds(), "next_drop_time_seconds": time.Duration(d.DropNext).Seconds(),
		"first_above_time_seconds": time.Duration(d.FirstAbove).Seconds(), "marked_codel_packets": 0,
		"marked_ce_threshold_packets": 0, "capped_dequeues": 0, "memory_bytes": 1024 * 32,
	}, got)
	require.NotZero(t, got["count"])
	n := 0
	for range d.metrics() {
		n++
		break // stopping early must not panic
	}
	require.Equal(t, 1, n)
}

// FuzzBatch protects the burst path on fuzzer-chosen operation streams,
// huge time steps included: EnqueueBatch and DequeueBatch give exactly
// what the loop of single calls gives on a twin queue (verdicts, packets,
// drops, Stats, Detail), and never panic.
func FuzzBatch(f *testing.F) {
	f.Add(uint8(0), []byte{1, 200, 15, 3, 10, 5, 2, 0, 15, 3, 255, 40, 2, 1, 9})
	f.Add(uint8(3), []byte("\x01\xff\x0f\x03\x7f\x3e\x02\x00\x0f\x03\x80\x3e\x02\x00\x0f"))
	f.Fuzz(func(t *testing.T, knob uint8, ops []byte) {
		cfg := Config{
			LimitPackets: 3 + int(knob%62), LimitBytes: int(knob/64) * 20000,
			Control: Control{Target: time.Microsecond, Interval: 20 * time.Microsecond, DisableECN: knob&1 == 1, CEThreshold: time.Duration(knob&2) * time.Microsecond}}
		var dq, dr []dropRec
		q, err := New(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) { dq = append(dq, dropRec{p.Payload, why, p.ECN}) })
		require.NoError(t, err)
		r, err := New(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) { dr = append(dr, dropRec{p.Payload, why, p.ECN}) })
		require.NoError(t, err)
		var ps [16]aqm.Packet[uint64]
		var vq, vr [16]aqm.Verdict
		var bq, br [16]aqm.Packet[uint64]
		now := t0
		for i := 0; i+2 < len(ops); i += 3 {
			op, a, b := ops[i], ops[i+1], ops[i+2]
			switch op % 3 {
			case 0:
				n := int(b % 16)
				for j := range n {
					ps[j] = pkt(uint64(i+j), uint32(a+byte(j*37))*8, aqm.ECN(j))
				}
				if q.EnqueueBatch(ps[:n], vq[:n], now) != aqm.EnqueueLoop[uint64](r, ps[:n], vr[:n], now) || vq != vr {
					t.Fatalf("op %d: EnqueueBatch differs from the loop", i)
				}
			case 1:
				n := int(b % 16)
				dq, dr = dq[:0], dr[:0]
				if q.DequeueBatch(bq[:n], now) != aqm.DequeueLoop[uint64](r, br[:n], now) || bq != br {
					t.Fatalf("op %d: DequeueBatch differs from the loop", i)
				}
				require.Equal(t, dr, dq, "op %d: drops", i)
			case 2:
				now += aqm.Time(int64(int8(a)) << (b % 63))
			}
			if q.Stats() != r.Stats() || q.Detail() != r.Detail() {
				t.Fatalf("op %d: burst path and loop diverge: %+v / %+v", i, q.Detail(), r.Detail())
			}
		}
	})
}

// TestBatchNotDueBoundaries protects the edge of the burst path's run
// while dropping: a packet that leaves exactly MTUBytes behind it ends the
// dropping state (RFC 8289's guard is "≤ MTU"), so the run must stop there
// exactly as the loop does, for bursts ending before, at and after it.
func TestBatchNotDueBoundaries(t *testing.T) {
	for _, strict := range []bool{false, true} {
		for k := 1; k <= 12; k++ {
			cfg := Config{Control: Control{DisableECN: true, MTUBytes: 3000, StrictDeadline: strict}}
			var now aqm.Time
			mk := func() *Queue[uint64] {
				q, err := New[uint64](cfg, nil)
				require.NoError(t, err)
				for i := range 300 {
					q.Enqueue(pkt(uint64(i), 1000, aqm.NotECT), t0)
				}
				// Into the dropping state (the first drop comes at 105 ms),
				// then drain to 13 packets with the next drop not yet due.
				q.Dequeue(t0 + aqm.Time(5*time.Millisecond)) // deadline at 105 ms
				now = t0 + aqm.Time(110*time.Millisecond)
				q.Dequeue(now)
				for q.Len() > 13 {
					q.Dequeue(now)
				}
				return q
			}
			a, b := mk(), mk()
			d := a.Detail()
			require.True(t, d.Dropping)
			require.Less(t, now, d.DropNext)
			require.Equal(t, b.Detail(), d)
			bufA, bufB := make([]aqm.Packet[uint64], k), make([]aqm.Packet[uint64], k)
			require.Equal(t, aqm.DequeueLoop[uint64](b, bufB, now), a.DequeueBatch(bufA, now), "k %d", k)
			require.Equal(t, bufB, bufA, "k %d", k)
			require.Equal(t, b.Detail(), a.Detail(), "strict %v k %d", strict, k)
			require.Equal(t, b.Stats(), a.Stats(), "k %d", k)
		}
	}
}
