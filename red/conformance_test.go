package red

import (
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/stretchr/testify/require"
)

// variants are the configurations the conformance kit and the fuzzers run:
// each variant in packet and byte mode, with ordinary and small limits.
var variants = []struct {
	name string
	cfg  Config
}{
	{"red", Config{MinThreshold: 5, MaxThreshold: 15, LimitPackets: 50}},
	{"red/ecn-nohard", Config{MinThreshold: 5, MaxThreshold: 15, LimitPackets: 50, DisableHardDrop: true}},
	{"red/bytes", Config{ByteMode: true, MinThreshold: 5000, MaxThreshold: 15000, LimitPackets: 50, LimitBytes: 40000}},
	{"gentle", Config{Gentle: true, MinThreshold: 5, MaxThreshold: 15, LimitPackets: 50, LimitBytes: 30000}},
	{"gentle/bytes", Config{Gentle: true, ByteMode: true, MinThreshold: 3000, MaxThreshold: 9000, LimitBytes: 20000}},
	{"ared", Config{Gentle: true, Adaptive: true, MinThreshold: 5, MaxThreshold: 15, LimitPackets: 40,
		AdaptInterval: 10 * time.Millisecond}},
	{"ared/bytes", Config{Gentle: true, Adaptive: true, ByteMode: true, LimitPackets: 64}},
	{"red/small", Config{MinThreshold: 1, MaxThreshold: 2, LimitPackets: 2, Weight: 1, MaxP: 1}},
	{"gentle/small-bytes", Config{Gentle: true, ByteMode: true, MinThreshold: 100, MaxThreshold: 1500,
		LimitPackets: 3, LimitBytes: 1500, MeanPacketBytes: 500, Weight: 0.5}},
	{"ared/small", Config{Gentle: true, Adaptive: true, MinThreshold: 1, MaxThreshold: 3, LimitPackets: 3,
		Weight: 0.5, DisableECN: true}},
	{"red/wait", Config{Wait: true, MinThreshold: 5, MaxThreshold: 15, LimitPackets: 50}},
	{"gentle/wait/bytes", Config{Wait: true, Gentle: true, ByteMode: true, MinThreshold: 3000, MaxThreshold: 9000, LimitBytes: 20000}},
	{"ared/wait/small", Config{Wait: true, Gentle: true, Adaptive: true, MinThreshold: 1, MaxThreshold: 3, LimitPackets: 3,
		Weight: 0.5, MaxP: 0.5}},
}

// variantsWide are more configurations for the kit's burst and random-trace
// checks: heavy weights and probabilities, and limits far above the
// thresholds, so that long bursts stay in the band.
var variantsWide = []struct {
	name string
	cfg  Config
}{
	{"red/heavy", Config{MinThreshold: 5, MaxThreshold: 150, Weight: 0.2, MaxP: 0.5, LimitPackets: 600}},
	{"gentle/heavy/noecn", Config{Gentle: true, DisableECN: true, MinThreshold: 3, MaxThreshold: 9, Weight: 0.05, MaxP: 1,
		LimitPackets: 400}},
	{"ared/heavy/bytes", Config{Gentle: true, Adaptive: true, ByteMode: true, MinThreshold: 2000, MaxThreshold: 20000,
		Weight: 0.2, LimitPackets: 300, LimitBytes: 200000, AdaptInterval: time.Millisecond}},
	{"red/wait/bytes/heavy", Config{Wait: true, ByteMode: true, MinThreshold: 5000, MaxThreshold: 150000, Weight: 0.2,
		MaxP: 0.5, LimitPackets: 500}},
}

// factory adapts c to the conformance kit. Its Reconfigure cycles through
// the variants of c's mode: Gentle, Adaptive, Wait and ECN switched, a new
// seed or the same stream, and back to c; the limits stay c's.
func factory(t testing.TB, c Config) aqmtest.Factory {
	require.NoError(t, c.Validate())
	v := filled(c)
	return aqmtest.Factory{
		New: func(seed uint64, onDrop aqm.DropFunc[aqmtest.Payload]) (aqm.Queue[aqmtest.Payload], error) {
			c := c
			c.Seed = seed
			return New(c, onDrop)
		},
		LimitPackets: v.LimitPackets,
		LimitBytes:   int(v.LimitBytes),
		Reconfigure: func(q aqm.Queue[aqmtest.Payload], i int) error {
			next := c
			next.Seed = uint64(i % 2)
			switch i % 5 {
			case 1:
				next.Gentle = !c.Gentle
			case 2:
				next.Adaptive, next.Gentle = !c.Adaptive, true
				if next.Adaptive && next.MaxP != 0 {
					next.MaxP = min(max(next.MaxP, minAdaptiveMaxP), maxAdaptiveMaxP)
				}
			case 3:
				next.Wait, next.DisableECN = !c.Wait, !c.DisableECN
			}
			return q.(*Queue[aqmtest.Payload]).Reconfigure(next)
		},
	}
}

// modeCycle is a factory whose Reconfigure crosses modes and limits: packet
// and byte mode, RED, Gentle and Adaptive RED, Wait, limits from 8 to 64
// packets.
func modeCycle(t testing.TB) aqmtest.Factory {
	cycle := []Config{
		{MinThreshold: 5, MaxThreshold: 15, LimitPackets: 50},
		{Gentle: true, MinThreshold: 2, MaxThreshold: 6, LimitPackets: 8},
		{Gentle: true, Adaptive: true, MinThreshold: 5, MaxThreshold: 15, LimitPackets: 64, AdaptInterval: 10 * time.Millisecond},
		{ByteMode: true, MinThreshold: 3000, MaxThreshold: 9000, LimitPackets: 64, LimitBytes: 40000},
		{Wait: true, Gentle: true, MinThreshold: 2, MaxThreshold: 6, LimitPackets: 16, MaxP: 0.5},
		{Wait: true, ByteMode: true, MinThreshold: 3000, MaxThreshold: 9000, LimitPackets: 64, LimitBytes: 40000},
	}
	f := factory(t, cycle[0])
	f.LimitPackets, f.LimitBytes = 64, 0 // the largest packet limit in the cycle; byte limits vary
	f.Reconfigure = func(q aqm.Queue[aqmtest.Payload], i int) error {
		return q.(*Queue[aqmtest.Payload]).Reconfigure(cycle[i%len(cycle)])
	}
	return f
}

// TestConformance protects the aqm.Queue contract (conservation, limits,
// ECN rules, FIFO order, odd input, determinism, bursts, allocations,
// Reconfigure under traffic) for every variant and mode, and Reconfigure
// across modes (mode-cycle).
func TestConformance(t *testing.T) {
	for _, v := range append(variants[:len(variants):len(variants)], variantsWide...) {
		t.Run(v.name, func(t *testing.T) { aqmtest.Run(t, factory(t, v.cfg)) })
	}
	t.Run("mode-cycle", func(t *testing.T) { aqmtest.Run(t, modeCycle(t)) })
}

// FuzzQueue protects the contract under fuzzed operation sequences (the
// kit's driver), on Gentle RED in byte mode with small limits (variant gentle/small-bytes).
func FuzzQueue(f *testing.F) {
	aqmtest.Fuzz(f, factory(f, variants[8].cfg))
}

// FuzzConfig protects New and the hot path against random configurations
// and operation sequences: New either fails cleanly or the queue never
// panics, respects its limits and counters, and keeps the average finite
// and non-negative and max_p in range.
func FuzzConfig(f *testing.F) {
	f.Add(uint16(5), uint16(15), uint8(2), uint8(7), uint8(0b111), uint64(1), []byte{0, 1, 2, 3, 200, 255, 9})
	f.Add(uint16(0), uint16(0), uint8(0), uint8(0), uint8(0), uint64(0), []byte{0xff, 0x80, 0x01})
	f.Add(uint16(1), uint16(2), uint8(255), uint8(255), uint8(0b11111), uint64(7), []byte{1, 1, 1, 1, 0, 0, 0, 0})
	f.Add(uint16(2), uint16(9), uint8(40), uint8(128), uint8(0b100011), uint64(3), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 200})
	f.Fuzz(func(t *testing.T, minTh, maxTh uint16, maxP, w, flags uint8, seed uint64, ops []byte) {
		c := Config{
			MinThreshold: int(minTh), MaxThreshold: int(maxTh),
			MaxP: float64(maxP) / 255, Weight: float64(w) / 255,
			ByteMode: flags&1 != 0, Gentle: flags&2 != 0, Adaptive: flags&4 != 0,
			DisableECN: flags&8 != 0, DisableHardDrop: flags&16 != 0, Wait: flags&32 != 0,
			LimitPackets: int(seed % 300), LimitBytes: int(seed>>8) % 500_000,
			LinkRate: aqm.Rate(seed>>20)%1_000_000_000 + 1, AdaptInterval: time.Duration(seed>>40) % time.Second,
			Seed: seed,
		}
		q, err := New[int](c, nil)
		if err != nil {
			require.ErrorIs(t, err, aqm.ErrInvalidConfig)
			return
		}
		cfg := q.Config()
		now := aqm.Time(int64(seed))
		for i, b := range ops {
			switch b >> 6 {
			case 0, 1:
				size := uint32(b) * 97
				if b&0x20 != 0 {
					size = math.MaxUint32 - uint32(b)
				}
				q.Enqueue(aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: size, ECN: aqm.ECN(b)}}, now)
			case 2:
				q.Dequeue(now)
			case 3:
				switch b & 3 {
				case 0:
					now += aqm.Time(b) * aqm.Time(time.Millisecond)
				case 1:
					now -= aqm.Time(b) * aqm.Time(time.Millisecond)
				case 2:
					now = math.MaxInt64 - aqm.Time(b)
				case 3:
					now += aqm.Time(time.Duration(b) * time.Hour)
				}
			}
			s := q.Stats()
			d := q.Detail()
			require.LessOrEqual(t, s.Len, cfg.LimitPackets)
			if cfg.LimitBytes > 0 {
				require.LessOrEqual(t, s.Backlog, cfg.LimitBytes)
			}
			require.Equal(t, s.Enqueued.Packets, s.Dequeued.Packets+s.DroppedQueued.Packets+uint64(s.Len))
			require.False(t, math.IsNaN(d.Avg) || math.IsInf(d.Avg, 0) || d.Avg < 0, "avg %v", d.Avg)
			require.True(t, d.Prob >= 0 && d.Prob <= 1+1e-9, "prob %v", d.Prob)
			if cfg.Adaptive {
				require.True(t, d.MaxP >= minAdaptiveMaxP && d.MaxP <= maxAdaptiveMaxP)
			}
		}
	})
}
