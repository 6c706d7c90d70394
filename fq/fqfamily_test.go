package fq

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/internal/rng"
	"github.com/aqmkit/aqmkit/pie"
	"github.com/stretchr/testify/require"
)

// fqQueue is what the tests below need of FQ-COBALT and FQ-PIE.
type fqQueue interface {
	aqm.BatchQueue[uint64]
	Len() int
}

// requireNamesAll checks that err wraps aqm.ErrInvalidConfig and names
// every field, and that validation left cfg unchanged.
func requireNamesAll(t *testing.T, err error, fields []string) {
	t.Helper()
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	for _, f := range fields {
		require.Contains(t, err.Error(), "fq: "+f+" ", "the error must name %s", f)
	}
}

// TestCobaltConfigValidate protects FQ-COBALT's config checks: a Config
// with every field bad names each of them, Validate does not change its
// receiver, and Config reports every default and the seed in use.
func TestCobaltConfigValidate(t *testing.T) {
	bad := CobaltConfig{Flows: -1, LimitPackets: 1 << 25, MemoryLimitBytes: -1, QuantumBytes: 10, DropBatchPackets: -2,
		Control: cobalt.Control{Target: 2 * time.Hour, Interval: 2 * time.Hour, MTUTime: -1, BlueIncrement: 2, BlueDecrement: math.NaN(), BlueThreshold: -1}}
	cp := bad
	err := bad.Validate()
	requireNamesAll(t, err, []string{"Flows", "LimitPackets", "MemoryLimitBytes", "QuantumBytes", "DropBatchPackets",
		"Target", "Interval", "MTUTime", "BlueIncrement", "BlueDecrement", "BlueThreshold"})
	require.True(t, reflect.DeepEqual(cp.Flows, bad.Flows) && cp.Target == bad.Target && cp.BlueIncrement == bad.BlueIncrement)
	_, err = NewCobalt[uint64](bad, nil)
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	require.Error(t, CobaltConfig{Control: cobalt.Control{Target: 10 * time.Millisecond, Interval: 5 * time.Millisecond}}.Validate(), "Target above Interval")

	q, err := NewCobalt[uint64](CobaltConfig{Seed: 9}, nil)
	require.NoError(t, err)
	require.Equal(t, CobaltConfig{Flows: 1024, LimitPackets: 10240, MemoryLimitBytes: 32 << 20, QuantumBytes: 1514,
		DropBatchPackets: 64, Control: cobalt.Control{Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond, BlueIncrement: 1.0 / 256, BlueDecrement: 1.0 / 4096, BlueThreshold: 400 * time.Millisecond}, Seed: 9}, q.Config())
	require.NoError(t, q.Config().Validate())
}

// TestPIEConfigValidate protects FQ-PIE's config checks: a Config with
// every field bad names each of them, Validate does not change its
// receiver, and Config reports every default and the seed in use.
func TestPIEConfigValidate(t *testing.T) {
	bad := PIEConfig{Flows: 70000, LimitPackets: -1, MemoryLimitBytes: 1 << 32, QuantumBytes: 1 << 21, DropBatchPackets: 1 << 17,
		Control: pie.Control{Target: -1, TUpdate: time.Minute, Alpha: -1, Beta: 100, MaxBurst: -1, MeanPacketBytes: 1 << 17, ECNThreshold: 2, DequeueThresholdBytes: -1}}
	cp := bad
	err := bad.Validate()
	requireNamesAll(t, err, []string{"Flows", "LimitPackets", "MemoryLimitBytes", "QuantumBytes", "DropBatchPackets",
		"Target", "TUpdate", "Alpha", "Beta", "MaxBurst", "MeanPacketBytes", "ECNThreshold", "DequeueThresholdBytes"})
	require.Equal(t, cp, bad)
	_, err = NewPIE[uint64](bad, nil)
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)

	q, err := NewPIE[uint64](PIEConfig{Seed: 9}, nil)
	require.NoError(t, err)
	require.Equal(t, PIEConfig{Flows: 1024, LimitPackets: 10240, MemoryLimitBytes: 32 << 20, QuantumBytes: 1514,
		DropBatchPackets: 64, Control: pie.Control{Target: 15 * time.Millisecond, TUpdate: 15 * time.Millisecond, Alpha: 0.125, Beta: 1.25, MaxBurst: 150 * time.Millisecond, MeanPacketBytes: 1500, ECNThreshold: 0.1, DequeueThresholdBytes: 1 << 14}, Seed: 9}, q.Config())
	require.NoError(t, q.Config().Validate())
}

// TestFQFamilyConfigForLink protects the presets: the limits are four
// round trips at the rate, FQ-COBALT also sets its MTU-time guard, and the
// rest is the default.
func TestFQFamilyConfigForLink(t *testing.T) {
	c := CobaltConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	require.Equal(t, CobaltConfig{LimitPackets: 265, MemoryLimitBytes: 400000, Control: cobalt.Control{MTUTime: 1514 * time.Microsecond}}, c)
	require.NoError(t, c.Validate())
	p := PIEConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	require.Equal(t, PIEConfig{LimitPackets: 265, MemoryLimitBytes: 400000}, p)
	require.NoError(t, p.Validate())
	require.Equal(t, p, PIEConfigForLink(8*aqm.Mbit, 0), "zero RTT is 100 ms")
}

// TestFQFamilySeed protects keying: zero-seed queues draw different keys
// (and so map flows differently), equal seeds map identically, and a
// Reconfigure with Seed 0 keeps the key.
func TestFQFamilySeed(t *testing.T) {
	buckets := func(bucket func(uint32) uint32) []uint32 {
		out := make([]uint32, 64)
		for i := range out {
			out[i] = bucket(uint32(i) * 0x9e3779b1)
		}
		return out
	}
	a, _ := NewCobalt[uint64](CobaltConfig{}, nil)
	b, _ := NewCobalt[uint64](CobaltConfig{}, nil)
	require.NotEqual(t, a.Config().Seed, b.Config().Seed)
	require.NotEqual(t, buckets(a.bucket), buckets(b.bucket))
	c, _ := NewCobalt[uint64](CobaltConfig{Seed: 5}, nil)
	d, _ := NewCobalt[uint64](CobaltConfig{Seed: 5}, nil)
	require.Equal(t, buckets(c.bucket), buckets(d.bucket))
	before := buckets(a.bucket)
	require.NoError(t, a.Reconfigure(CobaltConfig{QuantumBytes: 300}))
	require.Equal(t, before, buckets(a.bucket))

	e, _ := NewPIE[uint64](PIEConfig{}, nil)
	f, _ := NewPIE[uint64](PIEConfig{}, nil)
	require.NotEqual(t, e.Config().Seed, f.Config().Seed)
	require.NotEqual(t, buckets(e.bucket), buckets(f.bucket))
	g, _ := NewPIE[uint64](PIEConfig{Seed: 5}, nil)
	h, _ := NewPIE[uint64](PIEConfig{Seed: 5}, nil)
	require.Equal(t, buckets(g.bucket), buckets(h.bucket))
	before = buckets(e.bucket)
	require.NoError(t, e.Reconfigure(PIEConfig{QuantumBytes: 300}))
	require.Equal(t, before, buckets(e.bucket))
	require.Equal(t, 300, e.Config().QuantumBytes)
}

// fqTrace drives a and b (identically seeded) with the same random trace,
// a through its burst methods and b through the single-packet loop, and
// requires the same verdicts, packets, drops, Stats and Detail.
func fqTrace(t *testing.T, a, b fqQueue, da, db *[]aqm.Packet[uint64], detail func(q fqQueue) any, seed uint64) {
	t.Helper()
	src := rng.New(seed)
	now := aqm.Time(time.Second)
	var seq uint64
	ps := make([]aqm.Packet[uint64], 300)
	va, vb := make([]aqm.Verdict, 300), make([]aqm.Verdict, 300)
	oa, ob := make([]aqm.Packet[uint64], 300), make([]aqm.Packet[uint64], 300)
	for range 200 {
		now += aqm.Time(src.Uint64() % uint64(3*time.Millisecond))
		n := int(src.Uint64() % 301)
		if src.Uint64()%2 == 0 {
			for i := range n {
				seq++
				ps[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: uint32(40 + src.Uint64()%1500),
					Hash: uint32(src.Uint64() % 24), ECN: aqm.ECN(src.Uint64() % 4)}}
			}
			require.Equal(t, aqm.EnqueueLoop[uint64](b, ps[:n], vb[:n], now), a.EnqueueBatch(ps[:n], va[:n], now))
			require.Equal(t, vb[:n], va[:n])
		} else {
			ka, kb := a.DequeueBatch(oa[:n], now), aqm.DequeueLoop[uint64](b, ob[:n], now)
			require.Equal(t, kb, ka)
			require.Equal(t, ob[:kb], oa[:ka])
		}
		require.Equal(t, *db, *da)
		require.Equal(t, b.Stats(), a.Stats())
		require.Equal(t, detail(b), detail(a))
	}
}

// TestFQFamilyBurstMatchesLoop protects the burst path of FQ-COBALT and
// FQ-PIE: EnqueueBatch and DequeueBatch give exactly the outcome of the
// loop of single calls on random traces with drops, marks and overload.
func TestFQFamilyBurstMatchesLoop(t *testing.T) {
	for s := range uint64(3) {
		var da, db []aqm.Packet[uint64]
		rec := func(d *[]aqm.Packet[uint64]) aqm.DropFunc[uint64] {
			return func(p aqm.Packet[uint64], _ aqm.Verdict) { *d = append(*d, p) }
		}
		cc := CobaltConfig{Flows: 16, LimitPackets: 200, MemoryLimitBytes: 150000, Control: cobalt.Control{Target: 100 * time.Microsecond, Interval: 2 * time.Millisecond, BlueThreshold: 5 * time.Millisecond},
			Seed: s + 1}
		a, _ := NewCobalt(cc, rec(&da))
		b, _ := NewCobalt(cc, rec(&db))
		fqTrace(t, a, b, &da, &db, func(q fqQueue) any { return q.(*Cobalt[uint64]).Detail() }, s)
		da, db = nil, nil
		pc := PIEConfig{Flows: 16, LimitPackets: 200, MemoryLimitBytes: 150000, Control: pie.Control{Target: 200 * time.Microsecond, TUpdate: time.Millisecond, MaxBurst: 2 * time.Millisecond},
			Seed: s + 1}
		c, _ := NewPIE(pc, rec(&da))
		d, _ := NewPIE(pc, rec(&db))
		fqTrace(t, c, d, &da, &db, func(q fqQueue) any { return q.(*PIE[uint64]).Detail() }, s)
	}
}

// lightAfterGlitch returns how many of 1000 packets, one every 10 ms, q
// delivers after one operation at a far-future time and a second of light
// traffic to recover.
func lightAfterGlitch(q fqQueue, glitch func(now aqm.Time)) int {
	now := aqm.Time(time.Second)
	for i := range 50 { // a standing backlog in a few flows, then drained
		q.Enqueue(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500, Hash: uint32(i % 3)}}, now)
	}
	glitch(now)
	for {
		if _, ok := q.Dequeue(now); !ok {
			break
		}
	}
	got := 0
	for i := range 1100 { // the first 100 are the recovery allowance
		now += aqm.Time(10 * time.Millisecond)
		q.Enqueue(aqm.Packet[uint64]{Payload: uint64(1000 + i), Meta: aqm.Meta{Size: 1500, Hash: uint32(i % 3)}}, now)
		if _, ok := q.Dequeue(now + aqm.Time(time.Millisecond)); ok && i >= 100 {
			got++
		}
	}
	return got
}

// TestFQFamilyFarFutureReading protects the time policy: after one
// Dequeue or Enqueue at now+2^62 (or at MaxInt64), light traffic is
// delivered in full, as on a fresh queue, once a second has passed.
func TestFQFamilyFarFutureReading(t *testing.T) {
	far := []aqm.Time{aqm.Time(time.Second) + 1<<62, math.MaxInt64}
	for _, at := range far {
		for _, deq := range []bool{true, false} {
			glitch := func(q fqQueue) func(aqm.Time) {
				return func(aqm.Time) {
					if deq {
						q.Dequeue(at)
					} else {
						q.Enqueue(aqm.Packet[uint64]{Payload: 999, Meta: aqm.Meta{Size: 1500, Hash: 1}}, at)
					}
				}
			}
			c, _ := NewCobalt[uint64](CobaltConfig{Seed: 3}, nil)
			require.Equal(t, 1000, lightAfterGlitch(c, glitch(c)), "fq-cobalt, at %d, dequeue %v", at, deq)
			p, _ := NewPIE[uint64](PIEConfig{Seed: 3}, nil)
			require.Equal(t, 1000, lightAfterGlitch(p, glitch(p)), "fq-pie, at %d, dequeue %v", at, deq)
		}
	}
}

// metricsMatch checks that ms has unique names, each with the value want
// gives it, and no name want lacks.
func metricsMatch(t *testing.T, ms func(func(aqm.Metric) bool), want map[string]float64) {
	t.Helper()
	got := map[string]float64{}
	for m := range ms {
		_, dup := got[m.Name]
		require.False(t, dup, m.Name)
		got[m.Name] = m.Value
		if m.Name == "new_flows" || m.Name == "old_flows" || m.Name == "flood_guard_queue_packets" || strings.HasSuffix(m.Name, "_bytes") {
			require.Equal(t, aqm.Gauge, m.Kind, m.Name)
		} else {
			require.Equal(t, aqm.Counter, m.Kind, m.Name)
		}
	}
	require.Equal(t, want, got)
}

// TestFQFamilyDetailMetrics protects the Metrics of both Details: unique
// tc-like names whose values are the Detail's fields, and a MemoryBytes
// that covers the flow table and the packet nodes.
func TestFQFamilyDetailMetrics(t *testing.T) {
	c, _ := NewCobalt[uint64](CobaltConfig{Seed: 1, Flows: 16, LimitPackets: 8}, nil)
	p, _ := NewPIE[uint64](PIEConfig{Seed: 1, Flows: 16, LimitPackets: 8}, nil)
	for i := range 20 {
		c.Enqueue(cpkt(uint64(i), 100+uint32(i), uint32(i%3)), ct0)
		p.Enqueue(cpkt(uint64(i), 100+uint32(i), uint32(i%3)), ct0)
	}
	c.Dequeue(ct0)
	p.Dequeue(ct0)
	d := c.Detail()
	require.NotZero(t, d.EvictedOverlimit)
	metricsMatch(t, d.metrics(), map[string]float64{
		"evicted_overlimit_packets": float64(d.EvictedOverlimit), "evicted_overmemory_packets": float64(d.EvictedOvermemory),
		"diverted_flood_guard_packets": float64(d.GuardDiverted), "dropped_flood_guard_packets": float64(d.GuardDropped),
		"promoted_flood_guard_flows": float64(d.GuardPromoted), "flood_guard_queue_packets": float64(d.GuardQueueLen),
		"activated_flows": float64(d.NewFlowCount), "dropped_codel_packets": float64(d.DroppedCoDel),
		"dropped_blue_packets": float64(d.DroppedBlue), "capped_dequeues": float64(d.CappedDequeues),
		"new_flows": float64(d.NewFlowsLen), "old_flows": float64(d.OldFlowsLen),
		"max_flow_backlog_bytes": float64(d.MaxFlowBacklog), "memory_bytes": float64(d.MemoryBytes),
	})
	require.GreaterOrEqual(t, d.MemoryBytes, 16*56+9*32)
	e := p.Detail()
	require.NotZero(t, e.EvictedOverlimit)
	metricsMatch(t, e.metrics(), map[string]float64{
		"evicted_overlimit_packets": float64(e.EvictedOverlimit), "evicted_overmemory_packets": float64(e.EvictedOvermemory),
		"diverted_flood_guard_packets": float64(e.GuardDiverted), "dropped_flood_guard_packets": float64(e.GuardDropped),
		"promoted_flood_guard_flows": float64(e.GuardPromoted), "flood_guard_queue_packets": float64(e.GuardQueueLen),
		"activated_flows": float64(e.NewFlowCount), "new_flows": float64(e.NewFlowsLen), "old_flows": float64(e.OldFlowsLen),
		"max_flow_backlog_bytes": float64(e.MaxFlowBacklog), "memory_bytes": float64(e.MemoryBytes),
	})
	require.GreaterOrEqual(t, e.MemoryBytes, 16*100+9*32)
}

// TestFQFamilyZeroAllocs protects the no-allocation promise of FQ-COBALT
// and FQ-PIE on every packet path: accept, AQM drops and marks, overload
// drops, and the burst methods.
func TestFQFamilyZeroAllocs(t *testing.T) {
	c, _ := NewCobalt[uint64](CobaltConfig{Seed: 1, Flows: 64, LimitPackets: 64, Control: cobalt.Control{Target: time.Microsecond, Interval: 10 * time.Microsecond, BlueThreshold: 50 * time.Microsecond}}, func(aqm.Packet[uint64], aqm.Verdict) {})
	p, _ := NewPIE[uint64](PIEConfig{Seed: 1, Flows: 64, LimitPackets: 64, Control: pie.Control{Target: time.Microsecond, TUpdate: 10 * time.Microsecond, DisableBurstAllowance: true, MeanPacketBytes: 1, Alpha: 16, Beta: 16}}, func(aqm.Packet[uint64], aqm.Verdict) {})
	for _, q := range []fqQueue{c, p} {
		now := ct0
		ps := make([]aqm.Packet[uint64], 32)
		vs := make([]aqm.Verdict, 32)
		i := uint64(0)
		allocs := testing.AllocsPerRun(500, func() {
			for k := range 3 {
				i++
				q.Enqueue(aqm.Packet[uint64]{Payload: i, Meta: aqm.Meta{Size: 1000, Hash: uint32(i % 7), ECN: aqm.ECN(i % 3)}}, now)
				now += aqm.Time(k * 3000)
			}
			q.Dequeue(now)
			for j := range ps {
				ps[j] = aqm.Packet[uint64]{Payload: i, Meta: aqm.Meta{Size: 200, Hash: uint32(j % 5)}}
			}
			q.EnqueueBatch(ps, vs, now)
			q.DequeueBatch(ps[:20], now)
		})
		require.Zero(t, allocs)
	}
	require.NotZero(t, c.Detail().EvictedOverlimit+c.Detail().DroppedCoDel)
	require.NotZero(t, p.Stats().DroppedEarly.Packets+p.Stats().DroppedOverload.Packets+p.Stats().Marked.Packets)
}
