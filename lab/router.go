package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RouterCommand is how the lab starts a router: the program and any
// arguments that come before the lab's flags. StandinRouter is the lab's
// own stand-in (see StandinMain).
type RouterCommand struct {
	Argv []string
	// Flags is the router's -h text, read once, so the lab passes only
	// flags the router has (-limit, -metrics).
	Flags string
}

// Standin reports whether rc is the lab's stand-in router.
func (rc RouterCommand) Standin() bool {
	return len(rc.Argv) >= 3 && rc.Argv[1] == AgentArg && rc.Argv[2] == "standin"
}

// Has reports whether the router's -h text lists flag -name.
func (rc RouterCommand) Has(name string) bool {
	for _, line := range strings.Split(rc.Flags, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "-"+name || f[0] == "--"+name) {
			return true
		}
	}
	return false
}

// StandinRouter returns the command of the lab's stand-in router.
func StandinRouter() (RouterCommand, error) {
	exe, err := os.Executable()
	if err != nil {
		return RouterCommand{}, err
	}
	return RouterCommand{Argv: []string{exe, AgentArg, "standin"}, Flags: "-tun\n-aqm\n-rate\n-delay\n-stats\n-metrics\n-limit\n"}, nil
}

// RouterFromPath returns the command of the router program at path, after
// reading its -h.
func RouterFromPath(path string) (RouterCommand, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return RouterCommand{}, err
	}
	if _, err := os.Stat(abs); err != nil {
		return RouterCommand{}, fmt.Errorf("router %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, abs, "-h").CombinedOutput() // -h may exit 0 or 2
	return RouterCommand{Argv: []string{abs}, Flags: string(out) + "\n"}, nil
}

// BuildRouter builds the Go package pkg (./cmd/aqmrouter) of the module in
// dir into a temporary directory and returns the binary's path.
func BuildRouter(ctx context.Context, dir, pkg string) (string, error) {
	tmp, err := os.MkdirTemp("", "aqmlab-router-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "aqmrouter")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// RouterProc is a router running in a namespace.
type RouterProc struct {
	NS, Dev   string
	cmd       *exec.Cmd
	statsPath string
	stderr    bytes.Buffer
	done      chan struct{}
	mu        sync.Mutex
	samples   []ProcStat
	stopSampl chan struct{}
	sampled   chan struct{}
}

// RouterArgs is what one router instance is asked to do.
type RouterArgs struct {
	AQM    string
	Rate   string // tc syntax; "0" = unshaped
	Delay  time.Duration
	Limit  int      // packets; passed as -limit when the router has it
	Params string   // the queue's settings, passed as -params
	GSO    string   // the router's super-packet policy, passed as -gso
	Extra  []string // more flags, verbatim
}

// argv is the ip command line that runs rc in ns for a: the router's
// flags from a, -limit and -params only when set, which rc must have.
func (a RouterArgs) argv(rc RouterCommand, ns, dev, statsPath string) ([]string, error) {
	args := append([]string{"netns", "exec", ns}, niceArgs()...)
	args = append(args, rc.Argv...)
	args = append(args, "-tun", dev, "-aqm", a.AQM, "-rate", a.Rate, "-delay", fmt.Sprintf("%dus", a.Delay.Microseconds()), "-stats", statsPath)
	if a.Limit > 0 {
		if !rc.Has("limit") {
			return nil, fmt.Errorf("the router has no -limit flag (asked for %d packets)", a.Limit)
		}
		args = append(args, "-limit", fmt.Sprint(a.Limit))
	}
	if a.Params != "" {
		if !rc.Has("params") {
			return nil, fmt.Errorf("the router has no -params flag (asked for %s)", a.Params)
		}
		args = append(args, "-params", a.Params)
	}
	if a.GSO != "" {
		if !rc.Has("gso") {
			return nil, fmt.Errorf("the router has no -gso flag (asked for %s)", a.GSO)
		}
		args = append(args, "-gso", a.GSO)
	}
	args = append(args, a.Extra...)
	return args, nil
}

// StartRouter starts rc in ns with a TUN device dev, routes table 100 to
// it and starts sampling its /proc/PID/stat every 200 ms.
func StartRouter(ctx context.Context, rc RouterCommand, ns, dev, statsDir string, a RouterArgs) (*RouterProc, error) {
	rp := &RouterProc{NS: ns, Dev: dev, statsPath: filepath.Join(statsDir, ns+"-"+dev+".stats.json"),
		done: make(chan struct{}), stopSampl: make(chan struct{}), sampled: make(chan struct{})}
	os.Remove(rp.statsPath)
	args, err := a.argv(rc, ns, dev, rp.statsPath)
	if err != nil {
		return nil, err
	}
	rp.cmd = exec.Command("ip", args...)
	rp.cmd.Stderr = &rp.stderr
	rp.cmd.Stdout = &rp.stderr
	if err := rp.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { rp.cmd.Wait(); close(rp.done) }()
	go rp.sample()
	if err := RouteTUN(ctx, ns, dev, rp.done); err != nil {
		rp.Stop()
		return nil, fmt.Errorf("%v (router output: %s)", err, strings.TrimSpace(rp.stderr.String()))
	}
	select {
	case <-rp.done:
		return nil, fmt.Errorf("router exited at start: %s", strings.TrimSpace(rp.stderr.String()))
	default:
	}
	return rp, nil
}

// PID is the router's process id (ip netns exec replaces itself with it).
func (rp *RouterProc) PID() int { return rp.cmd.Process.Pid }

func (rp *RouterProc) sample() {
	defer close(rp.sampled)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if ps, err := ReadProcStat(rp.PID()); err == nil {
			rp.mu.Lock()
			rp.samples = append(rp.samples, ps)
			rp.mu.Unlock()
		}
		select {
		case <-rp.stopSampl:
			return
		case <-rp.done:
			return
		case <-t.C:
		}
	}
}

// Samples returns the /proc samples taken so far.
func (rp *RouterProc) Samples() []ProcStat {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return append([]ProcStat(nil), rp.samples...)
}

// Stop sends SIGTERM, waits up to 5 s (then SIGKILL) and returns the final
// counters from the -stats file and the raw file.
func (rp *RouterProc) Stop() (RouterStats, []byte, error) {
	select {
	case <-rp.stopSampl:
	default:
		close(rp.stopSampl)
	}
	<-rp.sampled
	rp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-rp.done:
	case <-time.After(5 * time.Second):
		rp.cmd.Process.Kill()
		<-rp.done
		return RouterStats{}, nil, fmt.Errorf("router ignored SIGTERM for 5 s: killed")
	}
	b, err := os.ReadFile(rp.statsPath)
	if err != nil {
		return RouterStats{}, nil, fmt.Errorf("%w: %v (router output: %s)", errNoStats, err, strings.TrimSpace(rp.stderr.String()))
	}
	os.Remove(rp.statsPath)
	st, err := ParseRouterStats(b)
	return st, b, err
}

// Output is what the router printed.
func (rp *RouterProc) Output() string { return rp.stderr.String() }

// ParseRouterStats reads a router's -stats JSON. It takes the counters
// read, written, dropped, marked and queued from the top-level object, or,
// when the top level has none of them, sums them over its member objects
// (one per direction, say), one level down. A counter is a number or an
// object with "packets" (aqmrouter's read and written) or "total" (its
// dropped, by reason).
func ParseRouterStats(b []byte) (RouterStats, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return RouterStats{}, fmt.Errorf("router stats: %v", err)
	}
	get := func(m map[string]json.RawMessage) (RouterStats, bool) {
		var st RouterStats
		found := false
		for k, p := range map[string]*int64{"read": &st.Read, "written": &st.Written, "dropped": &st.Dropped, "marked": &st.Marked, "queued": &st.Queued} {
			if raw, ok := m[k]; ok {
				if v, ok := counterValue(raw); ok {
					*p = v
					found = true
				}
			}
		}
		return st, found
	}
	if st, ok := get(m); ok {
		return st, nil
	}
	var sum RouterStats
	any := false
	for _, raw := range m {
		var sub map[string]json.RawMessage
		if json.Unmarshal(raw, &sub) != nil {
			continue
		}
		if st, ok := get(sub); ok {
			any = true
			sum.Read += st.Read
			sum.Written += st.Written
			sum.Dropped += st.Dropped
			sum.Marked += st.Marked
			sum.Queued += st.Queued
		}
	}
	if !any {
		return sum, fmt.Errorf("router stats: no read/written/dropped/marked/queued counters in %s", truncate(b, 200))
	}
	return sum, nil
}

// counterValue reads a counter that is a number, or an object holding it
// as "packets" (a packet and byte count) or "total" (drops by reason).
func counterValue(raw json.RawMessage) (int64, bool) {
	var v float64
	if json.Unmarshal(raw, &v) == nil {
		return int64(v), true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return 0, false
	}
	for _, k := range []string{"packets", "total"} {
		if r, ok := obj[k]; ok && json.Unmarshal(r, &v) == nil {
			return int64(v), true
		}
	}
	return 0, false
}

// Conserved reports whether every packet read is accounted for.
func (s RouterStats) Conserved() bool { return s.Read == s.Written+s.Dropped+s.Queued }
