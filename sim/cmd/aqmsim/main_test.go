package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"github.com/aqmkit/aqmkit/sim"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBadFlags protects the command's usage errors: each bad flag is named,
// with exit code 2 and no simulation run.
func TestBadFlags(t *testing.T) {
	cases := map[string][]string{
		"scenario": {"-scenario", "nope"},
		"aqms":     {"-aqms", "fifo,warp-drive"},
		"rate":     {"-rate", "fast"},
		"rtts":     {"-rtts", "10ms,banana"},
		"format":   {"-format", "gif"},
		"variant":  {"-scenario", "red-family", "-variant", "nope"},
		"tcp":      {"-tcp", "bsd"},
		"trace":    {"-scenario", "compare", "-trace", "x.up"},
		"argument": {"stray"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			require.Equal(t, 2, code, "stderr: %s", errb.String())
			require.Contains(t, errb.String(), "aqmsim:", "a message, not just usage")
			if name != "argument" {
				require.Contains(t, errb.String(), "-"+name+":", "the message names the flag")
			}
			require.Empty(t, out.String(), "no table for a bad command line")
		})
	}
}

// TestShortRunWritesOutputs protects the command end to end: a short run
// prints its table and writes JSON, CSV and plots into -out.
func TestShortRunWritesOutputs(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"-aqms", "fifo,codel", "-duration", "3s", "-rate", "10M", "-q", "-out", dir}, &out, &errb)
	require.Equal(t, 0, code, "stderr: %s", errb.String())
	table := out.String()
	require.Contains(t, table, "fifo")
	require.Contains(t, table, "codel")
	require.Contains(t, table, "TCP profile: linux", "the profile is printed with the results")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	joined := strings.Join(names, " ")
	require.Contains(t, joined, ".json")
	require.Contains(t, joined, ".csv")
	require.Contains(t, joined, ".svg")
	js, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	raw, err := os.ReadFile(js[0])
	require.NoError(t, err)
	require.True(t, json.Valid(raw), "the JSON output parses")
}

// TestSpeedtestQuickEndToEnd protects the speedtest command path: a
// CI-sized matrix prints the table and the three findings, and writes the
// study's plots.
func TestSpeedtestQuickEndToEnd(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"-scenario", "speedtest", "-quick", "-rate", "200M", "-aqms", "fq-codel,fifo", "-duration", "1s",
		"-reps", "1", "-q", "-out", dir}, &out, &errb)
	require.Equal(t, 0, code, "stderr: %s", errb.String())
	for _, s := range []string{"ndt7 200M burst=on cross=on", "iperf3 200M burst=off cross=off", "finding 1", "finding 2", "finding 3", "inst sd Mb/s"} {
		require.Contains(t, out.String(), s)
	}
	for _, f := range []string{"speedtest-ndt7-burst_on-cross_on-inst-throughput.svg", "speedtest-iperf3-burst_off-cross_off-throughput-box.svg",
		"speedtest-ndt7-burst_off-cross_on-rtt-rate.svg"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
}

// TestReplayFromJSON protects -from: the tables printed from a saved JSON
// output equal the ones the simulation printed, and a JSON file of another
// scenario is refused.
func TestReplayFromJSON(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"-scenario", "speedtest", "-quick", "-rate", "200M", "-aqms", "fq-codel", "-duration", "1s", "-reps", "1", "-q"}
	require.Equal(t, 0, run(append(args, "-out", dir), &out, &errb), errb.String())
	var again bytes.Buffer
	require.Equal(t, 0, run([]string{"-scenario", "speedtest", "-from", filepath.Join(dir, "speedtest.json")}, &again, &errb), errb.String())
	cut := func(s string) string { return s[:strings.LastIndex(s, "simulations,")] }
	require.Equal(t, cut(out.String()), cut(again.String()))
	errb.Reset()
	require.Equal(t, 1, run([]string{"-scenario", "l4s", "-from", filepath.Join(dir, "speedtest.json")}, &again, &errb))
	require.Contains(t, errb.String(), "not one of scenario l4s")
}

// TestCSVCarriesTableFigures protects the CSV output: every figure a
// scenario's table prints is in the CSV under the column the table names,
// with the same value (up to the table's percent scaling).
func TestCSVCarriesTableFigures(t *testing.T) {
	for _, sc := range sim.Scenarios() {
		runs, err := sc.Runs(sim.Options{Seed: 1, Duration: 3 * time.Second, Quick: true})
		require.NoError(t, err)
		pick := []sim.Run{runs[0]}
		for _, r := range runs {
			if r.Params["cross"] == "on" {
				pick = append(pick, r)
				break
			}
		}
		outs := sim.ExecuteAll(pick, 1, 0, nil)
		path := filepath.Join(t.TempDir(), sc.Name+".csv")
		require.NoError(t, writeCSV(path, outs))
		f, err := os.Open(path)
		require.NoError(t, err)
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		require.NoError(t, err)
		require.Len(t, rows, 1+len(outs))
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		require.Equal(t, outs[0].Run.Config.TCP.Profile, rows[1][col["tcp_profile"]], sc.Name)
		for _, c := range columnsFor(sc.Name) {
			i, ok := col[c.csv]
			require.True(t, ok, "%s: table column %q has no CSV column %q", sc.Name, c.name, c.csv)
			for k, oc := range outs {
				v := 0.0
				if cell := rows[1+k][i]; cell != "" {
					v, err = strconv.ParseFloat(cell, 64)
					require.NoError(t, err)
				}
				require.InDelta(t, c.get(oc.Result), v*c.scale, 1e-6*max(1, math.Abs(c.get(oc.Result))), "%s: %q vs %s", sc.Name, c.name, c.csv)
			}
		}
	}
}

// TestTCPFlagOverridesProfile protects -tcp: red-family runs ns-3's TCP by
// default and Linux's with -tcp linux, and the table says which.
func TestTCPFlagOverridesProfile(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{{"", "ns3"}, {"linux", "linux"}} {
		args := []string{"-scenario", "red-family", "-aqms", "red", "-duration", "3s", "-reps", "1", "-q"}
		if tc.flag != "" {
			args = append(args, "-tcp", tc.flag)
		}
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errb), "stderr: %s", errb.String())
		require.Contains(t, out.String(), "TCP profile: "+tc.want+"\n")
	}
}

// TestTraceFlag protects -trace: a run on a trace file of one's own
// reports it by name with the bounds (oracle, mean) beside the rows asked
// for and its empty-queue floor; a bad line is named by file and line;
// nothing says "not built yet" of queues the scenario runs.
func TestTraceFlag(t *testing.T) {
	dir := t.TempDir()
	// Three opportunities every 10 ms, then a 100 ms gap, repeating.
	var b strings.Builder
	for ms := 1; ms <= 400; ms++ {
		if ms%200 < 100 {
			if ms%10 == 0 {
				b.WriteString(strconv.Itoa(ms) + "\n" + strconv.Itoa(ms) + "\n" + strconv.Itoa(ms) + "\n")
			}
		}
	}
	b.WriteString("400\n")
	good := filepath.Join(dir, "gappy.up")
	require.NoError(t, os.WriteFile(good, []byte(b.String()), 0o644))
	var out, errb bytes.Buffer
	code := run([]string{"-scenario", "autorate", "-trace", good, "-aqms", "fq-codel+autorate", "-duration", "3s", "-q"}, &out, &errb)
	require.Equal(t, 0, code, "stderr: %s", errb.String())
	table := out.String()
	for _, want := range []string{"gappy", "fq-codel+autorate", "fq-codel@oracle-300ms", "fq-codel@mean", "empty-queue floor"} {
		require.Contains(t, table, want)
	}
	require.NotContains(t, table, "not built yet")

	bad := filepath.Join(dir, "bad.down")
	require.NoError(t, os.WriteFile(bad, []byte("1\n2\nsoon\n"), 0o644))
	out.Reset()
	errb.Reset()
	code = run([]string{"-scenario", "autorate", "-trace", good + "," + bad, "-duration", "3s", "-q"}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), bad+" line 3")

	out.Reset()
	require.Equal(t, 0, run([]string{"-list"}, &out, &errb))
	require.NotContains(t, out.String(), "not built yet")
}
