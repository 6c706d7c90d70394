package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// loadResult is what a load client saw: the queue waits of the admitted
// (200) requests and the count of each status code (-1 for a transport
// error).
type loadResult struct {
	waits []time.Duration
	codes map[int]int
}

// p returns the q-quantile (nearest rank) of the admitted requests' waits.
func (r loadResult) p(q float64) time.Duration {
	if len(r.waits) == 0 {
		return 0
	}
	w := slices.Clone(r.waits)
	slices.Sort(w)
	return w[int(q*float64(len(w)-1)+0.5)]
}

// print writes the result as the demo's report.
func (r loadResult) print(w io.Writer, perSecond int, d time.Duration) {
	fmt.Fprintf(w, "demo: %d requests/s for %v: %d admitted, %d answered 503, %d failed; admitted wait p50 %v, p99 %v\n",
		perSecond, d, r.codes[http.StatusOK], r.codes[http.StatusServiceUnavailable], r.codes[-1],
		r.p(0.5).Round(10*time.Microsecond), r.p(0.99).Round(10*time.Microsecond))
}

// load sends an open-loop load of perSecond GET requests to addr for d,
// bounded in requests (perSecond·d) and time (each request times out after
// 15 s), and waits for every answer. It closes its idle connections before
// it returns, so that the server can shut down at once.
func load(ctx context.Context, addr string, perSecond int, d time.Duration) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: 2000}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 15 * time.Second}
	res := loadResult{codes: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	n := int(d.Seconds() * float64(perSecond))
	start := time.Now()
	for i := range n {
		select {
		case <-ctx.Done():
			n = i
		case <-time.After(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(perSecond)))):
		}
		if i >= n {
			break
		}
		wg.Go(func() {
			code, wait := -1, time.Duration(0)
			if resp, err := client.Get("http://" + addr + "/"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ns, _ := strconv.ParseInt(resp.Header.Get(WaitHeader), 10, 64)
				code, wait = resp.StatusCode, time.Duration(ns)
			}
			mu.Lock()
			defer mu.Unlock()
			res.codes[code]++
			if code == http.StatusOK {
				res.waits = append(res.waits, wait)
			}
		})
	}
	wg.Wait()
	return res
}
