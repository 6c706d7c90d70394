package cake

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/rng"
)

// infoConfigs are configurations driven with Info (which the conformance
// kit cannot do): host modes, ACK filter, shaper, ingress.
var infoConfigs = []Config{
	{Seed: 1, LimitPackets: 100, MemoryLimitBytes: 60000},
	{Seed: 2, FlowMode: DualSrcHost, ACKFilter: ACKFilterAggressive, LimitPackets: 80, Rate: 20 * aqm.Mbit},
	{Seed: 3, FlowMode: DualDstHost, TinMode: DiffServ8, Ingress: true, Rate: 5 * aqm.Mbit, LimitPackets: 120, Framing: ATM, Overhead: 40},
	{Seed: 4, FlowMode: Hosts, TinMode: Precedence, ACKFilter: ACKFilterConservative, LimitPackets: 50},
	{Seed: 5, FlowMode: SrcHost, TinMode: DiffServ4, Ingress: true, LimitPackets: 64, MemoryLimitBytes: 20000},
}

// playInfo decodes data into operations with Info and plays them on a
// queue of cfg, checking after each one: every accepted packet leaves once
// (Dequeue or DropFunc), Len, Backlog and Stats agree with the model,
// limits hold, packets of one flow and connection leave in order (ACK
// drops aside), and the internal counts and heap are consistent.
func playInfo(cfg Config, data []byte) error {
	type live struct {
		size uint32
		key  uint64
	}
	inQ := map[int]live{}
	var errs []error
	fail := func(f string, a ...any) {
		if len(errs) < 4 {
			errs = append(errs, fmt.Errorf(f, a...))
		}
	}
	inCall := false
	lastOut := map[uint64]int{}
	q, err := New(cfg, func(p aqm.Packet[int], v aqm.Verdict) {
		if !inCall {
			fail("DropFunc outside a call")
		}
		if _, ok := inQ[p.Payload]; !ok {
			fail("dropped %d not queued", p.Payload)
		}
		delete(inQ, p.Payload)
	})
	if err != nil {
		return err
	}
	now := aqm.Time(time.Second)
	seq := 0
	var backlog, ops int
	for len(data) >= 8 {
		op := data[0]
		w := binary.LittleEndian.Uint64(data)
		data = data[8:]
		switch op % 8 {
		case 0, 1, 2, 3:
			seq++
			info := Info{SrcHost: uint32(w>>8) % 5, DstHost: uint32(w>>12) % 7, DSCP: uint8(w >> 16)}
			if w>>22&1 == 1 {
				info.ack = ackInfo{TCP: true, Conn: uint32(w>>23) % 3, Ack: uint32(w>>26) % 16 * 100,
					Flags: flagACK | uint8(w>>30)&flagECE, Payload: w>>31&7 == 0, HasTS: w>>34&1 == 1, TSVal: uint32(w>>35) % 4}
			}
			p := aqm.Packet[int]{Payload: seq, Meta: aqm.Meta{Size: uint32(w>>40) % 1600, Hash: uint32(w>>52) % 9, ECN: aqm.ECN(w >> 60)}}
			inCall = true
			v := q.EnqueueInfo(p, info, now)
			inCall = false
			if v.Accepted() {
				inQ[seq] = live{p.Size, uint64(q.dscpTin[info.DSCP&63])<<48 | uint64(p.Hash)<<32 |
					uint64(info.SrcHost)<<16 | uint64(info.DstHost)<<8 | uint64(info.ack.Conn)}
			}
		case 4, 5:
			for range int(w>>8) % 20 {
				inCall = true
				p, ok := q.Dequeue(now)
				inCall = false
				if !ok {
					break
				}
				l, had := inQ[p.Payload]
				if !had {
					fail("dequeued %d not queued", p.Payload)
					continue
				}
				delete(inQ, p.Payload)
				if p.Size != l.size {
					fail("size changed")
				}
				if last, ok := lastOut[l.key]; ok && last > p.Payload {
					fail("flow %x reordered: %d after %d", l.key, p.Payload, last)
				}
				lastOut[l.key] = p.Payload
			}
		case 6:
			now += aqm.Time(w>>8) % aqm.Time(50*time.Millisecond)
		default:
			switch w >> 8 % 16 {
			case 0:
				now = math.MaxInt64 - aqm.Time(w>>20)
			case 1:
				now -= aqm.Time(w>>20) % aqm.Time(time.Second)
			case 2:
				q.SetRate(aqm.Rate(w>>20) % (100 * aqm.Mbit))
			default:
				now += aqm.Time(w>>20) % aqm.Time(2*time.Second)
			}
		}
		backlog = 0
		for _, l := range inQ {
			backlog += int(l.size)
		}
		if q.Len() != len(inQ) || q.Backlog() != backlog {
			fail("len %d/%d backlog %d/%d", q.Len(), len(inQ), q.Backlog(), backlog)
		}
		s := q.Stats()
		if s.Enqueued.Packets != s.Dequeued.Packets+s.DroppedQueued.Packets+uint64(q.Len()) {
			fail("stats do not balance: %+v", s)
		}
		if q.Len() > q.limit || q.Backlog() > q.memLimit {
			fail("limits exceeded")
		}
		if ops++; ops%16 == 0 || len(data) < 8 {
			if err := q.invariants(); err != nil {
				fail("%v", err)
			}
		}
		if len(errs) > 0 {
			break
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// invariants checks the internal counts: tin flow counts match the flow
// states, host bulk counts match the bulk flows, packets per tin add up,
// lists are consistent and the heap (when live) is ordered.
func (q *Queue[T]) invariants() error {
	total := 0
	for ti := range q.tins {
		b := &q.tins[ti]
		var sp, bk, dc, pk, by int
		src := map[uint16]int{}
		dst := map[uint16]int{}
		for j := ti * queuesPerTin; j < (ti+1)*queuesPerTin; j++ {
			f := &q.flows[j]
			n, bytes := 0, uint32(0)
			for x := f.head; x != nilIdx; x = q.nodes[x].next {
				n++
				bytes += q.nodes[x].pkt.Size
			}
			if bytes != f.backlog {
				return fmt.Errorf("flow %d backlog %d, holds %d", j, f.backlog, bytes)
			}
			pk += n
			by += int(bytes)
			switch f.state {
			case stNone:
				if n > 0 {
					return fmt.Errorf("idle flow %d holds packets", j)
				}
			case stSparse, stSparseWait:
				sp++
			case stBulk:
				bk++
				if f.src != noHost {
					src[f.src]++
					dst[f.dst]++
				}
			case stDecaying:
				dc++
				if n > 0 {
					return fmt.Errorf("decaying flow %d holds packets", j)
				}
			}
		}
		if sp != b.sparse || bk != b.bulk || dc != b.decaying || pk != b.pkts || by != b.backlog {
			return fmt.Errorf("tin %d counts sparse %d/%d bulk %d/%d decaying %d/%d pkts %d/%d bytes %d/%d",
				ti, b.sparse, sp, b.bulk, bk, b.decaying, dc, b.pkts, pk, b.backlog, by)
		}
		for i, h := range b.hosts {
			if q.mode&bitSrc != 0 && int(h.srcBulk) != src[uint16(i)] || q.mode&bitDst != 0 && int(h.dstBulk) != dst[uint16(i)] {
				return fmt.Errorf("tin %d host %d bulk counts %d/%d %d/%d", ti, i, h.srcBulk, src[uint16(i)], h.dstBulk, dst[uint16(i)])
			}
		}
		n := 0
		for _, l := range []list{b.newL, b.oldL, b.decL} {
			prev := nilIdx
			for x := l.head; x != nilIdx; x = q.flows[x].next {
				if q.flows[x].prev != prev {
					return fmt.Errorf("tin %d list links broken at %d", ti, x)
				}
				prev = x
				n++
			}
			if prev != l.tail {
				return fmt.Errorf("tin %d list tail wrong", ti)
			}
		}
		if n != sp+bk+dc {
			return fmt.Errorf("tin %d lists hold %d flows, states say %d", ti, n, sp+bk+dc)
		}
		total += pk
	}
	if total != q.len {
		return fmt.Errorf("len %d, flows hold %d", q.len, total)
	}
	if q.overTTL > 0 {
		for i := range q.heap {
			if q.heapPos[q.heap[i]] != uint16(i) || i > 0 && q.heapKey(q.heap[(i-1)/2]) < q.heapKey(q.heap[i]) {
				return fmt.Errorf("heap broken at %d", i)
			}
		}
	}
	return nil
}

// TestRandomInfoTraces protects the queue under random traffic with Info
// (hosts, DSCP, ACKs), rate changes and time glitches on configurations
// the kit does not reach.
func TestRandomInfoTraces(t *testing.T) {
	n := 20
	if testing.Short() {
		n = 6
	}
	for ci, cfg := range infoConfigs {
		for s := range uint64(n) {
			src := rng.New(s*31 + uint64(ci))
			data := make([]byte, 8*600)
			for i := 0; i < len(data); i += 8 {
				binary.LittleEndian.PutUint64(data[i:], src.Uint64())
			}
			if err := playInfo(cfg, data); err != nil {
				t.Fatalf("config %d seed %d: %v", ci, s, err)
			}
		}
	}
}

// FuzzQueueInfo plays fuzzed operations with Info on each configuration.
func FuzzQueueInfo(f *testing.F) {
	f.Add([]byte("\x00\x11\x22\x33\x44\x55\x66\x77\x04\x30\x00\x00\x00\x00\x00\x00"), uint8(1))
	f.Add(make([]byte, 64), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, c uint8) {
		if len(data) > 8*2000 {
			data = data[:8*2000]
		}
		if err := playInfo(infoConfigs[int(c)%len(infoConfigs)], data); err != nil {
			t.Fatal(err)
		}
	})
}
