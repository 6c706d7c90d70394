package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// A reflector answers probes: a UDP echo server (udp:HOST:PORT, or a bare
// HOST:PORT) or any host that answers ICMP echo (icmp:HOST, which needs a
// raw socket: root or CAP_NET_RAW; IPv4 only).
type reflector struct {
	icmp bool
	addr string // HOST:PORT for UDP, HOST for ICMP
}

func (r reflector) String() string {
	if r.icmp {
		return "icmp:" + r.addr
	}
	return "udp:" + r.addr
}

// parseReflectors reads a comma-separated list of reflectors.
func parseReflectors(s string) ([]reflector, error) {
	var out []reflector
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
			continue
		case strings.HasPrefix(f, "icmp:"):
			h := strings.TrimPrefix(f, "icmp:")
			if h == "" || strings.Contains(h, ":") {
				return nil, fmt.Errorf("reflector %q: want icmp:HOST (an IPv4 host)", f)
			}
			out = append(out, reflector{icmp: true, addr: h})
		default:
			a := strings.TrimPrefix(f, "udp:")
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("reflector %q: want udp:HOST:PORT or icmp:HOST", f)
			}
			out = append(out, reflector{addr: a})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no reflector")
	}
	return out, nil
}

// Probe payloads: a magic word, the probe's sequence number and its send
// instant in nanoseconds since the prober's start, so that a reply needs
// no state to give its round trip.
const (
	probeMagic = 0x41514d50 // "AQMP"
	probeBytes = 32
)

// prober sends probes to one reflector and reads the replies.
type prober struct {
	r     reflector
	conn  net.Conn       // UDP
	raw   net.PacketConn // ICMP
	peer  net.Addr
	id    uint16
	start time.Time
	seq   uint32
	buf   []byte
}

func newProber(r reflector, start time.Time) (*prober, error) {
	p := &prober{r: r, start: start, buf: make([]byte, 1500)}
	if !r.icmp {
		c, err := net.Dial("udp", r.addr)
		if err != nil {
			return nil, fmt.Errorf("reflector %v: %w", r, err)
		}
		p.conn = c
		return p, nil
	}
	ip, err := net.ResolveIPAddr("ip4", r.addr)
	if err != nil {
		return nil, fmt.Errorf("reflector %v: %w", r, err)
	}
	c, err := net.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return nil, fmt.Errorf("reflector %v: an ICMP socket needs root or CAP_NET_RAW: %w", r, err)
	}
	p.raw, p.peer, p.id = c, ip, uint16(os.Getpid())
	return p, nil
}

func (p *prober) Close() error {
	if p.conn != nil {
		return p.conn.Close()
	}
	return p.raw.Close()
}

// payload writes a probe's payload into b (probeBytes long).
func (p *prober) payload(b []byte, now time.Time) {
	clear(b)
	binary.BigEndian.PutUint32(b[0:], probeMagic)
	binary.BigEndian.PutUint32(b[4:], p.seq)
	binary.BigEndian.PutUint64(b[8:], uint64(now.Sub(p.start)))
}

// send sends the next probe.
func (p *prober) send(now time.Time) error {
	p.seq++
	if p.conn != nil {
		b := p.buf[:probeBytes]
		p.payload(b, now)
		_, err := p.conn.Write(b)
		return err
	}
	b := p.buf[:8+probeBytes]
	b[0], b[1] = 8, 0 // echo request
	b[2], b[3] = 0, 0
	binary.BigEndian.PutUint16(b[4:], p.id)
	binary.BigEndian.PutUint16(b[6:], uint16(p.seq))
	p.payload(b[8:], now)
	binary.BigEndian.PutUint16(b[2:], checksum(b))
	_, err := p.raw.WriteTo(b, p.peer)
	return err
}

// read blocks for the next reply to one of this prober's probes and
// returns its round-trip time; other packets are skipped. It returns an
// error once the prober is closed.
func (p *prober) read(buf []byte) (time.Duration, error) {
	for {
		var b []byte
		if p.conn != nil {
			n, err := p.conn.Read(buf)
			if err != nil {
				return 0, err
			}
			b = buf[:n]
		} else {
			n, from, err := p.raw.ReadFrom(buf)
			if err != nil {
				return 0, err
			}
			// An echo reply (type 0) with our identifier, from the reflector.
			if n < 8+probeBytes || buf[0] != 0 || binary.BigEndian.Uint16(buf[4:]) != p.id || from.String() != p.peer.String() {
				continue
			}
			b = buf[8:n]
		}
		if rtt, ok := p.rtt(b, time.Now()); ok {
			return rtt, nil
		}
	}
}

// rtt reads a reply's payload: its round trip, or false if it is not one
// of this prober's probes.
func (p *prober) rtt(b []byte, now time.Time) (time.Duration, bool) {
	if len(b) < probeBytes || binary.BigEndian.Uint32(b) != probeMagic {
		return 0, false
	}
	sent := time.Duration(binary.BigEndian.Uint64(b[8:]))
	d := now.Sub(p.start) - sent
	if sent < 0 || d < 0 {
		return 0, false
	}
	return d, true
}

// checksum is the Internet checksum (RFC 1071) of b.
func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
