package sim

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// realTraces returns the folder of the real capacity traces, which are
// data recorded by others and not part of the repository: $AQMKIT_TRACES,
// or shared/traces beside the clone. The test is skipped without them.
func realTraces(t testing.TB) string {
	dir := os.Getenv("AQMKIT_TRACES")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		// file is <clone>/sim/tracefile_test.go.
		dir = filepath.Join(filepath.Dir(file), "..", "..", "shared", "traces")
	}
	if _, err := os.Stat(filepath.Join(dir, "Verizon-LTE-short.up")); err != nil {
		t.Skipf("real capacity traces not found in %s (set AQMKIT_TRACES to their folder): %v", dir, err)
	}
	return dir
}

// TestEmptyQueueWait protects the floor: P(wait > x) = Σ max(0, g − x)/D
// over a delivery trace's gaps (the wrap included) and a rate trace's
// outages (merged across the wrap).
func TestEmptyQueueWait(t *testing.T) {
	// Opportunities at 10 and 100 ms, period 100 ms: gaps of 10 and 90 ms.
	// P(wait > x) = (90 − x)/100 for x ≥ 10: p95 at 85 ms, p50 at 40 ms.
	tr, err := ParseDeliveryTrace("m", strings.NewReader("10\n100\n"))
	require.NoError(t, err)
	require.Equal(t, 85*time.Millisecond, tr.EmptyQueueWait(0.95))
	require.Equal(t, 40*time.Millisecond, tr.EmptyQueueWait(0.5))
	// An opportunity every millisecond: the wait is at most 1 ms.
	require.LessOrEqual(t, mustDelivery(t, "1\n2\n3\n4\n").EmptyQueueWait(0.99), time.Millisecond)

	// Outages of 1 s at the end and 1 s at the start of a 10 s period
	// join into one 2 s outage: P(wait > x) = (2 s − x)/10 s, p95 at
	// 1.5 s; nothing waits at the median.
	tr, err = ParseRateTrace("r", strings.NewReader("0s 0\n1s 10mbit\n9s 0\n10s end\n"))
	require.NoError(t, err)
	require.Equal(t, 1500*time.Millisecond, tr.EmptyQueueWait(0.95))
	require.Equal(t, time.Duration(0), tr.EmptyQueueWait(0.5))
}

func mustDelivery(t *testing.T, s string) *Trace {
	tr, err := ParseDeliveryTrace("m", strings.NewReader(s))
	require.NoError(t, err)
	return tr
}

// TestParseThroughputCSV protects the CSV format: a timestamp or seq_num
// time column, the one _mbps column or the one named, the period one
// interval after the last row, and errors that name the file and line.
func TestParseThroughputCSV(t *testing.T) {
	tr, err := ParseThroughputCSV("s.csv", "", strings.NewReader(
		"time,throughput_mbps,retrans\n2024-05-27T11:18:46.5,2,0\n2024-05-27T11:18:47.0,10,0\n2024-05-27T11:18:47.5,0,1\n"))
	require.NoError(t, err)
	require.Equal(t, 1500*time.Millisecond, tr.Period())
	require.InDelta(t, 1e6+5e6, tr.BitsBetween(0, 1500*time.Millisecond), 1)

	g := "protocol,seq_num,A_mbps,B_mbps\nTCP,3,1,2\nTCP,4,3,4\n"
	_, err = ParseThroughputCSV("g.csv", "", strings.NewReader(g))
	require.ErrorContains(t, err, "name one as file.csv:column")
	tr, err = ParseThroughputCSV("g.csv", "B_mbps", strings.NewReader(g))
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, tr.Period())
	require.InDelta(t, 2e6+4e6, tr.BitsBetween(0, 2*time.Second), 1)

	for in, want := range map[string]string{
		"time,x_mbps\n1,2\n1,3\n":        "g.csv line 3: time",
		"time,x_mbps\n1,2\n2,-3\n":       "g.csv line 3: rate",
		"time,x_mbps\n1,2\nlater,3\n":    "g.csv line 3: time \"later\"",
		"seq_num,x_mbps\n1,2\n2\n":       "g.csv line 3: has 1 fields",
		"when,x_mbps\n1,2\n":             "g.csv line 1: no time column",
		"time,x_mbps\n":                  "g.csv: no rows",
		"time,x_mbps\n1,0\n2,0\n":        "no capacity",
		"seq_num,x_mbps\nfirst,2\n2,2\n": "g.csv line 2: seq_num",
	} {
		_, err := ParseThroughputCSV("g.csv", "", strings.NewReader(in))
		require.ErrorContains(t, err, want, "%q", in)
	}
}

// TestLoadTraceNamesFile protects the errors of a trace file: the path
// and line of a bad line, and the extensions it knows.
func TestLoadTraceNamesFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	p := write("bad.up", "1\n2\nx\n")
	_, err := LoadTrace(p)
	require.ErrorContains(t, err, p+" line 3")
	p = write("bad.rate", "0s 1mbit\n1s fast\n")
	_, err = LoadTrace(p)
	require.ErrorContains(t, err, p+" line 2")
	_, err = LoadTrace(write("x.txt", "1\n"))
	require.ErrorContains(t, err, "x.txt: a trace file ends in")
	p = write("g.csv", "seq_num,A_mbps,B_mbps\n0,1,2\n1,3,4\n")
	tr, err := LoadTrace(p + ":B_mbps")
	require.NoError(t, err)
	require.Equal(t, "g-B", tr.Name)
	require.InDelta(t, 2e6, tr.MeanBps(time.Second), 1)
}

// TestRealTraceFloors protects the floors of the real traces against the
// figures their folder's README gives (to the millisecond it rounds to),
// and that every file there loads.
func TestRealTraceFloors(t *testing.T) {
	dir := realTraces(t)
	for name, want := range map[string][2]float64{
		"TMobile-LTE-short.up":   {10, 38},
		"Verizon-LTE-short.up":   {21, 361},
		"Verizon-LTE-short.down": {31, 186},
		"TMobile-LTE-short.down": {63, 522},
	} {
		tr, err := LoadTrace(filepath.Join(dir, name))
		require.NoError(t, err)
		require.InDelta(t, want[0], tr.floorMs(0.95), 1, name)
		require.InDelta(t, want[1], tr.floorMs(0.99), 1, name)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		switch filepath.Ext(f) {
		case ".up", ".down", ".rate":
		case ".csv":
			if strings.Contains(f, "5gophers") {
				f += ":TMobile_throughput_mbps"
			}
		default:
			continue
		}
		_, err := LoadTrace(f)
		require.NoError(t, err, f)
	}
}

// FuzzParseThroughputCSV protects the CSV reader against malformed input:
// it returns a trace that passes its own checks or an error, and never
// panics (a quoting error once did, in the line number of its message).
func FuzzParseThroughputCSV(f *testing.F) {
	for _, s := range []string{
		"time,a_mbps\n0,1\n1,2\n",
		"seq_num,a_mbps\n0,1\n1,\"\n",
		"time,a_mbps\n1,\"x\n",
		"time,a_mbps\n\"a\"b,1\n",
		"time,a_mbps,b_mbps\n0,1\n",
		"time,a_mbps\n2026-01-01T00:00:00Z,5\n2026-01-01T00:00:01Z,NaN\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ParseThroughputCSV("f.csv", "", strings.NewReader(in))
		if err == nil {
			require.NoError(t, tr.check())
			require.Positive(t, tr.Period())
		} else {
			require.Nil(t, tr)
		}
	})
}
