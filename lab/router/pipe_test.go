package router

import (
	"encoding/binary"
	"net/netip"
	"os"
	"sync"
	"time"
)

// pipe is an in-memory Device: packets sent on in are what the router reads;
// onWrite sees every packet the router writes. SetReadDeadline with a past
// instant stops reads for good (all the router asks of it).
type pipe struct {
	in      chan []byte
	stop    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	onWrite func(p []byte) bool // false: refuse the packet (a write error)
}

func newPipe(depth int, onWrite func([]byte) bool) *pipe {
	return &pipe{in: make(chan []byte, depth), stop: make(chan struct{}), onWrite: onWrite}
}

func (p *pipe) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	select {
	case <-p.stop:
		return 0, os.ErrDeadlineExceeded
	case b := <-p.in:
		sizes[0] = copy(bufs[0], b) // cut to the buffer, as a TUN read is
	}
	n := 1
	for n < len(bufs) && n < len(sizes) {
		select {
		case b := <-p.in:
			sizes[n] = copy(bufs[n], b)
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

func (p *pipe) WriteBatch(pkts [][]byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range pkts {
		if p.onWrite != nil && !p.onWrite(b) {
			return i, os.ErrInvalid
		}
	}
	return len(pkts), nil
}

func (p *pipe) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		p.once.Do(func() { close(p.stop) })
	}
	return nil
}

// ipv4 builds an IPv4/UDP packet of size bytes (at least 28) from src to dst
// with the given ECN codepoint, a valid header checksum, and seq in the
// first payload bytes.
func ipv4(src, dst string, ecn uint8, size int, seq uint32) []byte {
	p := make([]byte, max(size, 28))
	p[0], p[1], p[8], p[9] = 0x45, ecn&3, 64, 17
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	binary.BigEndian.PutUint16(p[10:], ^fold(sum(p[:20])))
	binary.BigEndian.PutUint16(p[20:], 4000)
	binary.BigEndian.PutUint16(p[22:], 5000)
	binary.BigEndian.PutUint16(p[24:], uint16(len(p)-20))
	if len(p) >= 32 {
		binary.BigEndian.PutUint32(p[28:], seq)
	}
	return p
}

// ipv6 builds an IPv6/UDP packet of size bytes (at least 48).
func ipv6(src, dst string, size int) []byte {
	p := make([]byte, max(size, 48))
	p[0], p[6], p[7] = 0x60, 17, 64
	binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	binary.BigEndian.PutUint16(p[40:], 4000)
	binary.BigEndian.PutUint16(p[42:], 5000)
	binary.BigEndian.PutUint16(p[44:], uint16(len(p)-40))
	return p
}

func sum(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// headerOK reports whether an IPv4 header's checksum verifies.
func headerOK(p []byte) bool { return fold(sum(p[:int(p[0]&15)*4])) == 0xffff }
