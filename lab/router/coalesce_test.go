package router

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// segSpec describes a train of TCP segments of one flow, as a sender's
// TSO cuts them.
type segSpec struct {
	v6   bool
	ecn  uint8
	n    int // segments
	mss  int // payload of each but the last
	last int // payload of the last
	seq  uint32
	id   uint16
	ts   bool // a timestamp option (NOP, NOP, TS)
	df   bool
}

// onesSum adds b as big-endian 16-bit words, an odd last byte padded with
// a zero, to acc.
func onesSum(b []byte, acc uint64) uint64 {
	for i := 0; i+1 < len(b); i += 2 {
		acc += uint64(b[i])<<8 | uint64(b[i+1])
	}
	if len(b)%2 == 1 {
		acc += uint64(b[len(b)-1]) << 8
	}
	return acc
}

func onesFold(acc uint64) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}

// pseudo is the pseudo-header sum of a TCP packet ip (transport at l4).
func pseudo(ip []byte, l4 int) uint64 {
	n := uint64(len(ip) - l4)
	if ip[0]>>4 == 6 {
		return onesSum(ip[8:40], n+6)
	}
	return onesSum(ip[12:20], n+6)
}

// fixSums sets a segment's IPv4 header checksum and its full TCP checksum.
func fixSums(ip []byte) {
	l4 := 40
	if ip[0]>>4 == 4 {
		l4 = int(ip[0]&15) * 4
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:12], ^onesFold(onesSum(ip[:l4], 0)))
	}
	t := ip[l4:]
	t[16], t[17] = 0, 0
	binary.BigEndian.PutUint16(t[16:18], ^onesFold(onesSum(t, pseudo(ip, l4))))
}

// sumsOK reports whether a single packet's IPv4 header and TCP checksums
// verify.
func sumsOK(ip []byte) bool {
	l4 := 40
	if ip[0]>>4 == 4 {
		l4 = int(ip[0]&15) * 4
		if onesFold(onesSum(ip[:l4], 0)) != 0xffff {
			return false
		}
	}
	return onesFold(onesSum(ip[l4:], pseudo(ip, l4))) == 0xffff
}

// segments builds the train s describes, each segment behind a zero
// virtio-net header with complete checksums, PSH on the last.
func (s segSpec) segments() [][]byte {
	thl := 20
	if s.ts {
		thl = 32
	}
	l4 := 20
	if s.v6 {
		l4 = 40
	}
	var out [][]byte
	seq := s.seq
	for i := range s.n {
		pay := s.mss
		if i == s.n-1 {
			pay = s.last
		}
		b := make([]byte, iphdr.VnetHdrLen+l4+thl+pay)
		ip := b[iphdr.VnetHdrLen:]
		if s.v6 {
			ip[0], ip[1], ip[2], ip[3] = 0x60, s.ecn<<4|0x01, 0x23, 0x45
			binary.BigEndian.PutUint16(ip[4:6], uint16(len(ip)-40))
			ip[6], ip[7] = 6, 64
			a, d := netip.MustParseAddr("fd00:201:1::2").As16(), netip.MustParseAddr("fd00:201:2::2").As16()
			copy(ip[8:], a[:])
			copy(ip[24:], d[:])
		} else {
			ip[0], ip[1], ip[8], ip[9] = 0x45, 0x28|s.ecn, 64, 6
			binary.BigEndian.PutUint16(ip[2:4], uint16(len(ip)))
			binary.BigEndian.PutUint16(ip[4:6], s.id+uint16(i))
			if s.df {
				ip[6] = 0x40
			}
			a, d := netip.MustParseAddr("10.201.1.2").As4(), netip.MustParseAddr("10.201.2.2").As4()
			copy(ip[12:], a[:])
			copy(ip[16:], d[:])
		}
		t := ip[l4:]
		binary.BigEndian.PutUint16(t[0:2], 40000)
		binary.BigEndian.PutUint16(t[2:4], 5201)
		binary.BigEndian.PutUint32(t[4:8], seq)
		binary.BigEndian.PutUint32(t[8:12], 0xa0b0c0d0)
		t[12], t[13] = byte(thl/4)<<4, tcpACK
		if i == s.n-1 {
			t[13] |= tcpPSH
		}
		binary.BigEndian.PutUint16(t[14:16], 502)
		if s.ts {
			copy(t[20:], []byte{1, 1, 8, 10, 0, 0, 0x10, 0, 0, 0, 0x20, 0})
		}
		for j := range pay {
			t[thl+j] = byte(int(seq)+j*7) ^ byte(j>>8)
		}
		fixSums(ip)
		seq += uint32(pay)
		out = append(out, b)
	}
	return out
}

// splitBack cuts a joined buffer (header and IP packet) with SplitGSO and
// returns the segments, each behind a zero header as the router queues
// them.
func splitBack(t *testing.T, b []byte) [][]byte {
	t.Helper()
	h, err := iphdr.ParseVnetHdr(b)
	if err != nil {
		t.Fatalf("joined header: %v", err)
	}
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	sizes := make([]int, 64)
	n, err := iphdr.SplitGSO(b[iphdr.VnetHdrLen:], h, bufs, sizes)
	if err != nil {
		t.Fatalf("SplitGSO of the joined packet: %v", err)
	}
	out := make([][]byte, n)
	for i := range n {
		out[i] = append(make([]byte, iphdr.VnetHdrLen), bufs[i][:sizes[i]]...)
	}
	return out
}

// checkJoined checks a joined buffer on its own: its header asks for TSO
// of the right kind with the segment size of the first segment and a
// partial TCP checksum, its IPv4 header checksum verifies, and the
// checksum the kernel completes (the sum from CsumStart to the end, over
// the partial sum left in the field) verifies over the whole packet.
func checkJoined(t *testing.T, b []byte, s segSpec) {
	t.Helper()
	h, err := iphdr.ParseVnetHdr(b)
	if err != nil {
		t.Fatal(err)
	}
	kind, l4 := uint8(iphdr.GSOTCPv4), 20
	if s.v6 {
		kind, l4 = iphdr.GSOTCPv6, 40
	}
	if h.GSOType != kind || int(h.GSOSize) != s.mss || h.Flags != iphdr.VnetNeedsCsum || int(h.CsumStart) != l4 || h.CsumOffset != 16 {
		t.Errorf("header %+v; want kind %d, size %d, partial checksum at %d+16", h, kind, s.mss, l4)
	}
	ip := append([]byte(nil), b[iphdr.VnetHdrLen:]...)
	if !s.v6 && onesFold(onesSum(ip[:20], 0)) != 0xffff {
		t.Errorf("IPv4 header checksum does not verify")
	}
	tcp := ip[h.CsumStart:]
	c := ^onesFold(onesSum(tcp, 0))
	binary.BigEndian.PutUint16(tcp[h.CsumOffset:], c)
	if !sumsOK(ip) {
		t.Errorf("completed TCP checksum does not verify")
	}
}

// TestJoinRoundTrip protects joining: a train of segments, IPv4 and IPv6,
// with and without timestamps, of every ECN codepoint, joins into one
// super-packet whose checksums are right, and SplitGSO cuts it back into
// exactly the segments joined, byte for byte.
func TestJoinRoundTrip(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, ecn := range []uint8{0, 1, 2, 3} {
			for _, c := range []struct{ n, mss, last int }{{2, 1448, 1448}, {3, 1448, 7}, {10, 1400, 1399}, {44, 1448, 1}, {5, 1, 1}} {
				s := segSpec{v6: v6, ecn: ecn, n: c.n, mss: c.mss, last: c.last, seq: 0xfffff000, id: 0xfffe, ts: c.n%2 == 0, df: ecn%2 == 0}
				t.Run(fmt.Sprintf("v6=%v/ecn=%d/%dx%d+%d", v6, ecn, c.n, c.mss, c.last), func(t *testing.T) {
					segs := s.segments()
					for _, p := range segs {
						if !sumsOK(p[iphdr.VnetHdrLen:]) {
							t.Fatal("test segment with a bad checksum")
						}
					}
					if n := joinable(segs, iphdr.VnetHdrLen, DefaultVnetBufferSize); n != len(segs) {
						t.Fatalf("joinable %d of %d", n, len(segs))
					}
					dst := make([]byte, DefaultVnetBufferSize)
					b := dst[:join(dst, segs, iphdr.VnetHdrLen)]
					var want int
					for _, p := range segs {
						want += len(p) - iphdr.VnetHdrLen
					}
					if w, err := iphdr.GSOWireSize(b[iphdr.VnetHdrLen:], mustVnet(b)); err != nil || w != want {
						t.Errorf("wire size %d (%v); want %d, the segments' bytes", w, err, want)
					}
					checkJoined(t, b, s)
					back := splitBack(t, b)
					if len(back) != len(segs) {
						t.Fatalf("split back into %d; want %d", len(back), len(segs))
					}
					for i := range segs {
						if !bytes.Equal(back[i], segs[i]) {
							t.Errorf("segment %d differs after the round trip:\n got %x\nwant %x", i, back[i][:80], segs[i][:80])
						}
					}
				})
			}
		}
	}
}

// joinable returns how many packets the run that plan starts at ps[0]
// holds.
func joinable(ps [][]byte, off, room int) int {
	var c coalescer
	c.plan(ps, off, room)
	return int(c.count[0])
}

func mustVnet(b []byte) iphdr.VnetHdr {
	h, _ := iphdr.ParseVnetHdr(b)
	return h
}

// TestJoinRules protects what may not be joined: a segment that differs
// from the run in ECN field (a CE mark), DSCP, TTL, flow label, ports,
// acknowledgment, window or timestamp, that does not continue the data,
// has an identification out of step, follows a pushed or short segment,
// carries SYN, FIN, RST, URG or CWR, is already a super-packet, or would
// make the packet too big, ends the run just before it.
func TestJoinRules(t *testing.T) {
	type mut struct {
		name string
		v6   bool
		at   int // the segment changed
		f    func(ip []byte, l4 int)
		want int // joinable from the first
	}
	tcpFlag := func(f byte) func([]byte, int) { return func(ip []byte, l4 int) { ip[l4+13] |= f } }
	muts := []mut{
		{"none", false, 0, func([]byte, int) {}, 6},
		{"ce", false, 3, func(ip []byte, _ int) { ip[1] |= 3 }, 3},
		{"ce-first", false, 0, func(ip []byte, _ int) { ip[1] |= 3 }, 1},
		{"ce-v6", true, 2, func(ip []byte, _ int) { ip[1] |= 3 << 4 }, 2},
		{"dscp", false, 2, func(ip []byte, _ int) { ip[1] ^= 0x80 }, 2},
		{"ttl", false, 4, func(ip []byte, _ int) { ip[8]-- }, 4},
		{"hop-limit", true, 4, func(ip []byte, _ int) { ip[7]-- }, 4},
		{"flow-label", true, 1, func(ip []byte, _ int) { ip[3] ^= 1 }, 1},
		{"id", false, 2, func(ip []byte, _ int) { ip[5]++ }, 2},
		{"df", false, 2, func(ip []byte, _ int) { ip[6] ^= 0x40 }, 2},
		{"port", false, 5, func(ip []byte, l4 int) { ip[l4+1]++ }, 5},
		{"ack", false, 3, func(ip []byte, l4 int) { ip[l4+11]++ }, 3},
		{"window", false, 3, func(ip []byte, l4 int) { ip[l4+15]++ }, 3},
		{"timestamp", false, 2, func(ip []byte, l4 int) { ip[l4+27]++ }, 2},
		{"seq", false, 2, func(ip []byte, l4 int) { ip[l4+7]++ }, 2},
		{"psh-middle", false, 2, tcpFlag(tcpPSH), 3},
		{"syn", false, 1, tcpFlag(tcpSYN), 1},
		{"fin", false, 4, tcpFlag(tcpFIN), 4},
		{"rst", false, 4, tcpFlag(tcpRST), 4},
		{"urg", false, 4, tcpFlag(tcpURG), 4},
		{"cwr", false, 0, tcpFlag(tcpCWR), 1},
		{"ece", false, 3, tcpFlag(tcpECE), 3},
	}
	for _, m := range muts {
		t.Run(m.name, func(t *testing.T) {
			s := segSpec{v6: m.v6, n: 6, mss: 1000, last: 1000, seq: 1, id: 7, ts: true, ecn: 2}
			segs := s.segments()
			ip := segs[m.at][iphdr.VnetHdrLen:]
			l4 := 20
			if m.v6 {
				l4 = 40
			}
			m.f(ip, l4)
			fixSums(ip)
			if n := joinable(segs, iphdr.VnetHdrLen, DefaultVnetBufferSize); n != m.want {
				t.Errorf("joinable %d; want %d", n, m.want)
			}
		})
	}
	t.Run("short-middle", func(t *testing.T) {
		a := segSpec{n: 3, mss: 1000, last: 500, seq: 1, id: 1}.segments()
		b := segSpec{n: 2, mss: 1000, last: 1000, seq: 2501, id: 4}.segments()
		if n := joinable(append(a, b...), iphdr.VnetHdrLen, DefaultVnetBufferSize); n != 3 {
			t.Errorf("joinable %d; want 3 (a short segment ends the run)", n)
		}
	})
	t.Run("longer-next", func(t *testing.T) {
		segs := segSpec{n: 3, mss: 1000, last: 1200, seq: 1, id: 1}.segments()
		if n := joinable(segs, iphdr.VnetHdrLen, DefaultVnetBufferSize); n != 2 {
			t.Errorf("joinable %d; want 2 (a longer segment is not joined)", n)
		}
	})
	t.Run("gso", func(t *testing.T) {
		segs := segSpec{n: 3, mss: 1000, last: 1000, seq: 1, id: 1}.segments()
		segs[1][1] = iphdr.GSOTCPv4
		binary.LittleEndian.PutUint16(segs[1][4:6], 500)
		if n := joinable(segs, iphdr.VnetHdrLen, DefaultVnetBufferSize); n != 1 {
			t.Errorf("joinable %d; want 1", n)
		}
	})
	t.Run("size", func(t *testing.T) {
		segs := segSpec{n: 60, mss: 1448, last: 1448, seq: 1, id: 1}.segments()
		n := joinable(segs, iphdr.VnetHdrLen, DefaultVnetBufferSize)
		if want := (maxCoalesced - 40) / 1448; n != want {
			t.Errorf("joinable %d; want %d (64 KiB)", n, want)
		}
		if n := joinable(segs, iphdr.VnetHdrLen, 10+40+3*1448); n != 3 {
			t.Errorf("joinable %d in a buffer of three segments; want 3", n)
		}
	})
	t.Run("partial-checksum", func(t *testing.T) {
		segs := segSpec{n: 3, mss: 1000, last: 1000, seq: 1, id: 1}.segments()
		iphdr.VnetHdr{Flags: iphdr.VnetNeedsCsum, CsumStart: 20, CsumOffset: 16}.Put(segs[1])
		iphdr.VnetHdr{Flags: iphdr.VnetNeedsCsum, CsumStart: 20, CsumOffset: 6}.Put(segs[2])
		if n := joinable(segs, iphdr.VnetHdrLen, DefaultVnetBufferSize); n != 2 {
			t.Errorf("joinable %d; want 2 (a TCP partial checksum joins, another does not)", n)
		}
	})
}

// TestWriteCoalesced protects the router's write path with VnetHdr: at a
// rate (where super-packets are split for the queue), the device receives
// fewer writes than segments, every write splits back (SplitGSO) into
// exactly the segments the input super-packets stand for, in order, the
// counters count segments and wire bytes (read = written), and every
// buffer returns to its pool. A device that refuses joined packets gets
// the segments one by one instead, and nothing is dropped.
func TestWriteCoalesced(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refuse=%v", refuse), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var writes int
				var got [][]byte
				p := newPipe(64, func(b []byte) bool {
					mu.Lock()
					defer mu.Unlock()
					h, _ := iphdr.ParseVnetHdr(b)
					if refuse && h.IsGSO() {
						return false
					}
					writes++
					if h.IsGSO() {
						got = append(got, splitBack(t, b)...)
					} else {
						got = append(got, append([]byte(nil), b...))
					}
					return true
				})
				r, stop := startRouter(t, Config{AQM: "fifo", Rate: 100 * aqm.Mbit, VnetHdr: true, GSO: front.GSOSplit, Clock: clock.Since(time.Now())}, p)
				var want [][]byte
				for i := range 20 {
					sp := superTCP4("10.201.1.2", "10.201.2.2", 2, 1448, 2+i%10, uint32(i))
					want = append(want, splitBack(t, sp)...)
					p.in <- sp
					time.Sleep(5 * time.Millisecond)
				}
				waitRead(r, uint64(len(want)))
				time.Sleep(100 * time.Millisecond)
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				s := r.Stats()
				mu.Lock()
				defer mu.Unlock()
				if len(got) != len(want) {
					t.Fatalf("wrote %d segments; want %d", len(got), len(want))
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("segment %d differs", i)
					}
				}
				if refuse {
					if writes != len(want) || s.Coalesced != 0 {
						t.Errorf("%d writes, %d coalesced; want %d single writes", writes, s.Coalesced, len(want))
					}
				} else if writes >= len(want)/2 || s.Coalesced < uint64(len(want)/2) {
					t.Errorf("%d writes for %d segments (%d coalesced); want fewer than half", writes, len(want), s.Coalesced)
				}
				if s.Written.Packets != uint64(len(want)) || s.Written.Bytes != s.Read.Bytes || s.Dropped.Total != 0 || !s.Conserved() {
					t.Errorf("stats: read %+v, written %+v, dropped %d, conserved %v", s.Read, s.Written, s.Dropped.Total, s.Conserved())
				}
				if r.pool.inUse() != 0 || r.seg.inUse() != 0 {
					t.Errorf("buffers out: %d read, %d segment", r.pool.inUse(), r.seg.inUse())
				}
			})
		})
	}
}

// TestWriteCoalescedAllocs protects the write path from allocating per
// batch once warm.
func TestWriteCoalescedAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	p := newPipe(1, nil)
	r, err := New(Config{AQM: "fifo", VnetHdr: true}, p)
	if err != nil {
		t.Fatal(err)
	}
	d := &Queue{r: r, dev: p}
	segs := segSpec{n: 10, mss: 1448, last: 1448, seq: 1, id: 1, ts: true}.segments()
	ps := make([][]byte, len(segs))
	run := func() {
		for i := range segs {
			b, _ := r.seg.get()
			ps[i] = b[:copy(b, segs[i])]
		}
		d.writeCoalesced(ps)
	}
	run()
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Errorf("%.1f allocations per batch; want 0", a)
	}
	if d.c.coalesced.Load() == 0 {
		t.Error("nothing joined")
	}
}

// TestPlanInterleaved protects joining under fair queuing, which sends
// flows in turn: the segments of each flow join across the other flows'
// packets between them, and a packet of the flow that cannot join (a pure
// ACK, here) closes the run, so that no segment overtakes it.
func TestPlanInterleaved(t *testing.T) {
	a := segSpec{n: 4, mss: 1000, last: 1000, seq: 1, id: 1}.segments()
	b := segSpec{n: 4, mss: 1000, last: 1000, seq: 1, id: 1}.segments()
	for _, p := range b {
		p[iphdr.VnetHdrLen+21]++ // source port
		fixSums(p[iphdr.VnetHdrLen:])
	}
	ack := append([]byte(nil), a[1][:iphdr.VnetHdrLen+40]...)
	binary.BigEndian.PutUint16(ack[iphdr.VnetHdrLen+2:], 40)
	fixSums(ack[iphdr.VnetHdrLen:])
	var c coalescer
	for _, tc := range []struct {
		name  string
		batch [][]byte
		heads map[int]int32 // head index: run length
	}{
		{"alternate", [][]byte{a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3]}, map[int]int32{0: 4, 1: 4}},
		{"ack-between", [][]byte{a[0], b[0], ack, a[1], b[1]}, map[int]int32{0: 1, 1: 2, 2: 1, 3: 1}},
		{"gap", [][]byte{a[0], b[0], a[2], a[3], b[1]}, map[int]int32{0: 1, 1: 2, 2: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.plan(tc.batch, iphdr.VnetHdrLen, DefaultVnetBufferSize)
			got := map[int]int32{}
			for i := range tc.batch {
				if c.head[i] {
					got[i] = c.count[i]
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.heads) {
				t.Errorf("runs (head: length) %v; want %v", got, tc.heads)
			}
		})
	}
}

// FuzzJoin protects planning and joining on arbitrary batches: two flows'
// trains from the input, interleaved by a mask, one byte of one packet
// changed (and its checksums set right), and the input's raw bytes as two
// more packets. plan and join never panic; every packet is in exactly one
// run; runs keep each flow's order (no packet of a TCP flow is written
// before an earlier one of the same flow); and every joined run of clean
// segments splits back into exactly its packets.
func FuzzJoin(f *testing.F) {
	f.Add(false, uint8(2), uint8(5), uint16(1448), uint16(100), uint8(2), uint16(30), uint8(1), uint16(0x5555), []byte{0x45, 0, 0, 40})
	f.Add(true, uint8(3), uint8(40), uint16(1440), uint16(1440), uint8(0), uint16(0), uint8(0), uint16(0), []byte{})
	f.Add(false, uint8(1), uint8(3), uint16(1), uint16(1), uint8(1), uint16(11), uint8(3), uint16(0xffff), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, v6 bool, ecn, n uint8, mss, last uint16, at uint8, pos uint16, val uint8, mask uint16, raw []byte) {
		s := segSpec{v6: v6, ecn: ecn & 3, n: int(n%24) + 1, mss: int(mss%1500) + 1, seq: uint32(pos) * 99991, id: pos, ts: val&1 == 1, df: val&2 == 2}
		s.last = int(last)%s.mss + 1
		a := s.segments()
		s.n = int(n%5) + 1
		b := s.segments()
		l4 := 20
		if v6 {
			l4 = 40
		}
		for _, p := range b {
			p[iphdr.VnetHdrLen+l4+1]++ // source port
			fixSums(p[iphdr.VnetHdrLen:])
		}
		var batch [][]byte
		for i := 0; len(a) > 0 || len(b) > 0; i++ {
			if len(b) == 0 || len(a) > 0 && mask>>(i%16)&1 == 1 {
				batch, a = append(batch, a[0]), a[1:]
			} else {
				batch, b = append(batch, b[0]), b[1:]
			}
		}
		ip := batch[int(at)%len(batch)][iphdr.VnetHdrLen:]
		ip[int(pos)%len(ip)] ^= val
		if ip[0]>>4 == 4 && ip[0]&15 >= 5 && int(ip[0]&15)*4+20 <= len(ip) || ip[0]>>4 == 6 && len(ip) >= 60 {
			fixSums(ip)
		}
		batch = append(batch, append(make([]byte, iphdr.VnetHdrLen), raw...), raw)
		var c coalescer
		c.plan(batch, iphdr.VnetHdrLen, DefaultVnetBufferSize)
		seen := make([]bool, len(batch))
		var order []int
		for i := range batch {
			if !c.head[i] {
				continue
			}
			var members []int
			for j := int32(i); j >= 0; j = c.next[j] {
				if seen[j] || int(j) < i {
					t.Fatalf("packet %d in two runs or before its head %d", j, i)
				}
				seen[j] = true
				members = append(members, int(j))
			}
			if len(members) != int(c.count[i]) {
				t.Fatalf("run at %d: %d members, count %d", i, len(members), c.count[i])
			}
			order = append(order, members...)
			if len(members) < 2 {
				continue
			}
			dst := make([]byte, DefaultVnetBufferSize)
			run := c.members(batch, i)
			jb := dst[:join(dst, run, iphdr.VnetHdrLen)]
			clean := true
			for _, p := range run {
				clean = clean && string(p[:iphdr.VnetHdrLen]) == string(make([]byte, iphdr.VnetHdrLen)) && sumsOK(p[iphdr.VnetHdrLen:])
			}
			if !clean {
				continue
			}
			back := splitBack(t, jb)
			if len(back) != len(run) {
				t.Fatalf("run of %d split back into %d", len(run), len(back))
			}
			for j := range run {
				if !bytes.Equal(back[j], run[j]) {
					t.Fatalf("run at %d: segment %d differs:\n got %x\nwant %x", i, j, back[j], run[j])
				}
			}
		}
		for i, ok := range seen {
			if !ok {
				t.Fatalf("packet %d in no run", i)
			}
		}
		// Each TCP flow's packets leave in their batch order.
		for x := range order {
			fx, tcpx, kx := tcpFlow(batch[order[x]], iphdr.VnetHdrLen)
			for y := x + 1; y < len(order); y++ {
				fy, tcpy, ky := tcpFlow(batch[order[y]], iphdr.VnetHdrLen)
				if order[y] < order[x] && tcpx && tcpy && (!kx || !ky || sameFlow(&fx, &fy)) {
					t.Fatalf("packet %d written before %d of its flow (order %v)", order[x], order[y], order)
				}
			}
		}
	})
}
