package fifo_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/stretchr/testify/require"
)

// TestFIFOConfigValidate protects the config shape: Validate names every
// bad field at once, wraps ErrInvalidConfig and never changes its receiver.
func TestFIFOConfigValidate(t *testing.T) {
	bad := fifo.Config{LimitPackets: fifo.MaxLimitPackets + 1, LimitBytes: -1, HeadDrop: true}
	before := bad
	err := bad.Validate()
	require.Equal(t, before, bad, "Validate changed its receiver")
	require.True(t, errors.Is(err, aqm.ErrInvalidConfig))
	for _, field := range []string{"LimitPackets", "LimitBytes"} {
		require.ErrorContains(t, err, "fifo: "+field+" (")
	}
	var ce *aqm.ConfigError
	require.True(t, errors.As(err, &ce))
	zero := fifo.Config{}
	require.NoError(t, zero.Validate())
	require.Equal(t, fifo.Config{}, zero, "Validate filled in defaults")

	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		c := fifo.Config{LimitPackets: int(r.Int64()) >> r.IntN(64), LimitBytes: int(r.Int64()) >> r.IntN(64), HeadDrop: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			c.LimitPackets = -c.LimitPackets
		}
		cp := c
		err := c.Validate()
		require.Equal(t, cp, c)
		wantBad := (c.LimitPackets < 0 || c.LimitPackets > fifo.MaxLimitPackets) || c.LimitBytes < 0
		require.Equal(t, wantBad, err != nil, "%+v: %v", c, err)
	}
}

// TestFIFOConfigEffective protects Config(): defaults are filled in (zero
// LimitPackets is DefaultFIFOLimitPackets, as pfifo takes txqueuelen), set
// fields are kept, and Reconfigure changes what it reports.
func TestFIFOConfigEffective(t *testing.T) {
	q, err := fifo.New[int](fifo.Config{}, nil)
	require.NoError(t, err)
	require.Equal(t, fifo.Config{LimitPackets: fifo.DefaultLimitPackets}, q.Config())
	require.Equal(t, 1000, fifo.DefaultLimitPackets)
	cfg := fifo.Config{LimitPackets: 7, LimitBytes: 9000, HeadDrop: true}
	require.NoError(t, q.Reconfigure(cfg))
	require.Equal(t, cfg, q.Config())
	require.Error(t, q.Reconfigure(fifo.Config{LimitBytes: -2}))
	require.Equal(t, cfg, q.Config(), "a rejected Reconfigure changes nothing")
	require.NoError(t, q.Reconfigure(fifo.Config{}))
	require.Equal(t, fifo.DefaultLimitPackets, q.Config().LimitPackets)
}

// TestFIFOConfigForLink protects the preset: limits from the shared sizing
// rule, tail drop, a valid config (a zero rate is internal/configcheck's
// TestConfigForLinkZeroRate).
func TestFIFOConfigForLink(t *testing.T) {
	for _, c := range []struct {
		rate aqm.Rate
		rtt  time.Duration
	}{{8 * aqm.Mbit, 100 * time.Millisecond}, {aqm.Gbit, 0}, {64 * aqm.Kbit, 10 * time.Millisecond}, {aqm.Kbit, time.Second}} {
		cfg := fifo.ConfigForLink(c.rate, c.rtt)
		require.NoError(t, cfg.Validate())
		require.Equal(t, c.rate.BufferBytes(c.rtt), cfg.LimitBytes, "%v %v", c.rate, c.rtt)
		require.Equal(t, c.rate.BufferPackets(c.rtt), cfg.LimitPackets, "%v %v", c.rate, c.rtt)
		require.False(t, cfg.HeadDrop)
	}
	cfg := fifo.ConfigForLink(8*aqm.Mbit, 100*time.Millisecond)
	require.Equal(t, fifo.Config{LimitPackets: 265, LimitBytes: 400000}, cfg) // 4 × 100 kB; ⌈400000/1514⌉
}

// TestFIFODetail protects the memory report and its metrics: the ring's
// slots (a power of two) times 32-byte packets, following Reconfigure.
func TestFIFODetail(t *testing.T) {
	q, err := fifo.New[uint64](fifo.Config{}, nil)
	require.NoError(t, err)
	require.Equal(t, 1024*32, q.Detail().MemoryBytes)
	require.NoError(t, q.Reconfigure(fifo.Config{LimitPackets: 5000}))
	require.Equal(t, 8192*32, q.Detail().MemoryBytes)
	var names []string
	for m := range q.Detail().Metrics() {
		names = append(names, m.Name)
		require.Equal(t, aqm.Gauge, m.Kind)
		require.Equal(t, float64(8192*32), m.Value)
	}
	require.Equal(t, []string{"memory_bytes"}, names)
}

// fifoModes are the FIFO configurations the burst tests cover.
var fifoModes = []fifo.Config{
	{LimitPackets: 5},
	{LimitPackets: 300},
	{LimitPackets: 100, LimitBytes: 20000},
	{LimitPackets: 8, HeadDrop: true},
	{LimitPackets: 50, LimitBytes: 10000, HeadDrop: true},
}

// TestFIFOBurstMatchesLoop protects the burst path against the loop of
// single calls on random traces with bursts of 0 to 300 packets, random
// sizes, ECN bits, time steps and reconfigurations (which the kit's Burst
// check does not do): verdicts, packets, drops, Stats after every step.
func TestFIFOBurstMatchesLoop(t *testing.T) {
	steps := 2000
	if testing.Short() {
		steps = 500
	}
	for mi, cfg := range fifoModes {
		r := rand.New(rand.NewPCG(uint64(mi), 9))
		var dropsB, dropsL []string
		b, err := fifo.New(cfg, func(p aqm.Packet[int], v aqm.Verdict) { dropsB = append(dropsB, fmt.Sprint(p, v)) })
		require.NoError(t, err)
		l, err := fifo.New(cfg, func(p aqm.Packet[int], v aqm.Verdict) { dropsL = append(dropsL, fmt.Sprint(p, v)) })
		require.NoError(t, err)
		now, seq := aqm.Time(1e9), 0
		ps := make([]aqm.Packet[int], 300)
		vb, vl := make([]aqm.Verdict, 302), make([]aqm.Verdict, 302)
		ob, ol := make([]aqm.Packet[int], 300), make([]aqm.Packet[int], 300)
		for step := range steps {
			now += aqm.Time(r.IntN(2000)) * aqm.Time(time.Microsecond)
			n := r.IntN(301)
			switch r.IntN(9) {
			case 0:
				next := fifoModes[r.IntN(len(fifoModes))]
				require.NoError(t, b.Reconfigure(next))
				require.NoError(t, l.Reconfigure(next))
			case 1, 2, 3, 4:
				for i := range n {
					seq++
					ps[i] = aqm.Packet[int]{Payload: seq, Meta: aqm.Meta{Size: uint32(r.IntN(1600)), Hash: r.Uint32(), ECN: aqm.ECN(r.IntN(256))}, Enqueued: aqm.Time(r.Int64())}
				}
				nv := n + r.IntN(3) - 1
				nv = max(nv, 0)
				clear(vb)
				clear(vl)
				ab := b.EnqueueBatch(ps[:n], vb[:nv], now)
				al := aqm.EnqueueLoop[int](l, ps[:n], vl[:nv], now)
				if ab != al || !slices.Equal(vb, vl) {
					t.Fatalf("mode %d step %d: burst accepted %d with verdicts %v, the loop %d with %v", mi, step, ab, vb[:nv], al, vl[:nv])
				}
			default:
				kb := b.DequeueBatch(ob[:n], now)
				kl := aqm.DequeueLoop[int](l, ol[:n], now)
				if kb != kl || !slices.Equal(ob[:kb], ol[:kl]) {
					t.Fatalf("mode %d step %d: burst dequeued %v, the loop %v", mi, step, ob[:kb], ol[:kl])
				}
			}
			if b.Stats() != l.Stats() || b.Detail() != l.Detail() || !slices.Equal(dropsB, dropsL) {
				t.Fatalf("mode %d step %d: burst and loop differ:\n stats %+v %+v\n detail %+v %+v\n drops %v\n       %v",
					mi, step, b.Stats(), l.Stats(), b.Detail(), l.Detail(), dropsB, dropsL)
			}
			dropsB, dropsL = dropsB[:0], dropsL[:0]
		}
	}
}

// TestFIFOBurstClearsSlots protects garbage collection: a payload that
// went in and out through the burst path, and one evicted by head drop, is
// no longer referenced by the ring, so the collector frees it.
func TestFIFOBurstClearsSlots(t *testing.T) {
	q, err := fifo.New(fifo.Config{LimitPackets: 4, HeadDrop: true}, func(aqm.Packet[*[64]byte], aqm.Verdict) {})
	require.NoError(t, err)
	var refs []weak.Pointer[[64]byte]
	vs := make([]aqm.Verdict, 3)
	out := make([]aqm.Packet[*[64]byte], 4)
	for range 3 { // wrap around the ring
		ps := make([]aqm.Packet[*[64]byte], 3)
		for i := range ps {
			ps[i].Payload = new([64]byte)
			refs = append(refs, weak.Make(ps[i].Payload))
		}
		require.Equal(t, 3, q.EnqueueBatch(ps, vs, 1))
		require.Equal(t, 3, q.DequeueBatch(out, 2))
	}
	ps := make([]aqm.Packet[*[64]byte], 6) // two evicted by head drop, four stay
	for i := range ps {
		ps[i].Payload = new([64]byte)
		refs = append(refs, weak.Make(ps[i].Payload))
	}
	require.Equal(t, 6, q.EnqueueBatch(ps, make([]aqm.Verdict, 6), 3))
	clear(out)
	clear(ps)
	runtime.GC()
	runtime.GC()
	for i, r := range refs[:11] {
		require.Nil(t, r.Value(), "payload %d still referenced after it left", i)
	}
	for i, r := range refs[11:] {
		require.NotNil(t, r.Value(), "queued payload %d was freed", 11+i)
	}
	runtime.KeepAlive(q)
}

var burstSizes = []int{1, 8, 32, 128}

// BenchmarkFIFOBurst measures the burst path: a burst of n arrivals and a
// burst of n departures per iteration, reported per packet.
func BenchmarkFIFOBurst(b *testing.B) {
	for _, n := range burstSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			q, err := fifo.New[uint64](fifo.Config{LimitPackets: 1024}, nil)
			require.NoError(b, err)
			ps, out := make([]aqm.Packet[uint64], n), make([]aqm.Packet[uint64], n)
			vs := make([]aqm.Verdict, n)
			for i := range ps {
				ps[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500, Hash: uint32(i)}}
			}
			now := aqm.Time(1)
			b.ReportAllocs()
			for b.Loop() {
				now++
				q.EnqueueBatch(ps, vs, now)
				q.DequeueBatch(out, now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
		})
	}
}

// BenchmarkFIFOSingle is BenchmarkFIFOBurst through single calls on the
// aqm.Queue interface, the baseline the burst path is measured against.
func BenchmarkFIFOSingle(b *testing.B) {
	for _, n := range burstSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f, err := fifo.New[uint64](fifo.Config{LimitPackets: 1024}, nil)
			require.NoError(b, err)
			var q aqm.Queue[uint64] = f
			ps := make([]aqm.Packet[uint64], n)
			for i := range ps {
				ps[i] = aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500, Hash: uint32(i)}}
			}
			now := aqm.Time(1)
			var sink uint64
			b.ReportAllocs()
			for b.Loop() {
				now++
				for i := range ps {
					q.Enqueue(ps[i], now)
				}
				for range n {
					p, _ := q.Dequeue(now)
					sink += p.Payload
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
			_ = sink
		})
	}
}
