//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/aqmkit/aqmkit/lab/router"
)

// envHelper makes the test binary one of the lab's processes instead of a
// test run: the router, the server, the client, or a helper that turns
// offloads off; each runs inside a namespace through ip netns exec.
const envHelper = "AQMROUTER_TEST_HELPER"

func TestMain(m *testing.M) {
	switch h := os.Getenv(envHelper); h {
	case "":
		os.Exit(m.Run())
	case "router":
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	case "server":
		os.Exit(serve(os.Args[1:]))
	case "client":
		os.Exit(client(os.Args[1:]))
	case "offloads":
		os.Exit(offloadsOff(os.Args[1:]))
	case "fetch":
		os.Exit(fetch(os.Args[1:]))
	case "capture":
		os.Exit(capture(os.Args[1:]))
	case "pattern":
		os.Exit(pattern(os.Args[1:]))
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", h)
		os.Exit(2)
	}
}

// lab is the spec's topology, made fresh for one test:
//
//	client ns  c0 10.201.1.2 ── r0 10.201.1.1 [router ns: tun0] r1 10.201.2.1 ── s0 10.201.2.2  server ns
//
// Namespace names are unique per run; t.Cleanup deletes them (and with them
// every veth, address, route and the TUN), on failure too.
type lab struct {
	t       *testing.T
	exe     string
	c, r, s string
}

func newLab(t *testing.T, tunArgs ...string) *lab {
	t.Helper()
	return newLabOffloads(t, nil, tunArgs...)
}

// newLabOffloads is newLab with offloads turned off only on the veths
// named in off by namespace ("c", "r", "s"); nil turns them off on every
// veth, an empty map on none.
func newLabOffloads(t *testing.T, off map[string][]string, tunArgs ...string) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces joined by veths through a TUN router")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("no TUN support: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	rand.Read(b[:])
	id := "aqmr" + hex.EncodeToString(b[:])
	l := &lab{t: t, exe: exe, c: id + "-c", r: id + "-r", s: id + "-s"}
	for _, ns := range []string{l.c, l.r, l.s} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Skipf("cannot create network namespaces: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	l.ip("link", "add", "c0", "netns", l.c, "type", "veth", "peer", "name", "r0", "netns", l.r)
	l.ip("link", "add", "s0", "netns", l.s, "type", "veth", "peer", "name", "r1", "netns", l.r)
	for _, cmd := range [][]string{
		{l.c, "addr", "add", "10.201.1.2/24", "dev", "c0"},
		{l.r, "addr", "add", "10.201.1.1/24", "dev", "r0"},
		{l.r, "addr", "add", "10.201.2.1/24", "dev", "r1"},
		{l.s, "addr", "add", "10.201.2.2/24", "dev", "s0"},
		{l.c, "link", "set", "c0", "up"}, {l.c, "link", "set", "lo", "up"},
		{l.r, "link", "set", "r0", "up"}, {l.r, "link", "set", "r1", "up"}, {l.r, "link", "set", "lo", "up"},
		{l.s, "link", "set", "s0", "up"}, {l.s, "link", "set", "lo", "up"},
		{l.c, "route", "add", "default", "via", "10.201.1.1"},
		{l.s, "route", "add", "default", "via", "10.201.2.1"},
		append([]string{l.r, "tuntap", "add", "dev", "tun0", "mode", "tun"}, tunArgs...),
		{l.r, "link", "set", "tun0", "up"},
		{l.r, "rule", "add", "iif", "r0", "table", "100"},
		{l.r, "rule", "add", "iif", "r1", "table", "100"},
		{l.r, "route", "add", "default", "dev", "tun0", "table", "100"},
	} {
		l.ip(append([]string{"-n"}, cmd...)...)
	}
	sys := []string{"net.ipv4.ip_forward=1"}
	for _, i := range []string{"all", "default", "r0", "r1", "tun0"} {
		sys = append(sys, "net.ipv4.conf."+i+".rp_filter=0")
	}
	l.ip(append([]string{"netns", "exec", l.r, "sysctl", "-qw"}, sys...)...)
	if off == nil {
		off = map[string][]string{"c": {"c0"}, "r": {"r0", "r1"}, "s": {"s0"}}
	}
	for k, devs := range off {
		ns := map[string]string{"c": l.c, "r": l.r, "s": l.s}[k]
		if out, err := l.helper(context.Background(), ns, "offloads", devs...).CombinedOutput(); err != nil {
			t.Fatalf("offloads off in %s: %v\n%s", ns, err, out)
		}
	}
	return l
}

func (l *lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// helper returns the command that runs this test binary as helper h inside
// namespace ns.
func (l *lab) helper(ctx context.Context, ns, h string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, l.exe}, args...)...)
	cmd.Env = append(os.Environ(), envHelper+"="+h)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// proc is a helper running in the background, with its output collected.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	seen chan struct{} // closed when the ready line appeared
	done chan error
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start starts a helper and waits (at most 10 s) for a line holding ready
// on its combined output.
func (l *lab) start(ns, h, ready string, args ...string) *proc {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	p := &proc{cmd: l.helper(ctx, ns, h, args...), seen: make(chan struct{}), done: make(chan error, 1)}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		cancel()
		l.t.Fatal(err)
	}
	go func() {
		var once sync.Once
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if strings.Contains(sc.Text(), ready) {
				once.Do(func() { close(p.seen) })
			}
		}
	}()
	go func() { err := p.cmd.Wait(); pw.Close(); cancel(); p.done <- err }()
	l.t.Cleanup(func() { p.cmd.Process.Kill() })
	select {
	case <-p.seen:
	case err := <-p.done:
		l.t.Fatalf("%s exited before it was ready: %v\n%s", h, err, p.output())
	case <-time.After(10 * time.Second):
		l.t.Fatalf("%s not ready after 10 s:\n%s", h, p.output())
	}
	return p
}

// stop sends SIGTERM and waits (at most 15 s) for the process to exit.
func (p *proc) stop(t *testing.T) error {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		return err
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("no exit 15 s after SIGTERM:\n%s", p.output())
		return nil
	}
}

// snmpIP returns the named counter of the Ip lines of /proc/net/snmp, or -1.
func snmpIP(snmp, name string) int64 {
	var names []string
	for _, line := range strings.Split(snmp, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		if i := slices.Index(names, name); i > 0 && i < len(f) {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			return n
		}
	}
	return -1
}

// cpuTicks returns a process's user plus system time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime: field 14 of stat, the 12th after the name
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, nil
}

// readStats reads the router's stats file.
func readStats(t *testing.T, path string) router.Stats {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("stats file: %v", err)
	}
	var s router.Stats
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("stats file: %v\n%s", err, b)
	}
	return s
}

// TestNamespaces protects the router on a real path, built exactly as the
// spec's topology: a TCP transfer and a UDP echo pass through it at 20 Mb/s
// with 5 ms of delay each way, the echo never returns faster than the two
// delay lines allow, the metrics are served, the stats file conserves
// packets, and with ECN on the queue marks instead of dropping, with CE
// written into each marked packet; CAKE behind a two-queue TUN too.
func TestNamespaces(t *testing.T) {
	for _, c := range []struct {
		name    string
		tunArgs []string
		args    []string
	}{
		{"fq-codel-ecn", nil, []string{"-aqm", "fq-codel"}},
		{"cake-2-queues", []string{"multi_queue"}, []string{"-aqm", "cake", "-queues", "2"}},
	} {
		t.Run(c.name, func(t *testing.T) { testPath(t, c.tunArgs, c.args, strings.HasSuffix(c.name, "-ecn")) })
	}
}

func testPath(t *testing.T, tunArgs, args []string, ecn bool) {
	l := newLab(t, tunArgs...)
	if ecn {
		for _, ns := range []string{l.c, l.s} {
			l.ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
		}
	}
	stats := filepath.Join(t.TempDir(), "stats.json")
	rt := l.start(l.r, "router", "MTU", append([]string{"-tun", "tun0", "-rate", "20mbit", "-delay", "5ms",
		"-stats", stats, "-metrics", "127.0.0.1:9100", "-report", "0"}, args...)...)
	l.start(l.s, "server", "ready", "10.201.2.2")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const size = 2 << 20
	out, err := l.helper(ctx, l.c, "client", "check", "10.201.2.2", strconv.Itoa(size)).CombinedOutput()
	t.Logf("client: %s", out)
	if err != nil {
		t.Fatalf("client: %v\nrouter:\n%s", err, rt.output())
	}
	var sent, acked, probes, replies int
	var rttMicros int64
	if _, err := fmt.Sscanf(string(out), "tcp %d %d udp %d %d %d", &sent, &acked, &probes, &replies, &rttMicros); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if sent != size || acked != size {
		t.Errorf("TCP: sent %d, server received %d; want %d", sent, acked, size)
	}
	if replies < probes-2 {
		t.Errorf("UDP echo: %d of %d replies", replies, probes)
	}
	if rttMin := time.Duration(rttMicros) * time.Microsecond; rttMin < 10*time.Millisecond {
		t.Errorf("UDP echo: smallest RTT %v, below the 2 × 5 ms of the delay lines", rttMin)
	}
	// The router namespace's IP layer checks every header the router wrote
	// (a CE rewrite with a wrong checksum would be counted and dropped).
	if snmp, err := exec.Command("ip", "netns", "exec", l.r, "cat", "/proc/net/snmp").Output(); err != nil {
		t.Error(err)
	} else if n := snmpIP(string(snmp), "InHdrErrors"); n != 0 {
		t.Errorf("router namespace: %d IP header errors (bad checksums) among the packets written back", n)
	}
	vars, err := l.helper(ctx, l.r, "fetch", "http://127.0.0.1:9100/debug/vars").CombinedOutput()
	if err != nil || !bytes.Contains(vars, []byte(`"aqmrouter_queue_10.201.2.0/24"`)) || !bytes.Contains(vars, []byte(`"aqmrouter"`)) {
		t.Errorf("metrics: %v\n%.2000s", err, vars)
	}
	if err := rt.stop(t); err != nil {
		t.Errorf("router exit: %v\n%s", err, rt.output())
	}
	t.Logf("router:\n%s", rt.output())
	s := readStats(t, stats)
	if !s.Conserved() {
		t.Errorf("stats do not conserve packets: %+v", s)
	}
	var up *router.QueueStats
	for i, q := range s.Queues {
		if q.Prefix == "10.201.2.0/24" {
			up = &s.Queues[i]
		}
	}
	if up == nil || up.Written.Bytes < size || s.Read.Packets < size/1500 {
		t.Errorf("stats: upload queue %+v, read %d packets; want at least %d bytes written toward the server", up, s.Read.Packets, size)
	}
	if ecn && (s.Marked == 0 || s.CEWritten != s.Marked || s.Dropped.Early != 0) {
		t.Errorf("ECN: marked %d, CE written %d, early drops %d; want marks instead of drops, each written", s.Marked, s.CEWritten, s.Dropped.Early)
	}
	if s.AQM != args[1] || s.Rate.String() != "20mbit" || s.Delay != "5ms" {
		t.Errorf("stats header: %q %v %q", s.AQM, s.Rate, s.Delay)
	}
}

// TestRouterCPU measures the router's CPU time at 50 Mb/s, shaping with
// FQ-CoDel, against the same traffic shaped by the kernel (htb + pfifo 100
// on the veths) with the router in delay-only mode: four TCP uploads for
// 10 s, both with 10 ms of delay each way, configurations interleaved over
// three rounds. It is a measurement, run with AQMROUTER_CPU=1.
func TestRouterCPU(t *testing.T) {
	if os.Getenv("AQMROUTER_CPU") == "" {
		t.Skip("a 1-minute measurement; set AQMROUTER_CPU=1 to run it")
	}
	l := newLab(t)
	l.start(l.s, "server", "ready", "10.201.2.2")
	type config struct {
		name string
		args []string
		htb  bool
	}
	configs := []config{
		{"fq-codel 50mbit", []string{"-aqm", "fq-codel", "-rate", "50mbit"}, false},
		{"delay-only + htb", []string{"-aqm", "fifo", "-rate", "0"}, true},
	}
	results := map[string][][2]float64{}
	for round := range 3 {
		for k := range configs {
			c := configs[(k+round)%len(configs)]
			htb := "50.47mbit" // 50 Mb/s of IP bytes: htb counts the 14-byte Ethernet header
			for _, dev := range []string{"r0", "r1"} {
				exec.Command("ip", "netns", "exec", l.r, "tc", "qdisc", "del", "dev", dev, "root").Run()
				if c.htb {
					for _, cmd := range [][]string{
						{"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"},
						{"class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", htb},
						{"qdisc", "add", "dev", dev, "parent", "1:1", "pfifo", "limit", "100"},
					} {
						l.ip(append([]string{"netns", "exec", l.r, "tc"}, cmd...)...)
					}
				}
			}
			stats := filepath.Join(t.TempDir(), "stats.json")
			args := append([]string{"-tun", "tun0", "-delay", "10ms", "-report", "0", "-stats", stats}, c.args...)
			if dir := os.Getenv("AQMROUTER_CPUPROFILE"); dir != "" {
				args = append(args, "-cpuprofile", filepath.Join(dir, fmt.Sprintf("%d-%s.pprof", round, strings.Fields(c.name)[0])))
			}
			rt := l.start(l.r, "router", "MTU", args...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cl := l.helper(ctx, l.c, "client", "load", "10.201.2.2", "4", "10s")
			var clOut bytes.Buffer
			cl.Stdout, cl.Stderr = &clOut, &clOut
			if err := cl.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Second) // past slow start
			t0, _ := cpuTicks(rt.cmd.Process.Pid)
			w0 := time.Now()
			time.Sleep(7 * time.Second)
			t1, err := cpuTicks(rt.cmd.Process.Pid)
			w1 := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.Wait(); err != nil {
				t.Fatalf("client: %v\n%s", err, clOut.String())
			}
			cancel()
			rt.stop(t)
			var bytesAcked int64
			var secs float64
			fmt.Sscanf(clOut.String(), "load %d %g", &bytesAcked, &secs)
			cpu := float64(t1-t0) / 100 / w1.Sub(w0).Seconds() * 100 // clock ticks are 1/100 s on Linux
			mbps := float64(bytesAcked) * 8 / secs / 1e6
			results[c.name] = append(results[c.name], [2]float64{cpu, mbps})
			s := readStats(t, stats)
			if !s.Conserved() || bytesAcked == 0 {
				t.Errorf("%s: conserved %v, %d bytes acked", c.name, s.Conserved(), bytesAcked)
			}
			t.Logf("round %d %-18s router CPU %5.1f%% of a core, goodput %5.1f Mb/s, router read %d written %d dropped %d",
				round, c.name, cpu, mbps, s.Read.Packets, s.Written.Packets, s.Dropped.Total)
		}
	}
	for _, c := range configs {
		r := results[c.name]
		cpus := []float64{r[0][0], r[1][0], r[2][0]}
		slices.Sort(cpus)
		t.Logf("%-18s CPU median %.1f%% (range %.1f-%.1f), on %d cores", c.name, cpus[1], cpus[0], cpus[2], runtime.NumCPU())
	}
}

// serve is the server helper: a TCP sink that answers each connection
// with the byte count it received, and a UDP echo, on addr ports 5001 and
// 5002. It exits on its own after three minutes.
func serve(args []string) int {
	time.AfterFunc(3*time.Minute, func() { os.Exit(3) })
	ln, err := net.Listen("tcp", net.JoinHostPort(args[0], "5001"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	uc, err := net.ListenPacket("udp", net.JoinHostPort(args[0], "5002"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	go func() {
		b := make([]byte, 2048)
		for {
			n, from, err := uc.ReadFrom(b)
			if err != nil {
				return
			}
			uc.WriteTo(b[:n], from)
		}
	}()
	fmt.Println("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			n, _ := io.Copy(io.Discard, c)
			binary.Write(c, binary.BigEndian, n)
		}()
	}
}

// client is the client helper. "check ADDR SIZE" sends SIZE bytes over TCP
// and 50 UDP echo probes 20 ms apart, and prints
// "tcp SENT RECEIVED udp PROBES REPLIES MINRTT" (MINRTT in microseconds). "load ADDR FLOWS DURATION"
// runs FLOWS TCP uploads for DURATION and prints "load BYTES SECONDS".
func client(args []string) int {
	addr := args[1]
	switch args[0] {
	case "check":
		size, _ := strconv.Atoi(args[2])
		got, err := upload(addr, size, time.Time{})
		if err != nil {
			fmt.Println("tcp:", err)
			return 1
		}
		c, err := net.Dial("udp", net.JoinHostPort(addr, "5002"))
		if err != nil {
			fmt.Println(err)
			return 1
		}
		const probes = 50
		replies, best := 0, time.Duration(1<<62)
		b := make([]byte, 64)
		for i := range probes {
			t0 := time.Now()
			binary.BigEndian.PutUint32(b, uint32(i))
			c.Write(b[:32])
			c.SetReadDeadline(t0.Add(time.Second))
			for {
				n, err := c.Read(b)
				if err != nil {
					break
				}
				if n == 32 && binary.BigEndian.Uint32(b) == uint32(i) {
					replies++
					best = min(best, time.Since(t0))
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		fmt.Printf("tcp %d %d udp %d %d %d\n", size, got, probes, replies, best.Microseconds())
		return 0
	case "load":
		if len(args) > 4 {
			uploadCC = args[4]
		}
		flows, _ := strconv.Atoi(args[2])
		d, _ := time.ParseDuration(args[3])
		start := time.Now()
		end := start.Add(d)
		var mu sync.Mutex
		var total int64
		var wg sync.WaitGroup
		for range flows {
			wg.Go(func() {
				n, err := upload(addr, 1<<40, end)
				if err != nil {
					fmt.Println("load:", err)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			})
		}
		wg.Wait()
		fmt.Printf("load %d %g\n", total, time.Since(start).Seconds())
		return 0
	}
	return 2
}

// uploadCC, if set, is the congestion control of each upload
// (TCP_CONGESTION): "load ADDR FLOWS DURATION CC" sets it.
var uploadCC string

// upload sends size bytes (or until end, if set) on one TCP connection and
// returns what the server says it received.
func upload(addr string, size int, end time.Time) (int64, error) {
	dl := net.Dialer{Timeout: 5 * time.Second}
	if uploadCC != "" {
		dl.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CONGESTION, uploadCC)
			})
			return serr
		}
	}
	c, err := dl.Dial("tcp", net.JoinHostPort(addr, "5001"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	buf := make([]byte, 64<<10)
	for left := size; left > 0 && (end.IsZero() || time.Now().Before(end)); {
		n, err := c.Write(buf[:min(left, len(buf))])
		if err != nil {
			return 0, err
		}
		left -= n
	}
	c.(*net.TCPConn).CloseWrite()
	var n int64
	if err := binary.Read(c, binary.BigEndian, &n); err != nil {
		return 0, err
	}
	return n, nil
}

// fetch is the metrics helper: it prints the body at a URL.
func fetch(args []string) int {
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(args[0])
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer resp.Body.Close()
	io.Copy(os.Stdout, resp.Body)
	return 0
}

// offloadsOff turns TSO, GSO and GRO off on each device, as "ethtool -K dev
// tso off gso off gro off" does, through the SIOCETHTOOL ioctl.
func offloadsOff(devs []string) int {
	const (
		siocEthtool = 0x8946
		ethtoolSTSO = 0x1f
		ethtoolSGSO = 0x24
		ethtoolSGRO = 0x2c
	)
	s, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer syscall.Close(s)
	for _, dev := range devs {
		for _, cmd := range []uint32{ethtoolSTSO, ethtoolSGSO, ethtoolSGRO} {
			val := &struct{ cmd, data uint32 }{cmd, 0}
			var ifr struct {
				name [16]byte
				data uintptr
				_    [16]byte
			}
			copy(ifr.name[:15], dev)
			ifr.data = uintptr(unsafe.Pointer(val))
			_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(s), siocEthtool, uintptr(unsafe.Pointer(&ifr)))
			runtime.KeepAlive(val)
			if e != 0 {
				fmt.Printf("%s: ethtool command %#x: %v\n", dev, cmd, e)
				return 1
			}
		}
	}
	return 0
}
