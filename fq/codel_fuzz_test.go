package fq

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
)

// FuzzCoDelConfig fuzzes FQ-CoDel over random configurations (within the
// accepted ranges) and traces of single calls and bursts, checking
// conservation, the limits, the list bookkeeping and that Dequeue drains
// everything.
func FuzzCoDelConfig(f *testing.F) {
	f.Add(uint64(0), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint64(0xffffffffffffffff), []byte("an overloaded queue with odd sizes and flows"))
	f.Add(uint64(12345), []byte{0x02, 0x10, 0x00, 0xf0, 0x02, 0x27, 0x00, 0xf1, 0x00, 0x13, 0x00, 0xf0, 0x02, 0x00, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, c uint64, ops []byte) {
		cfg := CoDelConfig{
			Flows:              int(1 + c%97),
			LimitPackets:       int(3 + c>>8%48),
			MemoryLimitBytes:   int(3 + c>>16%19998),
			QuantumBytes:       int(256 + c>>24%2000),
			DropBatchPackets:   int(1 + c>>32%70),
			Control:            codel.Control{Interval: time.Duration(2 + c>>40%100_000), LinuxCount: c&2 != 0, DisableECN: c&4 != 0},
			GlobalBacklogGuard: c&1 != 0,
			Seed:               c | 1,
		}
		cfg.Target = time.Duration(1 + c>>48%uint64(cfg.Interval-1))
		cfg.MTUBytes = min(cfg.MemoryLimitBytes/3, 1514) // small memory limits stay valid
		live := map[uint64]bool{}
		q, err := NewCoDel(cfg, func(p aqm.Packet[uint64], why aqm.Verdict) {
			if !live[p.Payload] {
				t.Fatalf("dropped unknown packet %d", p.Payload)
			}
			delete(live, p.Payload)
		})
		if err != nil {
			t.Fatal(err)
		}
		now := aqm.Time(time.Second)
		id := uint64(0)
		ps := make([]aqm.Packet[uint64], 40)
		vs := make([]aqm.Verdict, 40)
		for len(ops) >= 4 {
			w := binary.LittleEndian.Uint32(ops)
			ops = ops[4:]
			now += aqm.Time(int64(w>>24) * 997 * int64(w&1*2-1+2) / 2)
			if w>>28 == 0xf { // a burst of up to 39 packets through the burst path
				k := int(w >> 8 % 40)
				if w&2 != 0 {
					for i := range ps[:k] {
						id++
						ps[i] = aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: (w >> 8) * uint32(i+1) % 3000, Hash: (w >> 4) + uint32(i)%13}}
					}
					for _, p := range ps[:k] { // overload may drop them within the burst
						live[p.Payload] = true
					}
					q.EnqueueBatch(ps[:k], vs[:k], now)
					for i := range ps[:k] {
						if !vs[i].Accepted() {
							delete(live, ps[i].Payload)
						}
					}
				} else {
					n := q.DequeueBatch(ps[:k], now)
					if n < k && q.Len() != 0 {
						t.Fatalf("DequeueBatch gave %d of %d with %d queued", n, k, q.Len())
					}
					for _, p := range ps[:n] {
						if !live[p.Payload] {
							t.Fatalf("dequeued unknown packet %d", p.Payload)
						}
						delete(live, p.Payload)
					}
				}
			} else if w&2 != 0 {
				id++
				if q.Enqueue(aqm.Packet[uint64]{Payload: id, Meta: aqm.Meta{Size: w >> 8 % 3000, Hash: w >> 4 % 13, ECN: aqm.ECN(w >> 20)}}, now).Accepted() {
					live[id] = true
				}
			} else if p, ok := q.Dequeue(now); ok {
				if !live[p.Payload] {
					t.Fatalf("dequeued unknown packet %d", p.Payload)
				}
				delete(live, p.Payload)
			}
			if q.Len() > cfg.LimitPackets || q.Backlog() > cfg.MemoryLimitBytes || q.Len() != len(live) {
				t.Fatalf("len %d backlog %d live %d", q.Len(), q.Backlog(), len(live))
			}
		}
		for q.Len() > 0 {
			p, ok := q.Dequeue(now)
			if !ok {
				t.Fatal("Dequeue reported empty with packets queued")
			}
			delete(live, p.Payload)
		}
		for {
			p, ok := q.Dequeue(now)
			if !ok {
				break
			}
			t.Fatalf("packet %d from an empty queue", p.Payload)
		}
		if len(live) != 0 || q.Backlog() != 0 {
			t.Fatalf("lost %d packets", len(live))
		}
		d := q.Detail()
		if d.NewFlowsLen+d.OldFlowsLen != 0 {
			t.Fatalf("lists not empty: %+v", d)
		}
		s := q.Stats()
		if s.Enqueued.Packets != s.Dequeued.Packets+s.DroppedQueued.Packets {
			t.Fatalf("stats: %+v", s)
		}
	})
}
