//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// snmpTCP returns the named counter of the Tcp lines of /proc/net/snmp in
// namespace ns, or -1.
func snmpTCP(t *testing.T, ns, name string) int64 {
	t.Helper()
	b, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/net/snmp").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Tcp:" {
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

// TestOffloadPath protects the router on an offloading path: the client's
// TSO super-packets reach the router whole through its TUN's offloads, and
// a bounded kernel TCP transfer completes through it with no drop by the
// router and no checksum error at the server (which drops a segment whose
// checksum is wrong, so a completed transfer proves them right), kept
// whole unshaped, split at 50 Mb/s with -gso split, and kept at 50 Mb/s
// with -gso keep.
// With ECN, a packet capture at the server counts CE on exactly as many
// data segments as the router's marks cover: each mark on a kept
// super-packet arrives on every one of its segments. (CoDel's target and
// interval are cut to 3 ms and 30 ms so that a short transfer is marked
// often.)
func TestOffloadPath(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		split bool
		ce    bool
	}{
		{"unshaped-keep", []string{"-rate", "0"}, false, false},
		{"50mbit-split", []string{"-rate", "50mbit", "-gso", "split", "-params", "target=3ms,interval=30ms"}, true, true},
		{"50mbit-keep", []string{"-rate", "50mbit", "-gso", "keep", "-params", "target=3ms,interval=30ms"}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Offloads stay on from the client to the router; r1 segments
			// in software and s0 does not coalesce, so the capture sees
			// wire packets.
			l := newLabOffloads(t, map[string][]string{"r": {"r1"}, "s": {"s0"}})
			for _, ns := range []string{l.c, l.s} {
				l.ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
			}
			stats := filepath.Join(t.TempDir(), "stats.json")
			rt := l.start(l.r, "router", "MTU", append([]string{"-tun", "tun0", "-aqm", "fq-codel", "-offload", "-stats", stats, "-report", "0"}, c.args...)...)
			if !strings.Contains(rt.output(), "offloads 0x") || strings.Contains(rt.output(), "offloads 0x0)") {
				t.Skipf("the TUN took no offloads:\n%s", rt.output())
			}
			l.start(l.s, "server", "ready", "10.201.2.2")
			cp := l.start(l.s, "capture", "capturing", "s0")
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			const size = 16 << 20
			out, err := l.helper(ctx, l.c, "client", "check", "10.201.2.2", strconv.Itoa(size)).CombinedOutput()
			if err != nil {
				t.Fatalf("client: %v %s\nrouter:\n%s", err, out, rt.output())
			}
			var sent, acked int
			if _, err := fmt.Sscanf(string(out), "tcp %d %d", &sent, &acked); err != nil || sent != size || acked != size {
				t.Errorf("TCP: sent %d, server received %d (%v); want %d", sent, acked, err, size)
			}
			time.Sleep(200 * time.Millisecond)
			if err := cp.stop(t); err != nil {
				t.Errorf("capture: %v\n%s", err, cp.output())
			}
			var segs, ceSegs, maxLen int
			if _, err := fmt.Sscanf(cp.output()[strings.Index(cp.output(), "captured"):], "captured %d %d %d", &segs, &ceSegs, &maxLen); err != nil {
				t.Fatalf("capture output %q: %v", cp.output(), err)
			}
			if err := rt.stop(t); err != nil {
				t.Errorf("router exit: %v\n%s", err, rt.output())
			}
			s := readStats(t, stats)
			var up, down int
			for i, q := range s.Queues {
				switch q.Prefix {
				case "10.201.2.0/24":
					up = i
				case "10.201.1.0/24":
					down = i
				}
			}
			u := s.Queues[up]
			t.Logf("router: read %d packets %d bytes (%.0f bytes each), written %d (%.0f bytes each), dropped %d, marked %d, CE written %d covering %d segments, %d split; capture: %d data segments (at most %d bytes), %d CE; ACK queue %+v",
				u.Read.Packets, u.Read.Bytes, float64(u.Read.Bytes)/float64(u.Read.Packets), u.Written.Packets, float64(u.Written.Bytes)/float64(u.Written.Packets),
				s.Dropped.Total, u.Marked, u.CEWritten, u.CEWrittenSegments, u.Split, segs, maxLen, ceSegs, s.Queues[down].Dropped)
			// The AQM may drop a packet that is not ECN-capable (Linux
			// sends retransmissions Not-ECT); nothing else may be lost.
			if !s.Conserved() || s.Dropped.Total != s.Dropped.Early || (!c.ce && s.Dropped.Early != 0) {
				t.Errorf("stats: conserved %v, dropped %+v; want no drop but the AQM's", s.Conserved(), s.Dropped)
			}
			if n := snmpTCP(t, l.s, "InCsumErrors"); n != 0 {
				t.Errorf("server: %d TCP checksum errors", n)
			}
			if n := snmpIP(func() string {
				b, _ := exec.Command("ip", "netns", "exec", l.r, "cat", "/proc/net/snmp").Output()
				return string(b)
			}(), "InHdrErrors"); n != 0 {
				t.Errorf("router namespace: %d IP header errors", n)
			}
			if perRead := float64(u.Read.Bytes) / float64(u.Read.Packets); c.split && u.Split*3 < u.Read.Packets/10 || !c.split && perRead < 3000 {
				t.Errorf("read %.0f bytes per packet toward the server, %d split: the TUN delivered few super-packets", perRead, u.Split)
			}
			perWritten := float64(u.Written.Bytes) / float64(u.Written.Packets)
			if c.split && perWritten > 1500 || !c.split && perWritten < 3000 {
				t.Errorf("wrote %.0f bytes per packet; split %v", perWritten, c.split)
			}
			if maxLen > 1500 || segs < size/1500 {
				t.Errorf("capture: %d data segments of at most %d bytes; want at least %d of at most 1500", segs, maxLen, size/1500)
			}
			if c.ce {
				if u.CEWritten == 0 || uint64(ceSegs) != u.CEWrittenSegments {
					t.Errorf("CE: the router wrote %d CE packets covering %d segments; the server saw %d CE segments", u.CEWritten, u.CEWrittenSegments, ceSegs)
				}
				if !c.split && u.CEWrittenSegments <= u.CEWritten {
					t.Errorf("CE: kept super-packets marked %d covering only %d segments", u.CEWritten, u.CEWrittenSegments)
				}
			}
		})
	}
}

// capture is the capture helper: on the named device it counts the TCP
// segments with data for port 5001, those carrying CE, and the longest,
// until SIGTERM (or two minutes), then prints "captured SEGS CE MAXLEN".
func capture(args []string) int {
	ifi, err := net.InterfaceByName(args[0])
	if err != nil {
		fmt.Println(err)
		return 1
	}
	const ethPIP = 0x0800
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM, int(htons(ethPIP)))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 64<<20)
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(ethPIP), Ifindex: ifi.Index}); err != nil {
		fmt.Println(err)
		return 1
	}
	tv := syscall.Timeval{Usec: 100000}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	end := time.Now().Add(2 * time.Minute)
	fmt.Println("capturing")
	var segs, ce, maxLen int
	b := make([]byte, 65536)
	for time.Now().Before(end) {
		select {
		case <-sig:
			end = time.Now()
			continue
		default:
		}
		n, _, err := syscall.Recvfrom(fd, b, 0)
		if err != nil || n < 40 || b[0] != 0x45 || b[9] != 6 {
			continue
		}
		ihl := int(b[0]&15) * 4
		t := b[ihl:n]
		if len(t) < 20 || int(t[2])<<8|int(t[3]) != 5001 || n-ihl-int(t[12]>>4)*4 <= 0 {
			continue
		}
		segs++
		if b[1]&3 == 3 {
			ce++
		}
		maxLen = max(maxLen, n)
	}
	// Drain what arrived before the signal.
	for {
		n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_DONTWAIT)
		if err != nil {
			break
		}
		if n < 40 || b[0] != 0x45 || b[9] != 6 {
			continue
		}
		t := b[20:n]
		if int(t[2])<<8|int(t[3]) == 5001 && n-20-int(t[12]>>4)*4 > 0 {
			segs++
			if b[1]&3 == 3 {
				ce++
			}
			maxLen = max(maxLen, n)
		}
	}
	fmt.Printf("captured %d %d %d\n", segs, ce, maxLen)
	return 0
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// TestOffloadThroughput measures the unshaped router's TCP throughput with
// the TUN's offloads against without, and with the offloads but every
// super-packet split in the router (-gso split): four kernel CUBIC uploads
// (set per socket) for 6 s through FQ-CoDel, every veth offload on (only
// the TUN differs), the three configurations interleaved over three rounds
// (or AQMROUTER_OFFLOAD, if larger) with their order rotated.
// It reports the goodput, the router's CPU and the load average of each
// run, and the medians and ranges. It is a measurement, run with
// AQMROUTER_OFFLOAD=1.
func TestOffloadThroughput(t *testing.T) {
	if os.Getenv("AQMROUTER_OFFLOAD") == "" {
		t.Skip("a 1-minute measurement; set AQMROUTER_OFFLOAD=1 to run it")
	}
	l := newLabOffloads(t, map[string][]string{})
	l.start(l.s, "server", "ready", "10.201.2.2")
	configs := []string{"on", "off", "split"}
	flags := map[string][]string{"on": {"-offload=true"}, "off": {"-offload=false"}, "split": {"-offload=true", "-gso", "split"}}
	type result struct{ mbps, cpu float64 }
	results := map[string][]result{}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("AQMROUTER_OFFLOAD")); err == nil && n > 3 {
		rounds = n
	}
	for round := range rounds {
		for k := range configs {
			c := configs[(k+round)%len(configs)]
			stats := filepath.Join(t.TempDir(), "stats.json")
			args := append([]string{"-tun", "tun0", "-aqm", "fq-codel", "-rate", "0", "-report", "0", "-stats", stats}, flags[c]...)
			rt := l.start(l.r, "router", "MTU", args...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cl := l.helper(ctx, l.c, "client", "load", "10.201.2.2", "4", "6s", "cubic")
			var clOut strings.Builder
			cl.Stdout, cl.Stderr = &clOut, &clOut
			if err := cl.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			t0, _ := cpuTicks(rt.cmd.Process.Pid)
			w0 := time.Now()
			time.Sleep(4 * time.Second)
			t1, _ := cpuTicks(rt.cmd.Process.Pid)
			w1 := time.Now()
			if err := cl.Wait(); err != nil {
				t.Fatalf("client: %v\n%s", err, clOut.String())
			}
			cancel()
			rt.stop(t)
			var acked int64
			var secs float64
			fmt.Sscanf(clOut.String(), "load %d %g", &acked, &secs)
			s := readStats(t, stats)
			r := result{mbps: float64(acked) * 8 / secs / 1e6, cpu: float64(t1-t0) / w1.Sub(w0).Seconds()}
			results[c] = append(results[c], r)
			load, _ := os.ReadFile("/proc/loadavg")
			t.Logf("round %d offload %-5s goodput %7.1f Mb/s, router CPU %5.1f%% of a core, read %d written %d dropped %d; loadavg %s",
				round, c, r.mbps, r.cpu, s.Read.Packets, s.Written.Packets, s.Dropped.Total, strings.Join(strings.Fields(string(load))[:3], " "))
			if acked == 0 || !s.Conserved() {
				t.Errorf("offload %s: %d bytes acked, conserved %v", c, acked, s.Conserved())
			}
		}
	}
	med := func(rs []result, f func(result) float64) (lo, mid, hi float64) {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[0], v[len(v)/2], v[len(v)-1]
	}
	for _, c := range configs {
		lo, m, hi := med(results[c], func(r result) float64 { return r.mbps })
		clo, cm, chi := med(results[c], func(r result) float64 { return r.cpu })
		t.Logf("offload %-5s goodput median %.1f Mb/s (range %.1f-%.1f), router CPU median %.1f%% (range %.1f-%.1f)", c, m, lo, hi, cm, clo, chi)
	}
	var ratios []float64
	for i := range results["on"] {
		ratios = append(ratios, results["on"][i].mbps/results["off"][i].mbps)
	}
	slices.Sort(ratios)
	t.Logf("on/off goodput ratio per round: median %.2f (range %.2f-%.2f)", ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
}
