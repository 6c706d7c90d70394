package main

import (
	"bytes"
	"context"
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
