// Command vsdpdk measures aqmkit's queues against DPDK's C on the same
// machine in the same run, and prints the ratio table that states how close
// to C each queue is.
//
// It builds the Go benchmark binaries (bench and fq) and the C harness in
// bench/dpdkref (installing libdpdk-dev with apt-get if pkg-config cannot
// find it and it runs as root), then runs them in rounds, interleaved (Go
// bursts, C, Go single calls, Go flow growth, then again), each pinned to
// one CPU with taskset (Go with GOMAXPROCS=1, as the C harness runs one
// thread), so that a change in the machine's load hits Go and
// C alike. It prints the median and minimum of every row and the ratios
// against their targets:
//
//	go run ./bench/cmd/vsdpdk            # six rounds, a few minutes
//	go run ./bench/cmd/vsdpdk -quick     # two short rounds, about a minute
//
// Each Go row is ns per packet forwarded (ns/pkt of BenchmarkBurst, ns/op
// of BenchmarkPacket and fq's BenchmarkPerfConcrete); each C row is ns per
// packet of the same scenario in bench/dpdkref/redpie.c. It is a reference
// tool for people, not part of CI.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

func main() {
	quick := flag.Bool("quick", false, "two short rounds (about a minute) instead of the full run")
	rounds := flag.Int("rounds", 6, "rounds of every row (medians and minimums are over rounds)")
	cpu := flag.Int("cpu", runtime.NumCPU()-1, "CPU to pin every run to (taskset -c)")
	benchtime := flag.String("benchtime", "300ms", "Go -test.benchtime per row")
	iters := flag.Int("iters", 20000000, "C iterations (packets) per row")
	out := flag.String("out", "", "also write the tables (markdown) to this file")
	flag.Parse()
	if *quick {
		*rounds, *benchtime, *iters = 2, "60ms", 3000000
	}
	if err := run(*rounds, *cpu, *benchtime, *iters, *out); err != nil {
		fmt.Fprintln(os.Stderr, "vsdpdk:", err)
		os.Exit(1)
	}
}

// samples holds every measurement of a row, by row name.
type samples map[string][]float64

func run(rounds, cpu int, benchtime string, iters int, out string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "vsdpdk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	benchBin, fqBin, cBin := filepath.Join(tmp, "bench.test"), filepath.Join(tmp, "fq.test"), filepath.Join(tmp, "redpie")
	logf("building the Go benchmarks")
	if err := cmd(root, "go", "test", "-c", "-o", benchBin, "./bench").Run(); err != nil {
		return fmt.Errorf("go test -c ./bench: %w", err)
	}
	if err := cmd(root, "go", "test", "-c", "-o", fqBin, "./fq").Run(); err != nil {
		return fmt.Errorf("go test -c ./fq: %w", err)
	}
	if err := buildC(root, cBin); err != nil {
		return err
	}
	pin := func(args ...string) []string { return append([]string{"taskset", "-c", strconv.Itoa(cpu)}, args...) }
	if _, err := exec.LookPath("taskset"); err != nil {
		logf("taskset not found: runs are not pinned")
		pin = func(args ...string) []string { return args }
	}
	goArgs := func(bin, pattern string) []string {
		return pin(bin, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", benchtime, "-test.cpu", "1")
	}
	runs := []struct {
		what string
		args []string
	}{
		{"Go bursts", goArgs(benchBin, "^BenchmarkBurst$/^(fifo|red|gentle-red|ared|codel|pie|dualpi2|fq-codel|sfq)$/^(idle|standing|congested|flows=1024)$/^32$")},
		{"C", pin(cBin, "-iters", strconv.Itoa(iters), "-cpu", strconv.Itoa(cpu))},
		{"Go single calls", goArgs(benchBin, "^BenchmarkPacket$/^(fifo|red|gentle-red|ared|codel|pie|dualpi2|fq-codel|sfq)$/")},
		{"Go flow growth", goArgs(fqBin, "^BenchmarkPerfConcrete$/^(fq-codel|sfq)/flows=(1|16384|65536)$")},
	}
	s := samples{}
	for r := range rounds {
		for _, x := range runs {
			logf("round %d/%d: %s", r+1, rounds, x.what)
			c := exec.Command(x.args[0], x.args[1:]...)
			c.Dir = root
			c.Stderr = io.Discard
			b, err := c.Output()
			if err != nil {
				return fmt.Errorf("%s: %v\n%s", x.what, err, b)
			}
			parse(b, s)
		}
	}
	var buf bytes.Buffer
	report(&buf, s, rounds)
	os.Stdout.Write(buf.Bytes())
	if out != "" {
		return os.WriteFile(out, buf.Bytes(), 0o644)
	}
	return nil
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "vsdpdk: "+format+"\n", args...) }

func cmd(dir string, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	return c
}

// repoRoot finds the directory holding go.work, from the working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above the working directory: run it inside the aqmkit repository")
		}
		dir = parent
	}
}

// buildC compiles bench/dpdkref/redpie.c against libdpdk, installing
// libdpdk-dev first if pkg-config cannot find it and we are root.
func buildC(root, bin string) error {
	if exec.Command("pkg-config", "--exists", "libdpdk").Run() != nil {
		if os.Geteuid() != 0 {
			return fmt.Errorf("libdpdk not found by pkg-config: install libdpdk-dev and pkg-config")
		}
		logf("installing libdpdk-dev and pkg-config with apt-get")
		c := cmd(root, "sh", "-c", "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libdpdk-dev pkg-config")
		if err := c.Run(); err != nil {
			return fmt.Errorf("apt-get install libdpdk-dev: %w", err)
		}
	}
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "libdpdk").Output()
	if err != nil {
		return fmt.Errorf("pkg-config libdpdk: %w", err)
	}
	args := append([]string{"-O2", "-Wall", "-Wextra", "-o", bin, filepath.Join(root, "bench", "dpdkref", "redpie.c")}, strings.Fields(string(flags))...)
	args = append(args, "-lm")
	logf("building the C harness")
	if err := cmd(root, "cc", args...).Run(); err != nil {
		return fmt.Errorf("cc redpie.c: %w", err)
	}
	return nil
}

var lineRE = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// parse adds each benchmark line's per-packet figure to s: ns/pkt where a
// line has it (bursts), ns/op otherwise. Names are normalised: Go's
// "Burst/red/standing/32" and C's "DPDK/burst/red/standing/32" stay apart
// by their prefixes.
func parse(b []byte, s samples) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		var op, pkt float64 = -1, -1
		for i := 1; i < len(fields); i++ {
			v, err := strconv.ParseFloat(fields[i-1], 64)
			if err != nil {
				continue
			}
			switch fields[i] {
			case "ns/op":
				op = v
			case "ns/pkt":
				pkt = v
			}
		}
		if pkt < 0 {
			pkt = op
		}
		if pkt >= 0 {
			s[m[1]] = append(s[m[1]], pkt)
		}
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	w := slices.Clone(v)
	slices.Sort(w)
	if len(w)%2 == 1 {
		return w[len(w)/2]
	}
	return (w[len(w)/2-1] + w[len(w)/2]) / 2
}

func minimum(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Min(v)
}

// ratioRow is one line of the ratio table: Go rows against C rows.
type ratioRow struct {
	group  string
	goRow  string
	cRow   string
	target float64
}

var (
	scenarios = []string{"idle", "standing", "congested"}
	singles   = []string{"codel", "pie", "dualpi2"}
	reds      = []string{"red", "gentle-red", "ared"}
)

func ratioRows() []ratioRow {
	var rows []ratioRow
	for _, sc := range scenarios {
		rows = append(rows, ratioRow{"FIFO, bursts of 32", "Burst/fifo/" + sc + "/32", "DPDK/burst/fifo/" + sc + "/32", 1.5})
	}
	for _, a := range reds {
		for _, sc := range scenarios {
			rows = append(rows, ratioRow{"RED family, bursts of 32", "Burst/" + a + "/" + sc + "/32", "DPDK/burst/red/" + sc + "/32", 1.5})
		}
	}
	for _, a := range singles {
		for _, sc := range scenarios {
			rows = append(rows, ratioRow{"CoDel, PIE, DualPI2, bursts of 32", "Burst/" + a + "/" + sc + "/32", "DPDK/burst/red/" + sc + "/32", 2})
		}
	}
	for _, a := range []string{"fq-codel", "sfq"} {
		rows = append(rows, ratioRow{"FQ-CoDel, SFQ at 1024 flows, bursts of 32", "Burst/" + a + "/flows=1024/32", "DPDK/burst/red/standing/32", 5})
	}
	for _, sc := range scenarios {
		t := 3.0
		if sc == "congested" {
			t = 4
		}
		rows = append(rows, ratioRow{"single calls through aqm.Queue", "Packet/fifo/" + sc, "DPDK/fifo/" + sc, t})
		for _, a := range append(slices.Clone(reds), singles...) {
			rows = append(rows, ratioRow{"single calls through aqm.Queue", "Packet/" + a + "/" + sc, "DPDK/red/" + sc, t})
		}
	}
	for _, a := range []string{"fq-codel", "sfq"} {
		rows = append(rows, ratioRow{"single calls: FQ at 1024 flows", "Packet/" + a + "/flows=1024", "DPDK/red/standing", 6})
	}
	return rows
}

// report writes the row table and the ratio table as markdown.
func report(w io.Writer, s samples, rounds int) {
	fmt.Fprintf(w, "## Ratio table (%d rounds, interleaved, pinned; ns per packet)\n\n", rounds)
	fmt.Fprintln(w, "| group | Go row | Go median | Go min | C row | C median | C min | ratio of medians | ratio of mins | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	met, total := 0, 0
	for _, r := range ratioRows() {
		g, c := s[r.goRow], s[r.cRow]
		if len(g) == 0 || len(c) == 0 {
			fmt.Fprintf(w, "| %s | %s | | | %s | | | | | ≤ %.1f× | not measured |\n", r.group, r.goRow, r.cRow, r.target)
			continue
		}
		rm, rmin := median(g)/median(c), minimum(g)/minimum(c)
		ok := rm <= r.target
		total++
		if ok {
			met++
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %s | %.1f | %.1f | %.2f× | %.2f× | ≤ %.1f× | %s |\n",
			r.group, r.goRow, median(g), minimum(g), r.cRow, median(c), minimum(c), rm, rmin, r.target, yesNo(ok))
	}
	fmt.Fprintf(w, "\n%d of %d rows at their target (ratio of medians).\n\n", met, total)
	fmt.Fprintln(w, "## Growth with flows (concrete types, minimums)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| queue | 1 flow | 16384 | 65536 | 1→16384 | target | 1→65536 | target |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, a := range []string{"fq-codel", "sfq"} {
		one := minimum(s["PerfConcrete/"+a+"/flows=1"])
		m16 := minimum(s["PerfConcrete/"+a+"/flows=16384"])
		m64 := minimum(s["PerfConcrete/"+a+"/flows=65536"])
		if one == 0 {
			fmt.Fprintf(w, "| %s | not measured |\n", a)
			continue
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.2f× | ≤ 2× %s | %.2f× | ≤ 4× %s |\n", a, one, m16, m64,
			m16/one, yesNo(m16/one <= 2), m64/one, yesNo(m64/one <= 4))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Every row")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| row | median | min | runs |")
	fmt.Fprintln(w, "|---|---|---|---|")
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %d |\n", k, median(s[k]), minimum(s[k]), len(s[k]))
	}
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
