package router

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
	"github.com/aqmkit/aqmkit/front"
	"github.com/aqmkit/aqmkit/iphdr"
)

// superTCP4 builds a virtio-net header and an IPv4 TCP super-packet of
// segs segments of mss bytes (the last one shorter by 100) with the given
// ECN codepoint, its checksum left as a partial sum would be (here: a
// made-up value the router must not trust).
func superTCP4(src, dst string, ecn uint8, mss, segs int, seq uint32) []byte {
	pay := mss*segs - 100
	p := make([]byte, 10+40+pay)
	hdr := iphdr.VnetHdr{Flags: iphdr.VnetNeedsCsum, GSOType: iphdr.GSOTCPv4, HdrLen: 40, GSOSize: uint16(mss), CsumStart: 20, CsumOffset: 16}
	_ = hdr.Put(p)
	ip := p[10:]
	ip[0], ip[1], ip[8], ip[9] = 0x45, ecn&3, 64, 6
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	binary.BigEndian.PutUint16(ip[4:], uint16(seq))
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum(ip[:20])))
	t := ip[20:]
	binary.BigEndian.PutUint16(t[0:], 40000)
	binary.BigEndian.PutUint16(t[2:], 5201)
	binary.BigEndian.PutUint32(t[4:], seq*100000)
	t[12], t[13] = 5<<4, 0x18 // PSH, ACK
	binary.BigEndian.PutUint16(t[16:], 0x1234)
	for i := range pay {
		t[20+i] = byte(i * 13)
	}
	return p
}

// tcpOK reports whether an IPv4 TCP packet's header and TCP checksums
// verify.
func tcpOK(ip []byte) bool {
	if !headerOK(ip) || len(ip) < 40 {
		return false
	}
	t := ip[20:]
	ps := sum(ip[12:20]) + 6 + uint32(len(t))
	b := t
	if len(b)%2 == 1 {
		b = append(append([]byte(nil), t...), 0)
	}
	return fold(ps+sum(b)) == 0xffff
}

// TestVnetSplit protects splitting: with a virtio-net header on the device
// and GSOSplit, every super-packet leaves as its
// segments, each behind a zero (GSONone) header with valid IP and TCP
// checksums, the counters count segments, and every buffer of both pools
// is back after shutdown (joining on write is off here; coalesce_test.go
// tests it).
func TestVnetSplit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var segs, bad, hdr int
		p := newPipe(64, func(b []byte) bool {
			mu.Lock()
			defer mu.Unlock()
			segs++
			if !bytes.Equal(b[:10], make([]byte, 10)) {
				hdr++
			}
			if len(b) > 10+1500 || !tcpOK(b[10:]) {
				bad++
			}
			return true
		})
		r, stop := startRouter(t, Config{AQM: "fifo", Rate: 100 * aqm.Mbit, VnetHdr: true, GSO: front.GSOSplit, DisableCoalesce: true, Clock: clock.Since(time.Now())}, p)
		for i := range 20 {
			p.in <- superTCP4("10.201.1.2", "10.201.2.2", 2, 1448, 2+i%10, uint32(i))
			time.Sleep(5 * time.Millisecond)
		}
		want := 0
		for i := range 20 {
			want += 2 + i%10
		}
		waitRead(r, uint64(want))
		time.Sleep(100 * time.Millisecond)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		s := r.Stats()
		mu.Lock()
		defer mu.Unlock()
		if segs != want || bad != 0 || hdr != 0 || s.Written.Packets != uint64(want) || s.Dropped.Total != 0 {
			t.Errorf("written %d segments (stats %d, dropped %d), %d bad, %d with a header; want %d, none bad", segs, s.Written.Packets, s.Dropped.Total, bad, hdr, want)
		}
		if !s.Conserved() {
			t.Errorf("not conserved: %+v", s)
		}
		if r.pool.inUse() != 0 || r.seg.inUse() != 0 {
			t.Errorf("buffers out: %d read, %d segment", r.pool.inUse(), r.seg.inUse())
		}
	})
}

// TestVnetKeep protects keeping: unshaped, a super-packet is written back
// as it was read, header and all, as one packet.
func TestVnetKeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got [][]byte
		p := newPipe(64, func(b []byte) bool {
			mu.Lock()
			got = append(got, append([]byte(nil), b...))
			mu.Unlock()
			return true
		})
		r, stop := startRouter(t, Config{AQM: "fq-codel", VnetHdr: true, Clock: clock.Since(time.Now())}, p)
		var sent [][]byte
		for i := range 10 {
			b := superTCP4("10.201.1.2", "10.201.2.2", 0, 1400, 1+i*4, uint32(i))
			sent = append(sent, b)
			p.in <- b
		}
		waitRead(r, 10)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != len(sent) {
			t.Fatalf("wrote %d packets, want %d", len(got), len(sent))
		}
		for i := range sent {
			if !bytes.Equal(got[i], sent[i]) {
				t.Errorf("packet %d changed on the way", i)
			}
		}
	})
}

// TestVnetKeepCE protects marks on kept super-packets: with GSOKeep and a
// congested CoDel, a marked super-packet leaves with CE in its IP header
// (checksum right), so that each of its segments carries CE, and an
// unmarked one's segments carry none: a mark covers exactly its own
// segments, since the router never coalesces packets.
func TestVnetKeepCE(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var ceSegs, otherCE, allSegs, marked int
		bufs := make([][]byte, 64)
		for i := range bufs {
			bufs[i] = make([]byte, 2048)
		}
		sizes := make([]int, 64)
		p := newPipe(4096, func(b []byte) bool {
			mu.Lock()
			defer mu.Unlock()
			h, err := iphdr.ParseVnetHdr(b)
			if err != nil {
				t.Errorf("bad header: %v", err)
				return true
			}
			ce := b[11]&3 == 3
			if ce {
				marked++
			}
			n, err := iphdr.SplitGSO(b[10:], h, bufs, sizes)
			if err != nil {
				t.Errorf("split: %v", err)
			}
			for i := range n {
				allSegs++
				s := bufs[i][:sizes[i]]
				switch {
				case s[1]&3 == 3 && ce:
					ceSegs++
				case s[1]&3 == 3:
					otherCE++
				}
				if !tcpOK(s) {
					t.Errorf("segment %d: bad checksum", i)
				}
			}
			return true
		})
		r, stop := startRouter(t, Config{AQM: "codel", Rate: 5 * aqm.Mbit, VnetHdr: true, GSO: front.GSOKeep, Clock: clock.Since(time.Now())}, p)
		for i := range 200 { // 4 segments of 1000 bytes every 3 ms: about 10 Mb/s into 5
			p.in <- superTCP4("10.201.2.2", "10.201.1.2", 2, 1000, 4, uint32(i))
			time.Sleep(3 * time.Millisecond)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		s := r.Stats()
		mu.Lock()
		defer mu.Unlock()
		// The queue counts marks in wire packets, the router its writes in
		// packets and in the segments they cover.
		if s.Marked == 0 || uint64(marked) != s.CEWritten || s.CEWrittenSegments != s.Marked {
			t.Errorf("marked %d segments, ce_written %d (%d segments), CE super-packets seen %d; want marks = CE segments, CE written = seen", s.Marked, s.CEWritten, s.CEWrittenSegments, marked)
		}
		if ceSegs != 4*marked || otherCE != 0 || s.CEWrittenSegments != uint64(ceSegs) || allSegs != 4*int(s.Written.Packets) {
			t.Errorf("%d CE segments for %d marked super-packets, %d CE segments of unmarked ones, %d segments in all for %d written, ce_written_segments %d", ceSegs, marked, otherCE, allSegs, s.Written.Packets, s.CEWrittenSegments)
		}
	})
}

// TestVnetBadHeaders protects the counters on the offload path: a read
// shorter than the virtio-net header counts as truncated, a header no
// sender produces as not IP, and a super-packet whose header does not match
// it (a TCP kind on UDP) is forwarded whole, as the kernel will judge it;
// every packet read is accounted for.
func TestVnetBadHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var written int
		p := newPipe(64, func(b []byte) bool { mu.Lock(); written++; mu.Unlock(); return true })
		r, stop := startRouter(t, Config{AQM: "fifo", Rate: 100 * aqm.Mbit, VnetHdr: true, Clock: clock.Since(time.Now())}, p)
		p.in <- []byte{1, 2, 3}
		bad := superTCP4("10.201.1.2", "10.201.2.2", 0, 1000, 3, 1)
		bad[0] = 0x08
		p.in <- bad
		mismatch := append(make([]byte, 10), ipv4("10.201.1.2", "10.201.2.2", 0, 3000, 1)...)
		_ = (iphdr.VnetHdr{GSOType: iphdr.GSOTCPv4, GSOSize: 1000}).Put(mismatch)
		p.in <- mismatch
		waitRead(r, 3)
		time.Sleep(50 * time.Millisecond)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		s := r.Stats()
		mu.Lock()
		defer mu.Unlock()
		if s.Dropped.Truncated != 1 || s.Dropped.NotIP != 1 || written != 1 || s.Split != 0 || !s.Conserved() {
			t.Errorf("truncated %d, not IP %d, written %d, split %d, conserved %v; want 1, 1, 1, 0, true", s.Dropped.Truncated, s.Dropped.NotIP, written, s.Split, s.Conserved())
		}
	})
}

// TestVnetKeepRate protects the rate on kept super-packets: the router
// charges each one the bytes its segments put on the wire (one set of
// IP and TCP headers per segment), so that a backlogged direction sends
// the rate in wire bytes, with the front's bucket or CAKE's own shaper,
// and its written-bytes counter agrees. Charged only its own length, a
// super-packet of 20 segments of 200 bytes would pay 3940 bytes for 4700
// on the wire, 19 % over the rate.
func TestVnetKeepRate(t *testing.T) {
	for _, name := range []string{"fifo", "fq-codel", "cake"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var wire atomic.Uint64
				p := newPipe(4096, func(b []byte) bool {
					h, err := iphdr.ParseVnetHdr(b)
					if err != nil {
						t.Errorf("bad header written: %v", err)
						return true
					}
					w, err := iphdr.GSOWireSize(b[10:], h)
					if err != nil {
						t.Errorf("bad super-packet written: %v", err)
					}
					wire.Add(uint64(w))
					return true
				})
				r, stop := startRouter(t, Config{AQM: name, Rate: 2 * aqm.Mbit, VnetHdr: true, GSO: front.GSOKeep, Clock: clock.Since(time.Now())}, p)
				// About 4 Mb/s of wire bytes into 2 Mb/s for 1.5 s; count
				// what leaves in the last second, backlogged.
				var base uint64
				for i := range 166 {
					if i == 55 {
						base = wire.Load()
					}
					p.in <- superTCP4("10.201.1.2", "10.201.2.2", 0, 200, 20, uint32(i))
					time.Sleep(9 * time.Millisecond)
				}
				got := wire.Load() - base
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				const want = 250_000 // 2 Mb/s for 1 s
				if got < want*95/100 || got > want*105/100 {
					t.Errorf("sent %d wire bytes in 1 s at 2 Mb/s, want %d ± 5%%", got, want)
				}
				s := r.Stats()
				if s.Written.Bytes != wire.Load() {
					t.Errorf("written bytes %d, the device saw %d wire bytes", s.Written.Bytes, wire.Load())
				}
				if s.Read.Bytes != s.Written.Bytes+uint64(4700)*(s.Read.Packets-s.Written.Packets) {
					t.Errorf("read %d bytes in %d packets, written %d in %d: a super-packet is not 4700 wire bytes on both sides", s.Read.Bytes, s.Read.Packets, s.Written.Bytes, s.Written.Packets)
				}
			})
		})
	}
}
