package lab

import (
	"math"
	"os"
	"testing"
	"time"
)

// TestParseProcStat protects field counting from the last ')': a command
// name with spaces and parentheses must not shift utime, stime or threads.
func TestParseProcStat(t *testing.T) {
	line := "4242 (aqm (router) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 567 0 0 20 0 7 0 999 123456789 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	ps, err := ParseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if ps.PID != 4242 || ps.State != 'S' || ps.UTime != 1234 || ps.STime != 567 || ps.Threads != 7 {
		t.Errorf("parsed %+v, want pid 4242, state S, utime 1234, stime 567, threads 7", ps)
	}
	for _, bad := range []string{"", "12 no parens S 1", "x (a) S 1 2 3", "1 (a) S 1 2 3 4 5 6 7 8 9 10 x 11 12 13 14 15 16 17"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("ParseProcStat(%q) accepted", bad)
		}
	}
}

// TestReadProcStatSelf protects reading a live process: this test's own.
func TestReadProcStatSelf(t *testing.T) {
	ps, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	if ps.PID != os.Getpid() || ps.Threads < 1 || ps.RSSBytes <= 0 || ps.PeakRSSBytes < ps.RSSBytes {
		t.Errorf("self: %+v", ps)
	}
}

// TestStatusMemory protects the VmRSS/VmHWM reading in bytes.
func TestStatusMemory(t *testing.T) {
	rss, hwm := parseStatusMemory([]byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t3\n"))
	if rss != 1024*1024 || hwm != 2048*1024 {
		t.Errorf("rss %d hwm %d, want %d %d", rss, hwm, 1024*1024, 2048*1024)
	}
}

// TestCPUShare protects the CPU share: ticks over elapsed time, NaN for
// samples out of order or of different processes.
func TestCPUShare(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := ProcStat{PID: 1, UTime: 100, STime: 50, At: t0}
	b := ProcStat{PID: 1, UTime: 130, STime: 70, At: t0.Add(2 * time.Second)}
	if got := CPUShare(a, b); math.Abs(got-0.25) > 1e-12 { // 50 ticks = 0.5 s in 2 s
		t.Errorf("CPUShare = %v, want 0.25", got)
	}
	if !math.IsNaN(CPUShare(b, a)) {
		t.Error("reversed samples gave a number")
	}
	c := b
	c.PID = 2
	if !math.IsNaN(CPUShare(a, c)) {
		t.Error("samples of two processes gave a number")
	}
}

// TestParseLoad1 protects the load average the reports carry: the first
// field of /proc/loadavg, and an error (NaN) for anything else.
func TestParseLoad1(t *testing.T) {
	v, err := ParseLoad1([]byte("11.03 11.39 10.40 3/412 6607\n"))
	if err != nil || v != 11.03 {
		t.Errorf("ParseLoad1 = %v, %v; want 11.03", v, err)
	}
	for _, bad := range []string{"", "  \n", "x 1 2", "-1 2 3", "+Inf 1 1"} {
		if v, err := ParseLoad1([]byte(bad)); err == nil || !math.IsNaN(v) {
			t.Errorf("ParseLoad1(%q) = %v, %v; want NaN and an error", bad, v, err)
		}
	}
	if v := ReadLoad1(); !(v >= 0) {
		t.Errorf("ReadLoad1() = %v on a Linux machine, want a load average", v)
	}
}
