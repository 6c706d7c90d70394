package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSaturationReported protects the router's report of a queue it does
// not hold, on the real kernel: while the router is stopped (SIGSTOP) the
// client sends 2000 UDP datagrams toward the server, the kernel's TUN
// queue (500 packets) overflows into tun0's tx_dropped, and once the
// router runs again it warns once on stderr that it is saturated, and its
// stats file counts the kernel's drops and the saturated window.
func TestSaturationReported(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for its /dev/udp")
	}
	l := newLab(t)
	stats := filepath.Join(t.TempDir(), "stats.json")
	rt := l.start(l.r, "router", "MTU", "-tun", "tun0", "-rate", "20mbit", "-stats", stats, "-report", "0")
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
}
