package pie

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// FuzzConfigOps protects the controller's invariants on fuzzer-chosen
// configurations and operation streams, including huge time steps: New
// either rejects the config or the queue never panics, p stays in [0, 1],
// the burst allowance in [0, MAX_BURST], the counters balance, and the
// burst paths give exactly what the loop of single calls gives.
func FuzzConfigOps(f *testing.F) {
	f.Add(uint64(0), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(uint64(0xffff_ffff_ffff_ffff), []byte("\xff\x00\xff\x00\x80\x80\x01\x02\x03\x04\x05\x06"))
	f.Add(uint64(0x0123_4567_89ab_cdef), make([]byte, 64))
	f.Fuzz(func(t *testing.T, knobs uint64, ops []byte) {
		k := knobs
		take := func(n uint) uint64 { v := k & (1<<n - 1); k >>= n; return v }
		cfg := Config{
			Control:      Control{Target: time.Duration(take(4)) * 3 * time.Millisecond, TUpdate: time.Duration(take(4)) * time.Millisecond, Alpha: float64(take(3)) / 8, Beta: float64(take(3)) / 2, MaxBurst: time.Duration(take(3)) * 20 * time.Millisecond, MeanPacketBytes: int(take(2)) * 700, DisableECN: take(1) == 1, ECNThreshold: float64(take(2)) / 4, Derandomize: take(1) == 1, ByteMode: take(1) == 1, RateEstimator: take(1) == 1, HighDelayBoost: take(1) == 1},
			LimitPackets: int(take(5)),
			LimitBytes:   int(take(3)) * 5000,
			Seed:         1 + take(8), // fixed, so a crasher replays
		}
		cfg.DisableBurstAllowance = take(1) == 1
		q, err := New[int](cfg, nil)
		if err != nil {
			return
		}
		r, _ := New[int](cfg, nil) // the same calls one packet at a time
		var ps [16]aqm.Packet[int]
		var vq, vr [16]aqm.Verdict
		var bq, br [16]aqm.Packet[int]
		now := aqm.Time(binary.LittleEndian.Uint64(append(ops, make([]byte, 8)...)))
		for i := 0; i+2 < len(ops); i += 3 {
			op, a, b := ops[i], ops[i+1], ops[i+2]
			switch op % 4 {
			case 0:
				p := aqm.Packet[int]{Payload: i, Meta: aqm.Meta{Size: uint32(a) * 16, ECN: aqm.ECN(b)}}
				if q.Enqueue(p, now) != r.Enqueue(p, now) {
					t.Fatalf("op %d: Enqueue verdicts differ", i)
				}
			case 1: // a burst: sizes and ECN from a, b
				n := int(b%16) + 1
				for j := range n {
					ps[j] = aqm.Packet[int]{Payload: i + j, Meta: aqm.Meta{Size: uint32(a+byte(j*37)) * 16, ECN: aqm.ECN(j)}}
				}
				if q.EnqueueBatch(ps[:n], vq[:n], now) != aqm.EnqueueLoop[int](r, ps[:n], vr[:n], now) || vq != vr {
					t.Fatalf("op %d: EnqueueBatch differs from the loop", i)
				}
			case 2:
				n := int(b % 16)
				if q.DequeueBatch(bq[:n], now) != aqm.DequeueLoop[int](r, br[:n], now) || bq != br {
					t.Fatalf("op %d: DequeueBatch differs from the loop", i)
				}
			case 3:
				now += aqm.Time(int64(int8(a)) << (b % 63))
			}
			if q.Stats() != r.Stats() || q.Detail() != r.Detail() {
				t.Fatalf("op %d: burst path and loop diverge: %+v / %+v", i, q.Detail(), r.Detail())
			}
			c := &q.ctl
			if c.p < 0 || c.p > probOne || c.burst < 0 || c.burst > q.pp.maxBurst || c.old < 0 || c.old > int64(maxDelay) {
				t.Fatalf("state out of range: %+v", q.Detail())
			}
			s := q.Stats()
			if s.Enqueued.Packets != s.Dequeued.Packets+s.DroppedQueued.Packets+uint64(s.Len) || s.Len > q.pp.limitPackets {
				t.Fatalf("stats: %+v", s)
			}
		}
	})
}
