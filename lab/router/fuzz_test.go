package router

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// script is a device that delivers a fixed list of packets, a few per read,
// and then blocks until its read deadline stops it. It closes idle at the
// first read after the last packet: the reader has then offered them all.
type script struct {
	pkts     [][]byte
	per      int
	mu       sync.Mutex
	stop     chan struct{}
	once     sync.Once
	idle     chan struct{}
	idleOnce sync.Once
}

func (s *script) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	s.mu.Lock()
	if len(s.pkts) == 0 {
		s.mu.Unlock()
		s.idleOnce.Do(func() { close(s.idle) })
		<-s.stop
		return 0, os.ErrDeadlineExceeded
	}
	n := 0
	for n < len(bufs) && n < s.per && len(s.pkts) > 0 {
		sizes[n] = len(s.pkts[0]) // a longer packet arrives cut, its size told
		copy(bufs[n], s.pkts[0])
		s.pkts = s.pkts[1:]
		n++
	}
	s.mu.Unlock()
	return n, nil
}

func (s *script) WriteBatch(pkts [][]byte) (int, error) { return len(pkts), nil }

func (s *script) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		s.once.Do(func() { close(s.stop) })
	}
	return nil
}

// fuzzAQMs are the queues the fuzz target picks from.
var fuzzAQMs = []string{"fifo", "fq-codel", "cake", "codel"}

// decodeFuzz turns fuzz bytes into a router configuration and a packet
// sequence. The first byte picks the options: bit 0 VnetHdr, bit 1 a rate,
// bits 2-3 the queue, bit 4 a delay line, bits 5-7 a write error every
// that many packets plus one (none for 0). Then each packet is a two-byte
// big-endian length (cut to what is left) and its bytes, a virtio-net
// header first with VnetHdr.
func decodeFuzz(data []byte) (Config, uint64, [][]byte) {
	if len(data) == 0 {
		return Config{AQM: "fifo"}, 0, nil
	}
	o := data[0]
	cfg := Config{
		AQM: fuzzAQMs[o>>2&3], VnetHdr: o&1 != 0, Buffers: 48, ReadBatch: 8,
		MaxQueues: 4, Drain: -1, LimitPackets: 64,
	}
	if cfg.VnetHdr {
		cfg.BufferSize = 16384
	}
	if o&2 != 0 {
		cfg.Rate = 50 * aqm.Mbit
	}
	if o&16 != 0 {
		cfg.Delay = time.Millisecond
	}
	every := uint64(0)
	if e := o >> 5; e > 0 {
		every = uint64(e) + 1
	}
	var pkts [][]byte
	for rest := data[1:]; len(rest) >= 2 && len(pkts) < 256; {
		n := min(int(binary.BigEndian.Uint16(rest)), len(rest)-2)
		pkts = append(pkts, rest[2:2+n])
		rest = rest[2+n:]
	}
	return cfg, every, pkts
}

// encodeFuzz is decodeFuzz's inverse, for seeds.
func encodeFuzz(opts byte, pkts ...[]byte) []byte {
	b := []byte{opts}
	for _, p := range pkts {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return b
}

// FuzzRouter protects the router's packet path against any input: fuzzed
// packet sequences, with and without virtio-net (GSO) headers, through any
// of four queues, shaped or not, with a delay line or not, and with write
// errors injected (EIO, ENOBUFS, EAGAIN). Nothing panics, every packet read
// is accounted for, and every buffer is back in its pool after shutdown.
func FuzzRouter(f *testing.F) {
	v4 := ipv4("10.201.1.2", "10.201.2.2", 1, 120, 1)
	v6 := ipv6("fd00::1", "fd00:2::1", 90)
	vnet := func(p []byte) []byte { return append(make([]byte, 10), p...) }
	bad := ipv4("10.201.1.2", "10.201.2.2", 0, 60, 0)
	bad[0] = 0x43
	frag := ipv4("10.201.1.2", "10.201.2.2", 0, 100, 0)
	frag[6] = 0x20 // more fragments
	f.Add(encodeFuzz(0, v4, v6, bad, frag, nil, []byte{0x60}))
	f.Add(encodeFuzz(2|1<<2|1<<5, v4, v4, v6, v4))
	f.Add(encodeFuzz(2|2<<2|16|2<<5, v4, v6, frag))
	f.Add(encodeFuzz(1|2, superTCP4("10.201.1.2", "10.201.2.2", 1, 1000, 4, 1), vnet(v4), vnet(v6), []byte{1, 2, 3}))
	f.Add(encodeFuzz(1|3<<2|1<<5, superTCP4("10.201.1.2", "10.201.2.2", 0, 500, 20, 2), vnet(bad)))
	f.Fuzz(fuzzBody)
}

// fuzzBody is FuzzRouter's body: one input through a fresh router.
func fuzzBody(t *testing.T, data []byte) {
	cfg, every, pkts := decodeFuzz(data)
	// A stall is a failure too: the fuzzer has no time limit per input.
	watchdog := time.AfterFunc(20*time.Second, func() {
		buf := make([]byte, 1<<20)
		panic("router stalled on this input:\n" + string(buf[:runtime.Stack(buf, true)]))
	})
	defer watchdog.Stop()
	dev := &script{pkts: pkts, per: 3, stop: make(chan struct{}), idle: make(chan struct{})}
	fd := NewFaultDevice(dev)
	if every > 0 {
		fd.FailWrites(every, syscall.EIO, syscall.ENOBUFS, syscall.EAGAIN)
	}
	r, err := New(cfg, fd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-dev.idle
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	s := r.Stats()
	// A split super-packet is read as its segments.
	if !s.Conserved() || s.Read.Packets < uint64(len(pkts)) || s.Queued != 0 {
		t.Fatalf("conserved %v, read %d of %d, queued %d", s.Conserved(), s.Read.Packets, len(pkts), s.Queued)
	}
	if s.Dropped.WriteError != fd.Injected() {
		t.Fatalf("write errors %d, injected %d", s.Dropped.WriteError, fd.Injected())
	}
	if s.BuffersInUse != 0 {
		t.Fatalf("%d buffers out of the pools after shutdown", s.BuffersInUse)
	}
}
