// Command tuncost measures what the router's TUN writes cost, per packet
// forwarded: CPU time (getrusage, user and system) and write system calls
// (/proc/self/io), for the same stream of TCP segments written by
// lab/router through lab/tun one system call per packet, joined into
// super-packets (the router's default with offloads), without offloads,
// and through wireguard-go's tun package, whose Write joins segments
// itself. The segments are made in memory, four TCP flows taking turns as
// a fair queue sends them, so that only the write path differs; the kernel
// drops them at a blackhole route after it has taken them.
//
// It needs root and a network namespace of its own:
//
//	ip netns add tuncost
//	ip netns exec tuncost go run . -packets 300000 -rounds 3
//	ip netns del tuncost
//
// (from bench/tuncost, with GOWORK=off). It is its own module so that
// neither the library nor the lab depends on wireguard-go.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aqmkit/aqmkit/lab/router"
	"github.com/aqmkit/aqmkit/lab/tun"
	wgtun "golang.zx2c4.com/wireguard/tun"
)

const (
	vnetLen = 10
	mss     = 1448
	flows   = 4
)

// source makes the segments: flows flows of mss-byte TCP segments with
// contiguous sequence numbers and complete checksums, in turn.
type source struct {
	vnet    bool
	left    int
	next    int
	seq     [flows]uint32
	id      [flows]uint16
	tmpl    [flows][]byte
	paySum  uint64
	stop    chan struct{}
	stopped sync.Once
}

func newSource(n int, vnet bool) *source {
	s := &source{vnet: vnet, left: n, stop: make(chan struct{})}
	for f := range flows {
		p := make([]byte, 40+mss)
		p[0], p[1], p[8], p[9] = 0x45, 0x02, 64, 6
		binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
		p[6] = 0x40
		copy(p[12:16], []byte{10, 203, 1, 2})
		copy(p[16:20], []byte{10, 203, 9, 2})
		binary.BigEndian.PutUint16(p[20:], uint16(40000+f))
		binary.BigEndian.PutUint16(p[22:], 5201)
		binary.BigEndian.PutUint32(p[28:], 0x01020304)
		p[32], p[33] = 5<<4, 0x10
		binary.BigEndian.PutUint16(p[34:], 1000)
		for i := 40; i < len(p); i++ {
			p[i] = byte(i * 7)
		}
		s.tmpl[f] = p
		s.seq[f] = uint32(f) << 28
	}
	s.paySum = sum(s.tmpl[0][40:], 0)
	return s
}

func sum(b []byte, acc uint64) uint64 {
	for i := 0; i+1 < len(b); i += 2 {
		acc += uint64(b[i])<<8 | uint64(b[i+1])
	}
	return acc
}

func fold(acc uint64) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}

// fill writes the next segment into b and returns its length.
func (s *source) fill(b []byte) int {
	f := s.next
	s.next = (s.next + 1) % flows
	off := 0
	if s.vnet {
		clear(b[:vnetLen])
		off = vnetLen
	}
	p := b[off : off+len(s.tmpl[f])]
	copy(p, s.tmpl[f])
	binary.BigEndian.PutUint16(p[4:], s.id[f])
	binary.BigEndian.PutUint16(p[10:], ^fold(sum(p[:20], 0)))
	binary.BigEndian.PutUint32(p[24:], s.seq[f])
	acc := sum(p[12:20], uint64(len(p)-20)+6)
	acc = sum(p[20:40], acc) + s.paySum
	binary.BigEndian.PutUint16(p[36:], ^fold(acc))
	s.id[f]++
	s.seq[f] += mss
	return off + len(p)
}

// dev is the router's device: reads come from the source, writes go to
// the sink under test.
type dev struct {
	src   *source
	write func(pkts [][]byte) (int, error)
}

func (d *dev) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	if d.src.left == 0 {
		<-d.src.stop
		return 0, os.ErrDeadlineExceeded
	}
	n := 0
	for ; n < len(bufs) && d.src.left > 0; n++ {
		sizes[n] = d.src.fill(bufs[n])
		d.src.left--
	}
	return n, nil
}

func (d *dev) WriteBatch(pkts [][]byte) (int, error) { return d.write(pkts) }

func (d *dev) SetReadDeadline(t time.Time) error {
	d.src.stopped.Do(func() { close(d.src.stop) })
	return nil
}

// wgWriter writes through wireguard-go's tun, which needs headroom for
// its virtio-net header before each packet and room after it to join
// segments in place: each packet is copied into such a buffer.
type wgWriter struct {
	d    wgtun.Device
	bufs [][]byte
	big  [][]byte
}

func (w *wgWriter) write(pkts [][]byte) (int, error) {
	for len(w.big) < len(pkts) {
		w.big = append(w.big, make([]byte, vnetLen+65535))
	}
	w.bufs = w.bufs[:0]
	for i, p := range pkts {
		w.bufs = append(w.bufs, w.big[i][:vnetLen+copy(w.big[i][vnetLen:], p)])
	}
	_, err := w.d.Write(w.bufs, vnetLen)
	if err != nil {
		return 0, err
	}
	return len(pkts), nil
}

type usage struct {
	cpu   time.Duration
	syscw int64
}

func now() usage {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	u := usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	b, _ := os.ReadFile("/proc/self/io")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			u.syscw, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return u
}

func sh(args ...string) {
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%v: %v %s\n", args, err, out)
		os.Exit(1)
	}
}

func main() {
	packets := flag.Int("packets", 300000, "segments per run")
	rounds := flag.Int("rounds", 3, "rounds, configurations interleaved")
	aqmName := flag.String("aqm", "fq-codel", "the router's queue")
	flag.Parse()

	labOff, err := tun.Open(tun.Config{Name: "tcoff", Offload: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	labPlain, err := tun.Open(tun.Config{Name: "tcplain"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wg, err := wgtun.CreateTUN("tcwg", 1500)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sh("ip", "link", "set", "tcwg", "up")
	sh("ip", "link", "set", "lo", "up")
	sh("ip", "route", "add", "blackhole", "10.203.9.0/24")
	for _, k := range []string{"net/ipv4/ip_forward", "net/ipv4/conf/all/rp_filter", "net/ipv4/conf/default/rp_filter", "net/ipv4/conf/tcoff/rp_filter", "net/ipv4/conf/tcplain/rp_filter", "net/ipv4/conf/tcwg/rp_filter"} {
		v := "0"
		if k == "net/ipv4/ip_forward" {
			v = "1"
		}
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	ww := &wgWriter{d: wg}
	discard := func(p [][]byte) (int, error) { return len(p), nil }
	type config struct {
		name  string
		vnet  bool
		join  bool
		write func([][]byte) (int, error)
	}
	configs := []config{
		{"discard", true, false, discard},
		{"lab-offload-each", true, false, labOff.WriteBatch},
		{"lab-offload-join", true, true, labOff.WriteBatch},
		{"lab-no-offload", false, false, labPlain.WriteBatch},
		{"wireguard-go", false, false, ww.write},
	}
	type result struct{ cpuNs, writes float64 }
	res := map[string][]result{}
	for round := range *rounds {
		for k := range configs {
			c := configs[(k+round)%len(configs)]
			src := newSource(*packets, c.vnet)
			d := &dev{src: src, write: c.write}
			r, err := router.New(router.Config{AQM: *aqmName, VnetHdr: c.vnet, DisableCoalesce: !c.join, Drain: time.Second}, d)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			ctx, cancel := context.WithCancel(context.Background())
			u0 := now()
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			for {
				s := r.Stats()
				if s.Written.Packets+s.Dropped.Total >= uint64(*packets) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			u1 := now()
			cancel()
			<-done
			s := r.Stats()
			rs := result{cpuNs: float64(u1.cpu-u0.cpu) / float64(*packets), writes: float64(u1.syscw-u0.syscw) / float64(*packets)}
			res[c.name] = append(res[c.name], rs)
			load, _ := os.ReadFile("/proc/loadavg")
			fmt.Printf("round %d %-17s CPU %6.0f ns/packet, %.3f write calls/packet, written %d dropped %d joined %d; load %s\n",
				round, c.name, rs.cpuNs, rs.writes, s.Written.Packets, s.Dropped.Total, s.Coalesced, strings.Join(strings.Fields(string(load))[:3], " "))
		}
	}
	fmt.Println()
	for _, c := range configs {
		var cpu, wr []float64
		for _, r := range res[c.name] {
			cpu, wr = append(cpu, r.cpuNs), append(wr, r.writes)
		}
		slices.Sort(cpu)
		slices.Sort(wr)
		fmt.Printf("%-17s CPU median %6.0f ns/packet [%6.0f, %6.0f], write calls %.3f/packet\n", c.name, cpu[len(cpu)/2], cpu[0], cpu[len(cpu)-1], wr[len(wr)/2])
	}
}
