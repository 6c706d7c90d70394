package wgtun

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"sync/atomic"

	"golang.zx2c4.com/wireguard/tun"

	"github.com/aqmkit/aqmkit/aqm"
)

// errGone is the fake device's error once its input is closed: a device
// that failed (unplugged), as opposed to one closed by the wrapper.
var errGone = errors.New("fake tun: gone")

// fakeTUN is an in-memory batch TUN device. Packets sent on in are handed
// out by Read in bursts of up to batch; once in is closed and empty, Read
// fails with errGone. Close makes Read fail with os.ErrClosed.
type fakeTUN struct {
	batch  int
	in     chan []byte
	closed chan struct{}
	once   sync.Once
	events chan tun.Event

	delivered atomic.Uint64 // packets returned by Read
	closes    atomic.Int32

	mu      sync.Mutex
	written [][]byte
}

func newFakeTUN(batch, depth int) *fakeTUN {
	return &fakeTUN{batch: batch, in: make(chan []byte, depth), closed: make(chan struct{}), events: make(chan tun.Event, 1)}
}

func (f *fakeTUN) File() *os.File { return nil }

func (f *fakeTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	if offset < 4 {
		// The BSD and macOS devices write a 4-byte header before the
		// offset (and would panic); wireguard-go always passes 16.
		return 0, errors.New("fake tun: offset below 4")
	}
	var p []byte
	var ok bool
	select {
	case p, ok = <-f.in:
		if !ok {
			return 0, errGone
		}
	case <-f.closed:
		return 0, os.ErrClosed
	}
	n := 0
	limit := min(len(bufs), f.batch)
	for {
		sizes[n] = copy(bufs[n][offset:], p)
		n++
		if n == limit {
			break
		}
		select {
		case p, ok = <-f.in:
		default:
			ok = false
		}
		if !ok {
			break
		}
	}
	f.delivered.Add(uint64(n))
	return n, nil
}

func (f *fakeTUN) Write(bufs [][]byte, offset int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range bufs {
		f.written = append(f.written, append([]byte(nil), b[offset:]...))
	}
	return len(bufs), nil
}

func (f *fakeTUN) MTU() (int, error)        { return 1420, nil }
func (f *fakeTUN) Name() (string, error)    { return "fake0", nil }
func (f *fakeTUN) Events() <-chan tun.Event { return f.events }
func (f *fakeTUN) BatchSize() int           { return f.batch }
func (f *fakeTUN) Close() error {
	f.closes.Add(1)
	f.once.Do(func() { close(f.closed); close(f.events) })
	return nil
}

// pktSpec describes a test packet. The payload starts with the packet's id
// and the instant it was sent (8 bytes each), so the receiver can match it
// and measure its delay.
type pktSpec struct {
	v6      bool
	tcp     bool
	ecn     aqm.ECN
	sport   uint16
	size    int // whole IP packet, at least the headers plus 16
	options int // IPv4 option bytes (multiple of 4, at most 40)
	id      uint64
	sent    int64
}

// build writes the packet described by s, with a valid IPv4 header
// checksum.
func (s pktSpec) build() []byte {
	b := make([]byte, s.size)
	ihl := 20 + s.options
	hdr := ihl
	if s.v6 {
		hdr = 40
	}
	proto := byte(17)
	thl := 8
	if s.tcp {
		proto, thl = 6, 20
	}
	if s.v6 {
		// Traffic class DSCP 10 (AF11) and the ECN field, spread over
		// bytes 0 and 1: 0x28|ecn.
		b[0] = 0x62
		b[1] = (0x8 | byte(s.ecn)) << 4
		binary.BigEndian.PutUint16(b[4:], uint16(s.size-40))
		b[6] = proto
		b[7] = 64
		copy(b[8:24], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
		copy(b[24:40], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
	} else {
		b[0] = 0x40 | byte(ihl/4)
		b[1] = 10<<2 | byte(s.ecn) // DSCP AF11, which SetCE must not touch
		binary.BigEndian.PutUint16(b[2:], uint16(s.size))
		binary.BigEndian.PutUint16(b[4:], uint16(s.id))
		b[6] = 0x40 // DF
		b[8] = 64
		b[9] = proto
		copy(b[12:16], []byte{192, 0, 2, 1})
		copy(b[16:20], []byte{198, 51, 100, 7})
		for i := 20; i < ihl; i++ {
			b[i] = 1 // NOP options
		}
		binary.BigEndian.PutUint16(b[10:], checksum4(b[:ihl]))
	}
	binary.BigEndian.PutUint16(b[hdr:], s.sport)
	binary.BigEndian.PutUint16(b[hdr+2:], 443)
	binary.BigEndian.PutUint64(b[hdr+thl:], s.id)
	binary.BigEndian.PutUint64(b[hdr+thl+8:], uint64(s.sent))
	return b
}

// payloadOf returns the id and sending instant a test packet carries.
func payloadOf(b []byte) (id uint64, sent int64) {
	var hdr, thl int
	if b[0]>>4 == 6 {
		hdr = 40
		if b[6] == 6 {
			thl = 20
		} else {
			thl = 8
		}
	} else {
		hdr = int(b[0]&15) * 4
		if b[9] == 6 {
			thl = 20
		} else {
			thl = 8
		}
	}
	return binary.BigEndian.Uint64(b[hdr+thl:]), int64(binary.BigEndian.Uint64(b[hdr+thl+8:]))
}

// checksum4 computes an IPv4 header checksum from scratch (RFC 1071), with
// the checksum field taken as zero.
func checksum4(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ecnOf reads the ECN field of a test packet.
func ecnOf(b []byte) aqm.ECN {
	if b[0]>>4 == 6 {
		return aqm.ECN(b[1]>>4) & 3
	}
	return aqm.ECN(b[1] & 3)
}
