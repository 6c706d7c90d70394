package lab

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcStat is what the lab reads from /proc/PID/stat and /proc/PID/status
// of the router: CPU time in clock ticks and memory in bytes.
type ProcStat struct {
	PID   int
	State byte
	// UTime and STime are the user and system CPU time in clock ticks
	// (fields 14 and 15 of /proc/PID/stat; USER_HZ, 100 on Linux).
	UTime, STime uint64
	// Threads is field 20.
	Threads int
	// RSSBytes is VmRSS and PeakRSSBytes VmHWM from /proc/PID/status
	// (0 when ParseProcStat alone filled the value).
	RSSBytes, PeakRSSBytes int64
	// At is when the sample was read.
	At time.Time
}

// ClockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times. Linux
// fixes it at 100 on every architecture the lab runs on.
const ClockTicks = 100

// ParseProcStat parses one line of /proc/PID/stat. The command name (field
// 2) is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')'.
func ParseProcStat(line []byte) (ProcStat, error) {
	var ps ProcStat
	open := bytes.IndexByte(line, '(')
	end := bytes.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return ps, fmt.Errorf("lab: /proc stat line has no (comm): %q", truncate(line, 80))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(line[:open])))
	if err != nil {
		return ps, fmt.Errorf("lab: /proc stat pid: %v", err)
	}
	ps.PID = pid
	// rest[0] is field 3 (state).
	rest := strings.Fields(string(line[end+1:]))
	if len(rest) < 18 {
		return ps, fmt.Errorf("lab: /proc stat line has %d fields after comm, want at least 18", len(rest))
	}
	if len(rest[0]) != 1 {
		return ps, fmt.Errorf("lab: /proc stat state %q", rest[0])
	}
	ps.State = rest[0][0]
	field := func(n int) (uint64, error) { // n is the 1-based field number
		v, err := strconv.ParseUint(rest[n-3], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("lab: /proc stat field %d: %v", n, err)
		}
		return v, nil
	}
	if ps.UTime, err = field(14); err != nil {
		return ps, err
	}
	if ps.STime, err = field(15); err != nil {
		return ps, err
	}
	th, err := field(20)
	if err != nil {
		return ps, err
	}
	ps.Threads = int(th)
	return ps, nil
}

// parseStatusMemory reads VmRSS and VmHWM (in kB) from /proc/PID/status.
func parseStatusMemory(b []byte) (rss, hwm int64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n * 1024
		case "VmHWM":
			hwm = n * 1024
		}
	}
	return rss, hwm
}

// ReadProcStat samples process pid: its CPU times and memory.
func ReadProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStat{}, err
	}
	ps, err := ParseProcStat(b)
	if err != nil {
		return ps, err
	}
	ps.At = time.Now()
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		ps.RSSBytes, ps.PeakRSSBytes = parseStatusMemory(st)
	}
	return ps, nil
}

// CPUShare is the share of one core that a process used between two
// samples: (Δutime + Δstime) / ClockTicks / Δt. 0.5 means half a core. It
// returns NaN when the samples are not in order or of different processes.
func CPUShare(a, b ProcStat) float64 {
	dt := b.At.Sub(a.At).Seconds()
	if a.PID != b.PID || dt <= 0 || b.UTime+b.STime < a.UTime+a.STime {
		return math.NaN()
	}
	return float64(b.UTime+b.STime-a.UTime-a.STime) / ClockTicks / dt
}

// ParseLoad1 reads the 1-minute load average, the first field of
// /proc/loadavg ("11.03 11.39 10.40 3/412 6607").
func ParseLoad1(b []byte) (float64, error) {
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN(), fmt.Errorf("loadavg: empty")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return math.NaN(), fmt.Errorf("loadavg: bad first field %q", f[0])
	}
	return v, nil
}

// ReadLoad1 returns the machine's 1-minute load average, or NaN if
// /proc/loadavg cannot be read.
func ReadLoad1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	v, _ := ParseLoad1(b)
	return v
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
