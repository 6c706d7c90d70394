package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestSaturationReported protects the router's report of a queue it does
// not hold, on the real kernel: while the router is stopped (SIGSTOP) the
// client sends 2000 UDP datagrams toward the server, the kernel's TUN
// queue (500 packets) overflows into tun0's tx_dropped, and once the
// router runs again it warns once on stderr that it is saturated, its
// stats file counts the kernel's drops and the saturated window, and its
// metrics say router_saturated; with -auto-cap its rate is capped below
// -rate (at its floor, since the router read little while saturated) and
// still rising when it exits a second later.
func TestSaturationReported(t *testing.T) {
	for _, autoCap := range []bool{false, true} {
		t.Run(map[bool]string{false: "report", true: "auto-cap"}[autoCap], func(t *testing.T) { testSaturation(t, autoCap) })
	}
}

func testSaturation(t *testing.T, autoCap bool) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for its /dev/udp")
	}
	l := newLab(t)
	stats := filepath.Join(t.TempDir(), "stats.json")
	args := []string{"-tun", "tun0", "-rate", "20mbit", "-stats", stats, "-report", "0", "-metrics", "127.0.0.1:9100"}
	if autoCap {
		args = append(args, "-auto-cap")
	}
	rt := l.start(l.r, "router", "MTU", args...)
	time.Sleep(500 * time.Millisecond) // the load monitor's first window has begun
	if err := rt.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "netns", "exec", l.c, "bash", "-c",
		"for i in $(seq 2000); do echo x > /dev/udp/10.201.2.2/9; done").CombinedOutput()
	rt.cmd.Process.Signal(syscall.SIGCONT)
	if err != nil {
		t.Fatalf("UDP burst: %v\n%s", err, out)
	}
	time.Sleep(time.Second) // a few windows
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vars, err := l.helper(ctx, l.r, "fetch", "http://127.0.0.1:9100/debug/vars").CombinedOutput()
	if err != nil || !bytes.Contains(vars, []byte(`"aqmrouter_load"`)) || !bytes.Contains(vars, []byte(`"router_saturated_windows": 1`)) {
		t.Errorf("metrics: %v\n%.3000s", err, vars)
	}
	if err := rt.stop(t); err != nil {
		t.Errorf("router exit: %v\n%s", err, rt.output())
	}
	s := readStats(t, stats)
	log := rt.output()
	t.Logf("load %+v\nrouter:\n%s", s.Load, log)
	if s.Load.KernelDropped < 1000 || s.Load.SaturatedWindows == 0 {
		t.Errorf("kernel dropped %d, saturated windows %d; want at least 1000 and 1", s.Load.KernelDropped, s.Load.SaturatedWindows)
	}
	if n := strings.Count(log, "router: saturated:"); n != 1 {
		t.Errorf("%d saturation warnings on stderr, want 1", n)
	}
	capped := s.Load.RateCap >= 2*aqm.Mbit && s.Load.RateCap < 20*aqm.Mbit
	if autoCap != capped || autoCap != strings.Contains(log, "capping the rate") {
		t.Errorf("-auto-cap %v: rate cap %v at exit", autoCap, s.Load.RateCap)
	}
}

// TestSaturationUnderLoad shows what the router reports when real TCP
// asks more of it than it can forward: four CUBIC uploads for 8 s through
// the router at -rate 2gbit with the veths' offloads off (one system call
// per packet each way), with and without -auto-cap. It logs the load the
// router reported and the goodput; it asserts only what holds on any
// machine: the counters conserve packets and a saturated router warned.
// It is a measurement, run with AQMROUTER_SATURATION=1.
func TestSaturationUnderLoad(t *testing.T) {
	if os.Getenv("AQMROUTER_SATURATION") == "" {
		t.Skip("a measurement; set AQMROUTER_SATURATION=1 to run it")
	}
	l := newLab(t)
	l.start(l.s, "server", "ready", "10.201.2.2")
	for _, autoCap := range []bool{false, true} {
		stats := filepath.Join(t.TempDir(), "stats.json")
		args := []string{"-tun", "tun0", "-rate", "2gbit", "-delay", "10ms", "-report", "1s", "-stats", stats}
		if autoCap {
			args = append(args, "-auto-cap")
		}
		rt := l.start(l.r, "router", "MTU", args...)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := l.helper(ctx, l.c, "client", "load", "10.201.2.2", "4", "8s", "cubic").CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("client: %v\n%s", err, out)
		}
		rt.stop(t)
		var acked int64
		var secs float64
		fmt.Sscanf(string(out), "load %d %g", &acked, &secs)
		s := readStats(t, stats)
		log := rt.output()
		t.Logf("-auto-cap %v: goodput %.0f Mb/s; load %+v\n%s", autoCap, float64(acked)*8/secs/1e6, s.Load, log)
		if !s.Conserved() {
			t.Errorf("-auto-cap %v: counters do not conserve packets", autoCap)
		}
		if s.Load.SaturatedWindows > 0 && !strings.Contains(log, "router: saturated:") {
			t.Errorf("-auto-cap %v: %d saturated windows and no warning", autoCap, s.Load.SaturatedWindows)
		}
	}
}
