package lab

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FlentTests are the flent tests the lab drives through the router when
// flent and its clients are installed (see FlentMissing). On the command
// line each is named with a "flent-" prefix (aqmlab flent-rrul).
var FlentTests = []string{"rrul", "rrul_be", "tcp_nup", "rtt_fair"}

// FlentDelay is flent's DELAY: the ping-only time it runs before the
// bulk flows start and after they stop (flent's own default, 5 s).
const FlentDelay = 5 * time.Second

// flentTools are the programs a flent run needs: flent itself, netperf
// and its server for the TCP flows (in demo mode, so flent can sample
// them), irtt and its server for the UDP latency flows, and fping (or
// ping) for the ICMP one.
var flentTools = []string{"flent", "netperf", "netserver", "irtt"}

// FlentMissing lists the programs a flent run needs that are not on PATH,
// each with where it comes from; nil when all are there. netperf is not
// in Debian's main archive, so on Debian it is usually the one missing.
func FlentMissing() []string {
	var out []string
	for _, t := range flentTools {
		if _, err := exec.LookPath(t); err != nil {
			out = append(out, t+" ("+flentToolSource(t)+")")
		}
	}
	if _, err := exec.LookPath("fping"); err != nil {
		if _, err := exec.LookPath("ping"); err != nil {
			out = append(out, "fping or ping (Debian: fping, iputils-ping)")
		}
	}
	return out
}

func flentToolSource(t string) string {
	switch t {
	case "flent":
		return "Debian: flent"
	case "irtt":
		return "Debian: irtt"
	default:
		return "netperf, built with --enable-demo; not in Debian's main archive"
	}
}

// flentSuite is the configuration of one flent test, name without the
// "flent-" prefix: flent's own load, its ICMP ping as the probe, with the
// lab's idle and tail spans set to flent's DELAY so that the idle latency
// and the load window line up with what flent runs.
func flentSuite(name string, o Options) ([]Config, error) {
	if !slices.Contains(FlentTests, name) {
		return nil, fmt.Errorf("lab: no flent test %q (have %s)", name, strings.Join(FlentTests, ", "))
	}
	length := o.Duration.Round(time.Second)
	if length < time.Second {
		length = time.Second
	}
	return o.each("flent-"+name, func(c *Config) {
		c.Flent = name
		c.Idle, c.Tail = FlentDelay, FlentDelay
		c.Load = []Window{{From: FlentDelay, To: FlentDelay + length}}
		c.Note = "flent " + name + " (flent's own load and ICMP ping)"
		if name == "tcp_nup" {
			c.Note = fmt.Sprintf("flent tcp_nup, upload_streams=%d", o.N)
			c.FlentStreams = o.N
		}
	}), nil
}

// flentArgs is the flent command line of a run of cfg against server,
// writing its data file into dir.
func flentArgs(cfg Config, server, dir string) []string {
	length := (cfg.Load[0].To - cfg.Load[0].From).Round(time.Second)
	args := []string{cfg.Flent,
		"-H", server,
		"-l", strconv.Itoa(int(length / time.Second)),
		"-d", strconv.Itoa(int(FlentDelay / time.Second)),
		"-D", dir,
		"-t", sanitize(cfg.Name()),
		"-x",
	}
	switch cfg.Flent {
	case "tcp_nup":
		args = append(args, "--test-parameter", fmt.Sprintf("upload_streams=%d", max(cfg.FlentStreams, 1)))
	case "rtt_fair":
		// rtt_fair runs one flow pair per host; the server namespace
		// answers on flentExtraAddrs too, all on the same path (the lab's
		// own rtt_fair test gives each flow its own round trip).
		for _, a := range flentExtraAddrs {
			args = append(args, "-H", a)
		}
	}
	if cfg.FlentCC != "" {
		args = append(args, "--test-parameter", "tcp_cong_control="+cfg.FlentCC)
	}
	return args
}

// flentExtraAddrs are the server namespace's further addresses for
// flent's rtt_fair, which needs a host per flow: inside the server's
// /24, so that they take the same path through the router.
var flentExtraAddrs = []string{"10.201.2.3", "10.201.2.4", "10.201.2.5"}

// flentData is the part of a flent data file (.flent.gz: gzipped JSON)
// the lab reads: the sample times in seconds from the start, one series
// of values per data set (null where a sample is missing), and the
// metadata's start time.
type flentData struct {
	X        []float64             `json:"x_values"`
	Results  map[string][]*float64 `json:"results"`
	Metadata struct {
		T0 string `json:"T0"`
	} `json:"metadata"`
}

// readFlent reads a flent data file, gzipped or not.
func readFlent(r io.Reader) (flentData, error) {
	var d flentData
	b, err := io.ReadAll(r)
	if err != nil {
		return d, err
	}
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		z, err := gzip.NewReader(strings.NewReader(string(b)))
		if err != nil {
			return d, fmt.Errorf("flent data: %v", err)
		}
		if b, err = io.ReadAll(z); err != nil {
			return d, fmt.Errorf("flent data: %v", err)
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("flent data: %v", err)
	}
	if len(d.X) == 0 {
		return d, errors.New("flent data: no samples (x_values is empty)")
	}
	for name, s := range d.Results {
		if len(s) != len(d.X) {
			return d, fmt.Errorf("flent data: series %q has %d samples for %d times", name, len(s), len(d.X))
		}
	}
	return d, nil
}

// start returns the data's T0 (flent writes it in UTC without a zone),
// or false if it has none.
func (d flentData) start() (time.Time, bool) {
	t, err := time.Parse("2006-01-02T15:04:05.999999", d.Metadata.T0)
	return t, err == nil
}

// flentFlowSeries reports whether a series is one TCP flow's throughput
// (not a sum, average or fairness index) and its direction.
func flentFlowSeries(name string) (dir string, ok bool) {
	switch {
	case strings.HasPrefix(name, "TCP upload"):
		dir = "up"
	case strings.HasPrefix(name, "TCP download"):
		dir = "down"
	default:
		return "", false
	}
	for _, agg := range []string{"sum", "avg", "fairness", "totals"} {
		if strings.HasSuffix(name, " "+agg) {
			return "", false
		}
	}
	return dir, true
}

// clientResult turns flent's data into the lab's ClientResult, with
// offsets from its start: the first ICMP ping series is the probe (a
// missing sample is a lost probe), and each TCP flow's throughput in
// Mbit/s is integrated into cumulative byte samples, so that the lab's
// analysis gives the same figures for flent's load as for its own.
func (d flentData) clientResult(load Window) ClientResult {
	at := func(i int) time.Duration { return time.Duration(d.X[i] * float64(time.Second)) }
	var cr ClientResult
	names := make([]string, 0, len(d.Results))
	for n := range d.Results {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.HasPrefix(n, "Ping (ms) ICMP") {
			continue
		}
		p := &ProbeResult{}
		for i, v := range d.Results[n] {
			s := ProbeSample{T: at(i), RTT: -1}
			if v != nil && !math.IsNaN(*v) {
				s.RTT = time.Duration(*v * float64(time.Millisecond))
			}
			p.Sent++
			if s.RTT < 0 {
				p.Lost++
			}
			p.Samples = append(p.Samples, s)
		}
		cr.Probe = p
		break
	}
	id := 0
	for _, n := range names {
		dir, ok := flentFlowSeries(n)
		if !ok {
			continue
		}
		f := FlowResult{FlowSpec: FlowSpec{ID: id, Dir: dir, Start: load.From, Stop: load.To}}
		id++
		var bytes float64
		prev := time.Duration(0)
		for i, v := range d.Results[n] {
			t := at(i)
			if v != nil && !math.IsNaN(*v) && *v > 0 && t > prev {
				bytes += *v * 1e6 / 8 * (t - prev).Seconds()
			}
			prev = t
			f.Samples = append(f.Samples, ByteSample{T: t, Bytes: int64(bytes)})
		}
		f.Bytes = int64(bytes)
		cr.Flows = append(cr.Flows, f)
	}
	return cr
}

// runFlent runs cfg's flent test from the client namespace against
// netperf's and irtt's servers in the server namespace, keeps flent's
// data file in l.FlentDir, and returns what it measured as the main
// client's result and the time flent's samples count from.
func (l *Lab) runFlent(ctx context.Context, cfg Config) (ClientResult, time.Time, string, error) {
	t := l.Topo
	var cr ClientResult
	if miss := FlentMissing(); len(miss) > 0 {
		return cr, time.Time{}, "", fmt.Errorf("flent %s needs %s", cfg.Flent, strings.Join(miss, ", "))
	}
	end := cfg.End()
	if cfg.Flent == "rtt_fair" {
		for _, a := range flentExtraAddrs {
			if err := ip(ctx, "-n", t.Server, "addr", "add", a+"/24", "dev", "s0"); err != nil {
				return cr, time.Time{}, "", fmt.Errorf("rtt_fair's server address %s: %v", a, err)
			}
			defer ip(context.Background(), "-n", t.Server, "addr", "del", a+"/24", "dev", "s0")
		}
	}
	// Both servers listen on every address of the server namespace, which
	// has no others than the lab's.
	servers := [][]string{
		{"netserver", "-D"},
		{"irtt", "server", "-q"},
	}
	for _, argv := range servers {
		cmd := exec.Command("ip", append([]string{"netns", "exec", t.Server}, argv...)...)
		if err := cmd.Start(); err != nil {
			return cr, time.Time{}, "", fmt.Errorf("%s in the server namespace: %v", argv[0], err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		defer func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // let the servers bind
	dir := filepath.Join(l.TmpDir, "flent-"+token())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cr, time.Time{}, "", err
	}
	defer os.RemoveAll(dir)
	cctx, cancel := context.WithTimeout(ctx, end+2*time.Minute)
	defer cancel()
	argv := append(append([]string{"netns", "exec", t.Client}, niceArgs()...), "flent")
	cmd := exec.CommandContext(cctx, "ip", append(argv, flentArgs(cfg, ServerAddr, dir)...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return cr, began, "", fmt.Errorf("flent %s: %v: %s", cfg.Flent, err, lastLines(out.String(), 5))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.flent.gz"))
	if len(files) != 1 {
		return cr, began, "", fmt.Errorf("flent %s wrote %d data files: %s", cfg.Flent, len(files), lastLines(out.String(), 5))
	}
	f, err := os.Open(files[0])
	if err != nil {
		return cr, began, "", err
	}
	defer f.Close()
	d, err := readFlent(f)
	if err != nil {
		return cr, began, "", err
	}
	if t0, ok := d.start(); ok {
		began = t0
	}
	kept := ""
	if l.FlentDir != "" {
		if err := os.MkdirAll(l.FlentDir, 0o755); err == nil {
			kept = filepath.Join(l.FlentDir, filepath.Base(files[0]))
			if err := copyFile(files[0], kept); err != nil {
				return cr, began, "", err
			}
		}
	}
	return d.clientResult(cfg.Load[0]), began, kept, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
