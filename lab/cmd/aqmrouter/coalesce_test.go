//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// patternByte is byte i of the pattern the pattern helpers send and check:
// a hash of the offset, so that a segment moved, repeated or lost anywhere
// in a stream changes what arrives.
func patternByte(i int64) byte {
	x := uint32(i) ^ uint32(i>>32)
	x ^= x >> 13
	x *= 0x5bd1e995
	x ^= x >> 15
	return byte(x)
}

// pattern is the pattern helper. "sink ADDR" accepts TCP connections on
// ADDR port 5001, checks every byte against patternByte, and answers each
// with the bytes received and the offset of the first wrong one (-1 if
// none). "send ADDR SIZE" sends SIZE bytes of the pattern and prints
// "pattern SENT RECEIVED BAD".
func pattern(args []string) int {
	if len(args) < 2 {
		return 2
	}
	addr := args[1]
	switch args[0] {
	case "sink":
		time.AfterFunc(3*time.Minute, func() { os.Exit(3) })
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, "5001"))
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("ready")
		for {
			c, err := ln.Accept()
			if err != nil {
				return 1
			}
			go func() {
				defer c.Close()
				var got int64
				bad := int64(-1)
				b := make([]byte, 64<<10)
				for {
					n, err := c.Read(b)
					for j := range n {
						if bad < 0 && b[j] != patternByte(got+int64(j)) {
							bad = got + int64(j)
						}
					}
					got += int64(n)
					if err != nil {
						break
					}
				}
				binary.Write(c, binary.BigEndian, [2]int64{got, bad})
			}()
		}
	case "send":
		size, _ := strconv.ParseInt(args[2], 10, 64)
		c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, "5001"), 5*time.Second)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(90 * time.Second))
		b := make([]byte, 64<<10)
		for off := int64(0); off < size; {
			n := min(int64(len(b)), size-off)
			for j := range n {
				b[j] = patternByte(off + j)
			}
			w, err := c.Write(b[:n])
			if err != nil {
				fmt.Println(err)
				return 1
			}
			off += int64(w)
		}
		c.(*net.TCPConn).CloseWrite()
		var res [2]int64
		if err := binary.Read(c, binary.BigEndian, &res); err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Printf("pattern %d %d %d\n", size, res[0], res[1])
		return 0
	}
	return 2
}

// procIO returns a process's syscr and syscw from /proc/PID/io: its read
// and write system calls so far.
func procIO(pid int) (r, w int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			r, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			w, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return r, w, nil
}

// addIPv6 gives the lab's topology IPv6 addresses and routes beside its
// IPv4 ones: fd00:201:1::/64 on the client side, fd00:201:2::/64 on the
// server side, and the router namespace's forwarding through tun0.
func (l *lab) addIPv6() {
	for _, cmd := range [][]string{
		{l.c, "addr", "add", "fd00:201:1::2/64", "dev", "c0", "nodad"},
		{l.r, "addr", "add", "fd00:201:1::1/64", "dev", "r0", "nodad"},
		{l.r, "addr", "add", "fd00:201:2::1/64", "dev", "r1", "nodad"},
		{l.s, "addr", "add", "fd00:201:2::2/64", "dev", "s0", "nodad"},
		{l.c, "-6", "route", "add", "default", "via", "fd00:201:1::1"},
		{l.s, "-6", "route", "add", "default", "via", "fd00:201:2::1"},
		{l.r, "-6", "rule", "add", "iif", "r0", "table", "100"},
		{l.r, "-6", "rule", "add", "iif", "r1", "table", "100"},
		{l.r, "-6", "route", "add", "default", "dev", "tun0", "table", "100"},
	} {
		l.ip(append([]string{"-n"}, cmd...)...)
	}
	l.ip("netns", "exec", l.r, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
}

// TestCoalescePath protects joining on the real kernel: at 50 Mb/s, where
// the router splits the client's TSO super-packets for FQ-CoDel (with ECN
// and a 3 ms target, so that it marks), the segments that leave together
// are written back as joined super-packets, over IPv4 and IPv6. The
// kernel takes every joined write (no write error, no refusal logged),
// cuts it in software on r1 (its offloads off), and a pattern transfer
// arrives byte for byte; the server counts no checksum error; over IPv4 a
// capture at the server counts CE on exactly the segments the router
// marked. The router's write system calls (/proc/PID/io syscw) are fewer
// than the packets it wrote, and fewer than with -coalesce=false, which
// writes one per packet.
func TestCoalescePath(t *testing.T) {
	const size = 8 << 20
	for _, fam := range []string{"ipv4", "ipv6"} {
		t.Run(fam, func(t *testing.T) {
			l := newLabOffloads(t, map[string][]string{"r": {"r1"}, "s": {"s0"}})
			server, up := "10.201.2.2", "10.201.2.0/24"
			if fam == "ipv6" {
				l.addIPv6()
				server, up = "fd00:201:2::2", "fd00:201:2::/64"
			}
			for _, ns := range []string{l.c, l.s} {
				l.ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
			}
			l.start(l.s, "pattern", "ready", "sink", server)
			type result struct{ syscw, written, coalesced, ticks int64 }
			res := map[bool]result{}
			for _, co := range []bool{true, false} {
				stats := filepath.Join(t.TempDir(), "stats.json")
				rt := l.start(l.r, "router", "MTU", "-tun", "tun0", "-aqm", "fq-codel", "-offload", "-rate", "50mbit",
					"-params", "target=3ms,interval=30ms", "-coalesce="+strconv.FormatBool(co), "-stats", stats, "-report", "0")
				if strings.Contains(rt.output(), "offloads 0x0)") {
					t.Skipf("the TUN took no offloads:\n%s", rt.output())
				}
				var cp *proc
				if fam == "ipv4" {
					cp = l.start(l.s, "capture", "capturing", "s0")
				}
				csum0 := snmpTCP(t, l.s, "InCsumErrors")
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
				out, err := l.helper(ctx, l.c, "pattern", "send", server, strconv.Itoa(size)).CombinedOutput()
				cancel()
				if err != nil {
					t.Fatalf("send: %v %s\nrouter:\n%s", err, out, rt.output())
				}
				var sent, got, bad int64
				if _, err := fmt.Sscanf(string(out), "pattern %d %d %d", &sent, &got, &bad); err != nil || got != size || bad != -1 {
					t.Errorf("coalesce=%v: sent %d, the server received %d, first wrong byte at %d (%v); want %d intact", co, sent, got, bad, err, size)
				}
				_, syscw, _ := procIO(rt.cmd.Process.Pid)
				ticks, _ := cpuTicks(rt.cmd.Process.Pid)
				var segs, ceSegs, maxLen int
				if cp != nil {
					time.Sleep(200 * time.Millisecond)
					if err := cp.stop(t); err != nil {
						t.Errorf("capture: %v\n%s", err, cp.output())
					}
					fmt.Sscanf(cp.output()[strings.Index(cp.output(), "captured"):], "captured %d %d %d", &segs, &ceSegs, &maxLen)
				}
				if err := rt.stop(t); err != nil {
					t.Errorf("router exit: %v\n%s", err, rt.output())
				}
				if strings.Contains(rt.output(), "joined super-packet") {
					t.Errorf("the kernel refused a joined write:\n%s", rt.output())
				}
				if n := snmpTCP(t, l.s, "InCsumErrors") - csum0; n != 0 {
					t.Errorf("server: %d TCP checksum errors", n)
				}
				s := readStats(t, stats)
				var u upCounts
				for _, q := range s.Queues {
					if q.Prefix == up {
						u = upCounts{q.Written.Packets, q.Coalesced, q.Split, q.CEWritten, q.CEWrittenSegments}
					}
				}
				load, _ := os.ReadFile("/proc/loadavg")
				t.Logf("coalesce=%v: router wrote %d packets (%d toward the server, %d of them joined; %d super-packets split on read) in %d write system calls, %d CPU ticks; CE written %d covering %d segments, capture %d data segments, %d CE; loadavg %s",
					co, s.Written.Packets, u.written, u.coalesced, u.split, syscw, ticks, u.ce, u.ceSegs, segs, ceSegs, strings.Join(strings.Fields(string(load))[:3], " "))
				if !s.Conserved() || s.Dropped.WriteError != 0 || s.Dropped.Total != s.Dropped.Early {
					t.Errorf("coalesce=%v: conserved %v, dropped %+v; want no drop but the AQM's", co, s.Conserved(), s.Dropped)
				}
				if u.split == 0 {
					t.Errorf("coalesce=%v: no super-packet split on read: the path did not exercise joining", co)
				}
				if cp != nil && (u.ce == 0 || uint64(ceSegs) != u.ceSegs) {
					t.Errorf("coalesce=%v: CE written on %d packets covering %d segments; the server saw %d CE segments", co, u.ce, u.ceSegs, ceSegs)
				}
				res[co] = result{syscw: syscw, written: int64(s.Written.Packets), coalesced: int64(u.coalesced), ticks: ticks}
			}
			on, off := res[true], res[false]
			if on.coalesced < on.written/4 || on.syscw >= on.written*3/4 {
				t.Errorf("coalescing: %d of %d packets joined, %d write system calls; want at least a quarter joined and under three quarters as many writes as packets", on.coalesced, on.written, on.syscw)
			}
			if off.coalesced != 0 || off.syscw < off.written {
				t.Errorf("-coalesce=false: %d joined, %d write system calls for %d packets; want none joined and a call per packet", off.coalesced, off.syscw, off.written)
			}
			t.Logf("write system calls per packet written: %.3f joined, %.3f one by one", float64(on.syscw)/float64(on.written), float64(off.syscw)/float64(off.written))
		})
	}
}

// upCounts is the part of a direction's counters TestCoalescePath
// reads.
type upCounts struct {
	written, coalesced, split, ce, ceSegs uint64
}

// TestTUNCost measures what the router's TUN system calls cost per packet
// at 500 Mb/s through FQ-CoDel: four kernel CUBIC uploads for 6 s, with
// the veths' offloads on (the router's namespace hands the TUN GRO'd
// super-packets) and off (every read is a wire packet); the router joins
// segments on write (the default), writes one per packet
// (-coalesce=false), has no TUN offloads (-offload=false), or reads with
// two TUN queues (-queues 2). Configurations are interleaved over three
// rounds (or AQMROUTER_TUNCOST, if larger). It reports per packet
// written: the router's CPU (user and system, /proc/PID/stat) and its
// read and write system calls (/proc/PID/io), with the load average. It
// is a measurement, run with AQMROUTER_TUNCOST=1; it checks only that
// every run conserves packets and joins exactly when it should.
// AQMROUTER_TUNCOST_CONFIGS=join,each runs only the named configurations;
// AQMROUTER_STRACE=1 adds strace -c counts (and spoils the CPU figures).
func TestTUNCost(t *testing.T) {
	if os.Getenv("AQMROUTER_TUNCOST") == "" {
		t.Skip("a 3-minute measurement; set AQMROUTER_TUNCOST=1 to run it")
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("AQMROUTER_TUNCOST")); err == nil && n > 3 {
		rounds = n
	}
	configs := []struct {
		name string
		args []string
	}{
		{"join", nil},
		{"each", []string{"-coalesce=false"}},
		{"no-offload", []string{"-offload=false"}},
		{"queues2", []string{"-queues", "2"}},
	}
	if only := os.Getenv("AQMROUTER_TUNCOST_CONFIGS"); only != "" {
		configs = slices.DeleteFunc(configs, func(c struct {
			name string
			args []string
		}) bool {
			return !slices.Contains(strings.Split(only, ","), c.name)
		})
	}
	for _, veth := range []string{"on", "off"} {
		t.Run("veth-offloads-"+veth, func(t *testing.T) {
			var l *lab
			if veth == "on" {
				l = newLabOffloads(t, map[string][]string{})
			} else {
				l = newLabOffloads(t, nil)
			}
			// setTun makes tun0 again, multi-queue or not: a persistent
			// device is attached only in the mode it was made in.
			mq := false
			setTun := func(multi bool) {
				if multi == mq {
					return
				}
				del := []string{"-n", l.r, "tuntap", "del", "dev", "tun0", "mode", "tun"}
				if mq {
					del = append(del, "multi_queue")
				}
				l.ip(del...)
				mq = multi
				add := []string{"-n", l.r, "tuntap", "add", "dev", "tun0", "mode", "tun"}
				if multi {
					add = append(add, "multi_queue")
				}
				l.ip(add...)
				l.ip("-n", l.r, "link", "set", "tun0", "up")
				l.ip("-n", l.r, "route", "add", "default", "dev", "tun0", "table", "100")
				l.ip("netns", "exec", l.r, "sysctl", "-qw", "net.ipv4.conf.tun0.rp_filter=0")
			}
			l.start(l.s, "server", "ready", "10.201.2.2")
			type result struct{ cpuUs, reads, writes, mbps float64 }
			res := map[string][]result{}
			for round := range rounds {
				for k := range configs {
					c := configs[(k+round)%len(configs)]
					setTun(c.name == "queues2")
					stats := filepath.Join(t.TempDir(), "stats.json")
					args := append([]string{"-tun", "tun0", "-aqm", "fq-codel", "-rate", "500mbit", "-report", "0", "-stats", stats}, c.args...)
					rt := l.start(l.r, "router", "MTU", args...)
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					cl := l.helper(ctx, l.c, "client", "load", "10.201.2.2", "4", "6s", "cubic")
					var clOut strings.Builder
					cl.Stdout, cl.Stderr = &clOut, &clOut
					if err := cl.Start(); err != nil {
						t.Fatal(err)
					}
					var st *exec.Cmd
					trace := filepath.Join(t.TempDir(), "strace")
					if os.Getenv("AQMROUTER_STRACE") != "" {
						// Counts only: under strace the CPU figures mean nothing.
						time.Sleep(2 * time.Second)
						st = exec.Command("strace", "-c", "-f", "-o", trace, "-p", strconv.Itoa(rt.cmd.Process.Pid))
						if err := st.Start(); err != nil {
							t.Fatal(err)
						}
					}
					if err := cl.Wait(); err != nil {
						t.Fatalf("client: %v\n%s", err, clOut.String())
					}
					if st != nil {
						st.Process.Signal(syscall.SIGINT)
						st.Wait()
						b, _ := os.ReadFile(trace)
						t.Logf("strace -c of the router (%s), the last 4 s:\n%s", c.name, b)
					}
					cancel()
					pid := rt.cmd.Process.Pid
					ticks, _ := cpuTicks(pid)
					syscr, syscw, _ := procIO(pid)
					rt.stop(t)
					s := readStats(t, stats)
					var acked int64
					var secs float64
					fmt.Sscanf(clOut.String(), "load %d %g", &acked, &secs)
					n := float64(s.Written.Packets)
					r := result{cpuUs: float64(ticks) * 1e4 / n, reads: float64(syscr) / n, writes: float64(syscw) / n, mbps: float64(acked) * 8 / secs / 1e6}
					res[c.name] = append(res[c.name], r)
					joins := c.name == "join" || c.name == "queues2"
					if !s.Conserved() || s.Written.Packets == 0 || joins != (s.Coalesced > 0) {
						t.Errorf("%s: conserved %v, %d written, %d joined", c.name, s.Conserved(), s.Written.Packets, s.Coalesced)
					}
					load, _ := os.ReadFile("/proc/loadavg")
					t.Logf("round %d %-10s CPU %.2f µs/packet, %.3f reads, %.3f writes per packet; %d packets written, %d joined, %d split, %d dropped; goodput %.0f Mb/s; loadavg %s",
						round, c.name, r.cpuUs, r.reads, r.writes, s.Written.Packets, s.Coalesced, s.Split, s.Dropped.Total, r.mbps, strings.Join(strings.Fields(string(load))[:3], " "))
				}
			}
			for _, c := range configs {
				rs := res[c.name]
				med := func(f func(result) float64) (float64, float64, float64) {
					v := make([]float64, len(rs))
					for i, r := range rs {
						v[i] = f(r)
					}
					slices.Sort(v)
					return v[len(v)/2], v[0], v[len(v)-1]
				}
				cm, clo, chi := med(func(r result) float64 { return r.cpuUs })
				rm, _, _ := med(func(r result) float64 { return r.reads })
				wm, _, _ := med(func(r result) float64 { return r.writes })
				gm, _, _ := med(func(r result) float64 { return r.mbps })
				t.Logf("veth offloads %s, %-10s CPU median %.2f µs/packet [%.2f, %.2f], reads %.3f, writes %.3f per packet, goodput %.0f Mb/s", veth, c.name, cm, clo, chi, rm, wm, gm)
			}
		})
	}
}
