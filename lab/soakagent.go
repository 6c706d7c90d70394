package lab

// The soak's agent runs in the router's namespace, where the router's
// metrics and control endpoint listen on loopback and its TUN device is:
// it samples the router, changes its queue and rate, and injects malformed
// packets straight into the TUN's transmit path (an AF_PACKET socket on the
// device), the only way such packets reach the router: a packet from another
// namespace passes the router namespace's IP input first, which drops bad
// headers before they could be routed to the TUN.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aqmkit/aqmkit/aqm"
)

// SoakSample is one sample of the router during a soak.
type SoakSample struct {
	T     float64 `json:"t"` // seconds since the soak's start
	RSSMB float64 `json:"rss_mb"`
	// HeapMB is the router's live heap at its last garbage collection,
	// BufferMB the packet buffers its pools made (all kept for reuse, and
	// part of the live heap).
	HeapMB     float64 `json:"heap_mb"`
	BufferMB   float64 `json:"buffer_mb"`
	Goroutines int     `json:"goroutines"`
	Buffers    int     `json:"buffers_in_use"`
	Read       uint64  `json:"read"`
	Written    uint64  `json:"written"`
	Dropped    uint64  `json:"dropped"`
	Malformed  uint64  `json:"malformed_dropped"`
	Queued     uint64  `json:"queued"`
	Conserved  bool    `json:"conserved"`
	AQM        string  `json:"aqm"`
	Rate       string  `json:"rate"`
	Injected   uint64  `json:"injected"`  // malformed packets the agent sent so far
	Reconfigs  uint64  `json:"reconfigs"` // changes the router accepted so far
	Refused    uint64  `json:"refused"`   // changes it refused (the agent sends only good ones)
}

// soakAgentSpec is the agent's command line.
type soakAgentSpec struct {
	metrics   string
	dev       string
	span      time.Duration
	sample    time.Duration
	reconfig  time.Duration
	malformed int // per second
	rate      int // Mb/s, the middle of the rates it sets
	epoch     time.Time
	seed      uint64
}

// agentSoak is the soak role: see the file's comment. It prints one JSON
// SoakSample per line.
func agentSoak(args []string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var s soakAgentSpec
	var epoch int64
	fs.StringVar(&s.metrics, "metrics", "127.0.0.1:9310", "the router's metrics address")
	fs.StringVar(&s.dev, "dev", "tun0", "the router's TUN device")
	fs.DurationVar(&s.span, "for", time.Minute, "how long")
	fs.DurationVar(&s.sample, "sample", 2*time.Second, "sampling interval")
	fs.DurationVar(&s.reconfig, "reconfig", 5*time.Second, "interval between queue and rate changes")
	fs.IntVar(&s.malformed, "malformed", 25, "malformed packets per second")
	fs.IntVar(&s.rate, "rate", 50, "rate in Mb/s around which the changes move")
	fs.Int64Var(&epoch, "epoch", 0, "the soak's start, Unix ns")
	fs.Uint64Var(&s.seed, "seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s.epoch = time.Unix(0, epoch)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, s.span)
	defer cancel2()
	return runSoakAgent(ctx, s, os.Stdout)
}

func runSoakAgent(ctx context.Context, s soakAgentSpec, out io.Writer) error {
	var injected, reconfigs, refused atomicCounter
	client := &http.Client{Timeout: 5 * time.Second}
	base := "http://" + s.metrics
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		injectMalformed(ctx, s, &injected)
	}()
	go func() {
		defer wg.Done()
		// Queues that isolate flows, so that the probe's latency measures
		// the router and not a single queue's standing backlog under the
		// flood.
		aqms := []string{"cake", "fq-pie", "fq-cobalt", "fq-codel"}
		rng := rand.New(rand.NewPCG(s.seed, 2))
		t := time.NewTicker(s.reconfig)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// Mostly rate changes around the rate; every third change a new queue.
			v := url.Values{"rate": {fmt.Sprintf("%dmbit", s.rate-5+rng.IntN(11))}}
			if i%3 == 0 {
				v.Set("aqm", aqms[(i/3)%len(aqms)])
			}
			resp, err := client.PostForm(base+"/config", v)
			if err != nil {
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				reconfigs.add(1)
			} else {
				refused.add(1)
			}
		}
	}()
	enc := json.NewEncoder(out)
	t := time.NewTicker(s.sample)
	defer t.Stop()
	var lastErr string
	for {
		if smp, err := sampleRouter(client, base); err == nil {
			smp.T = time.Since(s.epoch).Seconds()
			smp.Injected, smp.Reconfigs, smp.Refused = injected.load(), reconfigs.load(), refused.load()
			enc.Encode(smp)
		} else if err.Error() != lastErr {
			lastErr = err.Error()
			fmt.Fprintln(os.Stderr, "sample:", err)
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-t.C:
		}
	}
}

type atomicCounter struct {
	mu sync.Mutex
	n  uint64
}

func (c *atomicCounter) add(d uint64) { c.mu.Lock(); c.n += d; c.mu.Unlock() }
func (c *atomicCounter) load() uint64 { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// sampleRouter reads the router's expvar page and its RSS.
func sampleRouter(c *http.Client, base string) (SoakSample, error) {
	var smp SoakSample
	resp, err := c.Get(base + "/debug/vars")
	if err != nil {
		return smp, err
	}
	defer resp.Body.Close()
	var v struct {
		Router struct {
			AQM     string                   `json:"aqm"`
			Rate    aqm.Rate                 `json:"rate"`
			Read    struct{ Packets uint64 } `json:"read"`
			Written struct{ Packets uint64 } `json:"written"`
			Dropped struct {
				Total     uint64 `json:"total"`
				NotIP     uint64 `json:"not_ip"`
				Truncated uint64 `json:"truncated"`
				BadHeader uint64 `json:"bad_header"`
			} `json:"dropped"`
			Queued  uint64 `json:"queued"`
			Buffers int    `json:"buffers_in_use"`
			BufferB int64  `json:"buffer_bytes"`
		} `json:"aqmrouter"`
		HeapLive   uint64 `json:"heap_live_bytes"`
		Goroutines int    `json:"goroutines"`
		PID        int    `json:"pid"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return smp, err
	}
	r := v.Router
	smp.AQM, smp.Rate = r.AQM, r.Rate.String()
	smp.Read, smp.Written, smp.Dropped, smp.Queued = r.Read.Packets, r.Written.Packets, r.Dropped.Total, r.Queued
	smp.Malformed = r.Dropped.NotIP + r.Dropped.Truncated + r.Dropped.BadHeader
	smp.Conserved = smp.Read == smp.Written+smp.Dropped+smp.Queued
	smp.Buffers, smp.Goroutines = r.Buffers, v.Goroutines
	smp.HeapMB, smp.BufferMB = float64(v.HeapLive)/(1<<20), float64(r.BufferB)/(1<<20)
	if v.PID > 0 {
		smp.RSSMB = rssMB(v.PID)
	}
	return smp, nil
}

// rssMB reads a process's resident set size in MB from /proc.
func rssMB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// injectMalformed sends s.malformed packets a second into the device's
// transmit path until ctx ends, counting those the kernel took.
func injectMalformed(ctx context.Context, s soakAgentSpec, n *atomicCounter) {
	if s.malformed <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(s.seed, 3))
	var fd = -1
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	t := time.NewTicker(time.Second / time.Duration(s.malformed))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if fd < 0 {
			var err error
			if fd, err = packetSocket(s.dev); err != nil {
				fd = -1
				continue
			}
		}
		p, proto := Malformed(rng, i)
		ifi, err := net.InterfaceByName(s.dev)
		if err != nil {
			continue
		}
		sa := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Protocol: htons(proto)}
		if err := unix.Sendto(fd, p, 0, sa); err == nil {
			n.add(1)
		} else if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO) {
			unix.Close(fd)
			fd = -1
		}
	}
}

func packetSocket(dev string) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // send only: no protocol
	if err != nil {
		return -1, err
	}
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Malformed returns the i-th malformed packet of a soak and its EtherType:
// truncated headers, bad IHL, bad total lengths, bad versions, IPv6
// extension-header chains, fragments, zero-length, oversize (a total length
// far past the bytes) and random bytes, in turn, to destinations in the
// lab's prefixes.
func Malformed(rng *rand.Rand, i int) ([]byte, uint16) {
	const ipv4Type, ipv6Type = 0x0800, 0x86dd
	v4 := func(size int) []byte {
		p := make([]byte, size)
		p[0], p[8], p[9] = 0x45, 64, 17
		binary.BigEndian.PutUint16(p[2:], uint16(size))
		copy(p[12:16], []byte{10, 201, 1, 2})
		copy(p[16:20], []byte{10, 201, 2, 2})
		for j := 20; j < size; j++ {
			p[j] = byte(rng.Uint32())
		}
		return p
	}
	switch i % 10 {
	case 0: // truncated header
		return v4(60)[:1+rng.IntN(19)], ipv4Type
	case 1: // IHL below 5
		p := v4(60)
		p[0] = 0x40 | byte(rng.IntN(5))
		return p, ipv4Type
	case 2: // total length shorter than the header
		p := v4(60)
		binary.BigEndian.PutUint16(p[2:], uint16(rng.IntN(20)))
		return p, ipv4Type
	case 3: // bad version
		p := v4(60)
		p[0] = byte(rng.IntN(16))<<4 | 5
		if p[0]>>4 == 4 || p[0]>>4 == 6 {
			p[0] = 0x75
		}
		return p, ipv4Type
	case 4: // IPv6 with a chain of extension headers (hop-by-hop, routing, destination options, fragment)
		chain := []byte{0, 43, 60, 44}
		payload := 8 * len(chain)
		p := make([]byte, 40+payload+8)
		p[0] = 0x60
		binary.BigEndian.PutUint16(p[4:], uint16(payload+8))
		p[6], p[7] = chain[0], 64
		copy(p[8:24], []byte{0xfd, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2})
		copy(p[24:40], []byte{0xfd, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2})
		for j := range chain {
			next := byte(17)
			if j+1 < len(chain) {
				next = chain[j+1]
			}
			p[40+8*j] = next
		}
		return p, ipv6Type
	case 5: // a fragment: more fragments, an offset
		p := v4(200)
		binary.BigEndian.PutUint16(p[6:], 0x2000|uint16(rng.IntN(100)))
		return p, ipv4Type
	case 6: // zero length
		return []byte{}, ipv4Type
	case 7: // oversize: a total length far past the bytes
		p := v4(100)
		binary.BigEndian.PutUint16(p[2:], 60000)
		return p, ipv4Type
	case 8: // IPv6 cut short, its payload length past the end
		p := make([]byte, 40+rng.IntN(40))
		p[0] = 0x60
		binary.BigEndian.PutUint16(p[4:], 1400)
		return p, ipv6Type
	}
	p := make([]byte, 1+rng.IntN(200)) // random bytes, never starting like IPv4 or IPv6
	for j := range p {
		p[j] = byte(rng.Uint32())
	}
	if v := p[0] >> 4; v == 4 || v == 6 {
		p[0] ^= 0x80
	}
	return p, ipv4Type
}
