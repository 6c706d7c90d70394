package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// result is what the client saw of one overload run, and the program's
// output.
type result struct {
	loadResult
	out string
}

// overload serves with 2 workers and a 10 ms handler (capacity 200
// requests/s) and sends, from a local client on 127.0.0.1, an open-loop load
// of 400 requests/s for d: twice the capacity, bounded in requests and time.
func overload(t *testing.T, d time.Duration, args ...string) result {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrc := make(chan string, 1)
	runErr := make(chan error, 1)
	go func() {
		runErr <- run(ctx, append([]string{"-listen", "127.0.0.1:0", "-workers", "2", "-work", "10ms", "-stats", "0"}, args...), &out, func(a string) { addrc <- a })
	}()
	addr := <-addrc
	res := result{loadResult: load(t.Context(), addr, 400, d)}
	if n := res.codes[-1]; n > 0 {
		t.Errorf("%d requests failed", n)
	}
	cancel()
	require.NoError(t, <-runErr)
	res.out = out.String()
	return res
}

// requireNoLeak waits up to 5 s for the goroutine count to return to before.
func requireNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOverloadCoDelVsFIFO protects the admission front's purpose:
// under a 2× overload, the requests CoDel admits wait a bounded time, near
// its target plus the time it takes to raise its drop rate, and the rest are
// answered 503 at once; behind an unbounded FIFO every request is admitted
// but the wait grows with the backlog (by 0.5 s per second of overload here).
// Both runs end with no goroutine left. The runs are compared with each
// other, never with fixed wall-clock bounds, so a loaded machine slows both
// alike.
func TestOverloadCoDelVsFIFO(t *testing.T) {
	before := runtime.NumGoroutine()
	const d = 1500 * time.Millisecond

	c := overload(t, d, "-queue", "codel")
	t.Logf("codel: %v; admitted wait p50 %v p99 %v\n%s", c.codes, c.p(0.5), c.p(0.99), c.out)
	f := overload(t, d, "-queue", "fifo")
	t.Logf("fifo:  %v; admitted wait p50 %v p99 %v\n%s", f.codes, f.p(0.5), f.p(0.99), f.out)
	l := overload(t, d, "-queue", "codel", "-lifo")
	t.Logf("codel+lifo: %v; admitted wait p50 %v p99 %v\n%s", l.codes, l.p(0.5), l.p(0.99), l.out)

	require.Positive(t, c.codes[http.StatusServiceUnavailable], "CoDel sheds under overload")
	require.Zero(t, f.codes[http.StatusServiceUnavailable], "the unbounded FIFO admits everything")
	require.Greater(t, f.p(0.99), 4*c.p(0.99), "CoDel keeps the admitted requests' wait a fraction of the FIFO's, whose wait grows with the backlog")
	require.Positive(t, l.codes[http.StatusServiceUnavailable], "CoDel+LIFO sheds too")
	require.Greater(t, f.p(0.5), 4*l.p(0.5), "LIFO serves fresh requests under overload")

	requireNoLeak(t, before)
}

// TestShutdownReleasesWaiters protects shutdown: requests still queued when
// the server stops are answered 503, not left hanging, and nothing leaks.
func TestShutdownReleasesWaiters(t *testing.T) {
	before := runtime.NumGoroutine()
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan string, 1)
	runErr := make(chan error, 1)
	go func() {
		// One worker, a 1 s handler: the rest queue (under the FIFO, which
		// never sheds on its own).
		runErr <- run(ctx, []string{"-listen", "127.0.0.1:0", "-workers", "1", "-work", "1s", "-queue", "fifo", "-stats", "0"}, &out, func(a string) { addrc <- a })
	}()
	addr := <-addrc
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	codes := make(chan int, 5)
	for range 5 {
		go func() {
			resp, err := client.Get("http://" + addr + "/")
			if err != nil {
				codes <- -1
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	got := map[int]int{}
	for range 5 {
		got[<-codes]++
	}
	require.NoError(t, <-runErr)
	require.Equal(t, map[int]int{200: 1, 503: 4}, got, "the running request finishes, the queued ones get 503")
	tr.CloseIdleConnections()
	requireNoLeak(t, before)
}

// TestDemo protects -demo, the one-line way to watch admission work: the
// program loads itself at twice its capacity, CoDel sheds part of it, and
// the report adds up to the requests sent.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-demo", "-workers", "2", "-work", "10ms", "-duration", "1s", "-stats", "0"}, &out, nil))
	var perSecond, admitted, shed, failed int
	i := strings.Index(out.String(), "demo: ")
	require.GreaterOrEqual(t, i, 0, out.String())
	_, err := fmt.Sscanf(out.String()[i:], "demo: %d requests/s for 1s: %d admitted, %d answered 503, %d failed", &perSecond, &admitted, &shed, &failed)
	require.NoError(t, err, out.String())
	require.Equal(t, 400, perSecond, "twice the capacity of 2 workers at 10 ms")
	require.Equal(t, 400, admitted+shed+failed, "every request is answered")
	require.Zero(t, failed)
	require.Positive(t, shed, "CoDel sheds an overload")
}

// TestHelp protects -h: one line saying what the program is comes first,
// and asking for help is not a failure.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	require.ErrorIs(t, run(t.Context(), []string{"-h"}, &out, nil), flag.ErrHelp)
	require.True(t, strings.HasPrefix(out.String(), "httpadmit serves HTTP"), out.String())
	require.NotContains(t, out.String(), "`long`")
}
