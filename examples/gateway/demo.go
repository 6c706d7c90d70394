package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// The demo's packets carry these addresses inside their IP headers only:
// they travel as UDP payload between local sockets on 127.0.0.1, so none
// is ever sent to.
var (
	server = [4]byte{203, 0, 113, 1}  // a server on the Internet
	hostA  = [4]byte{192, 168, 1, 10} // a device with one download flow
	hostB  = [4]byte{192, 168, 1, 20} // a device with eight
)

// udp4 builds an IPv4 UDP packet of size bytes (IP length) with the given
// addresses, ports and DS byte, and a valid header checksum.
func udp4(src, dst [4]byte, sport, dport uint16, ds byte, size int) []byte {
	b := make([]byte, size)
	b[0], b[1] = 0x45, ds
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	b[8], b[9] = 64, 17
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[10:], ^uint16(sum))
	binary.BigEndian.PutUint16(b[20:], sport)
	binary.BigEndian.PutUint16(b[22:], dport)
	binary.BigEndian.PutUint16(b[24:], uint16(size-20))
	return b
}

// demoSink counts the bytes that reach it per destination host of the IP
// packets it receives.
type demoSink struct {
	conn *net.UDPConn
	mu   sync.Mutex
	got  map[[4]byte]int
	done chan struct{}
}

func newDemoSink() (*demoSink, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = c.SetReadBuffer(4 << 20)
	s := &demoSink{conn: c, got: map[[4]byte]int{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, maxPacket)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if n >= 20 {
				s.mu.Lock()
				s.got[[4]byte(buf[16:20])] += n
				s.mu.Unlock()
			}
		}
	}()
	return s, nil
}

func (s *demoSink) addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (s *demoSink) snapshot() map[[4]byte]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[[4]byte]int, len(s.got))
	for k, v := range s.got {
		m[k] = v
	}
	return m
}

func (s *demoSink) close() { s.conn.Close(); <-s.done }

// demo sends, for d, two devices' download traffic through the gateway at
// gw: device A one flow at 4/3 of rate, device B eight flows at 1/5 of rate
// each, all unresponsive, 1000-byte packets; then it prints what each device
// received over the second half. CAKE's per-host fairness gives each about
// half the link, where per-flow fairness would give A a ninth.
func demo(ctx context.Context, gw netip.AddrPort, sink *demoSink, bitsPerSecond float64, d time.Duration, out io.Writer) {
	const size = 1000
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(gw))
	if err != nil {
		fmt.Fprintln(out, "demo:", err)
		return
	}
	defer c.Close()
	type flow struct {
		pkt  []byte
		gap  time.Duration
		next time.Duration
	}
	pps := bitsPerSecond / 8 / size
	flows := []*flow{{pkt: udp4(server, hostA, 443, 50000, 0, size), gap: time.Duration(float64(time.Second) / (pps * 4 / 3))}}
	for i := range 8 {
		flows = append(flows, &flow{pkt: udp4(server, hostB, 443, uint16(50001+i), 0, size), gap: time.Duration(float64(time.Second) / (pps / 5))})
	}
	start := time.Now()
	var atHalf map[[4]byte]int
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		el := time.Since(start)
		if el >= d {
			break
		}
		if atHalf == nil && el >= d/2 {
			atHalf = sink.snapshot()
		}
		wake := d
		for _, f := range flows {
			for f.next <= el {
				_, _ = c.Write(f.pkt)
				f.next += f.gap
			}
			wake = min(wake, f.next)
		}
		timer.Reset(wake - el)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
	end := sink.snapshot()
	if atHalf == nil {
		atHalf = map[[4]byte]int{}
	}
	half := (d / 2).Seconds()
	a := float64(8*(end[hostA]-atHalf[hostA])) / half
	b := float64(8*(end[hostB]-atHalf[hostB])) / half
	fmt.Fprintf(out, "demo: device A (1 flow at %.1f Mbit/s) received %.2f Mbit/s; device B (8 flows at %.1f Mbit/s each) received %.2f Mbit/s; link %.2f Mbit/s\n",
		bitsPerSecond*4/3/1e6, a/1e6, bitsPerSecond/5/1e6, b/1e6, bitsPerSecond/1e6)
}
