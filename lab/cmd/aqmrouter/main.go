package main

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aqmkit/aqmkit/aqmexpvar"
	"github.com/aqmkit/aqmkit/lab/router"
	"github.com/aqmkit/aqmkit/lab/tun"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it returns the exit status, 0 after a clean shutdown
// (and for -h), 2 for bad flags, 1 for other failures.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "aqmrouter: %v\n(aqmrouter -h lists the flags)\n", err)
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "aqmrouter: "+format+"\n", a...) }

	var devs []router.Device
	var tuns []*tun.Device
	defer func() {
		for _, d := range tuns {
			d.Close()
		}
	}()
	for range o.queues {
		d, err := tun.Open(tun.Config{Name: o.tun, MTU: o.mtu, MultiQueue: o.queues > 1, Offload: o.offload})
		if err != nil {
			logf("%v", err)
			return 1
		}
		if note := d.OffloadNote(); note != "" && len(tuns) == 0 {
			logf("%s: offloads: %s", d.Name(), note)
		}
		tuns, devs = append(tuns, d), append(devs, d)
	}
	mtu := tuns[0].MTU()
	o.cfg.VnetHdr = tuns[0].VnetHdr()
	for _, d := range tuns[1:] {
		if d.VnetHdr() != o.cfg.VnetHdr {
			logf("%s: the queues disagree on IFF_VNET_HDR", d.Name())
			return 1
		}
	}
	o.cfg.BufferSize = max(router.DefaultBufferSize, (mtu+63)/64*64)
	if o.cfg.VnetHdr {
		o.cfg.BufferSize = router.DefaultVnetBufferSize
	}
	o.cfg.Logf = logf
	o.cfg.Load.KernelDrops = tunDrops(tuns[0].Name())

	if o.faultEvery > 0 {
		for i, d := range devs {
			fd := router.NewFaultDevice(d)
			fd.FailWrites(o.faultEvery, syscall.EIO, syscall.ENOBUFS, syscall.EAGAIN)
			devs[i] = fd
		}
	}
	var srv *http.Server
	var mux *http.ServeMux
	if o.metrics != "" {
		ln, err := net.Listen("tcp", o.metrics)
		if err != nil {
			logf("metrics: %v", err)
			return 1
		}
		mux = http.NewServeMux()
		mux.Handle("/debug/vars", expvar.Handler())
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		o.cfg.OnQueue = func(q *router.Queue) {
			if _, err := aqmexpvar.Publish("aqmrouter_queue_"+q.Prefix().String(), q); err != nil {
				logf("metrics for %v: %v", q.Prefix(), err)
			}
		}
	}
	ar, err := startAutorate(&o, logf)
	if err != nil {
		logf("%v", err)
		return 1
	}
	r, err := router.New(o.cfg, devs...)
	if err != nil {
		logf("%v", err)
		return 1
	}
	if srv != nil {
		expvar.Publish("aqmrouter", expvar.Func(func() any { return r.Stats() }))
		if _, err := aqmexpvar.Publish("aqmrouter_load", r); err != nil {
			logf("metrics: %v", err)
		}
		expvar.Publish("goroutines", expvar.Func(func() any { return runtime.NumGoroutine() }))
		expvar.Publish("pid", expvar.Func(func() any { return os.Getpid() }))
		expvar.Publish("heap_live_bytes", expvar.Func(heapLive))
		logf("metrics on http://%s/debug/vars", o.metrics)
		if loopback(o.metrics) {
			mux.Handle("/config", controlHandler(r, nil))
			logf("control on http://%s/config", o.metrics)
			mux.HandleFunc("/debug/pprof/", httppprof.Index)
			mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
		}
	}
	if o.control != "" {
		if err := applyFile(r, o.control); err != nil {
			logf("control: %v", err)
			return 1
		}
	}
	logf("%s (MTU %d, %d queue(s), offloads %#x): %v", tuns[0].Name(), mtu, len(tuns), tuns[0].Offloads(), r)

	if o.cpuprof != "" {
		f, err := os.Create(o.cpuprof)
		if err != nil {
			logf("cpuprofile: %v", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			logf("cpuprofile: %v", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	if o.report > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reportEvery(ctx, o.report, r, stderr)
		}()
	}
	if o.control != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchHUP(ctx, r, o.control, logf)
		}()
	}
	if ar != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ar.run(ctx); err != nil {
				logf("autorate: %v", err)
				stop()
			}
		}()
	}
	start := time.Now()
	runErr := r.Run(ctx)
	stop()
	wg.Wait()
	if ar != nil {
		logf("autorate: %s", ar.summary())
	}
	s := r.Stats()
	fmt.Fprintf(stderr, "aqmrouter: exit after %.1fs: %s\n", time.Since(start).Seconds(), line(s))
	status := 0
	if runErr != nil {
		logf("%v", runErr)
		status = 1
	}
	if o.stats != "" {
		if err := writeStats(o.stats, s); err != nil {
			logf("stats: %v", err)
			status = 1
		}
	}
	return status
}

// reportEvery prints a stat line every interval until ctx ends.
func reportEvery(ctx context.Context, interval time.Duration, r *router.Router, w io.Writer) {
	t := time.NewTicker(interval)
	defer t.Stop()
	start := time.Now()
	var last router.Stats
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := r.Stats()
			secs := interval.Seconds()
			fmt.Fprintf(w, "aqmrouter: %.0fs %s | %.0f pkt/s %.2f Mb/s written\n",
				now.Sub(start).Seconds(), line(s),
				float64(s.Written.Packets-last.Written.Packets)/secs,
				float64(s.Written.Bytes-last.Written.Bytes)*8/secs/1e6)
			last = s
		}
	}
}

// line is the one-line summary of the counters: totals, then per queue.
func line(s router.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "read %d written %d dropped %d%s marked %d queued %d",
		s.Read.Packets, s.Written.Packets, s.Dropped.Total, reasons(s.Dropped), s.Marked, s.Queued)
	for _, q := range s.Queues {
		fmt.Fprintf(&b, " | %s r %d w %d d %d m %d q %d", q.Prefix, q.Read.Packets, q.Written.Packets, q.Dropped.Total, q.Marked, q.Queued)
	}
	fmt.Fprintf(&b, " | %v", s.Load)
	return b.String()
}

// reasons lists the non-zero drop reasons, " (early 3, overlimit 1)".
func reasons(d router.Drops) string {
	var parts []string
	for _, r := range []struct {
		name string
		n    uint64
	}{
		{"overlimit", d.Overlimit}, {"early", d.Early}, {"overload", d.Overload}, {"closed", d.Closed},
		{"delay_full", d.DelayFull}, {"flushed", d.Flushed}, {"write_error", d.WriteError},
		{"not_ip", d.NotIP}, {"truncated", d.Truncated}, {"bad_header", d.BadHeader}, {"no_queue", d.NoQueue}, {"no_buffer", d.NoBuffer},
	} {
		if r.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r.name, r.n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// writeStats writes s as indented JSON to path, through a temporary file in
// the same directory, so that a reader never sees half a file.
func writeStats(path string, s router.Stats) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".aqmrouter-stats-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// heapLive returns the bytes of heap the last garbage collection found
// live: unlike the process's RSS it does not move with the collector's
// pacing, so a leak shows in it as a rising floor.
func heapLive() any {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return uint64(0)
	}
	return s[0].Value.Uint64()
}
