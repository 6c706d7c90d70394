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
	}
}

// TestConformance protects the aqm.Queue contract (conservation, limits,
// ECN rules, FIFO order, odd input, determinism) for every variant and mode.
func TestConformance(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { aqmtest.Run(t, factory(t, v.cfg)) })
	}
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
				require.True(t, d.MaxP >= MinAdaptiveMaxP && d.MaxP <= MaxAdaptiveMaxP)
			}
		}
	})
}
