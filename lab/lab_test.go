package lab

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
)

// TestLab protects the lab's end-to-end claim on real kernel TCP: at
// 50 Mb/s and 20 ms, with 4 CUBIC uploads and the probe, the router's
// FQ-CoDel and CAKE keep the added-latency p99 at most a tenth of a
// 1000-packet FIFO's in the same run, deliver at least 90 % of the rate,
// and the router's counters conserve packets. It needs root and the
// aqmrouter command (lab/cmd/aqmrouter, or a binary named by
// AQMLAB_ROUTER); it takes about two minutes.
func TestLab(t *testing.T) {
	if testing.Short() {
		t.Skip("the namespace lab runs about two minutes of real traffic: skipped under -short")
	}
	if err := Preflight(); err != nil {
		t.Skip("the namespace lab cannot run here:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var rc RouterCommand
	var err error
	if p := os.Getenv("AQMLAB_ROUTER"); p != "" {
		rc, err = RouterFromPath(p)
	} else {
		if _, serr := os.Stat(filepath.Join("cmd", "aqmrouter")); serr != nil {
			t.Skip("aqmrouter is not in this tree (lab/cmd/aqmrouter) and AQMLAB_ROUTER is not set: nothing to test")
		}
		var bin string
		bin, err = BuildRouter(ctx, ".", "./cmd/aqmrouter")
		if err == nil {
			defer os.RemoveAll(filepath.Dir(bin))
			rc, err = RouterFromPath(bin)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if removed, _ := CleanLeftovers(); len(removed) > 0 {
		t.Logf("removed leftover namespaces %v", removed)
	}

	// The FIFO reference: the router's FIFO at 1000 packets when the
	// router takes -limit, else the kernel's htb + pfifo 1000 on the same
	// path (the router then only delays).
	fifo := Queue{Router: "fifo", Limit: 1000}
	if !rc.Has("limit") {
		fifo = Queue{Kernel: &KernelQdisc{Kind: "pfifo", Limit: 1000}}
		t.Log("the router has no -limit flag: the 1000-packet FIFO is the kernel's htb + pfifo 1000")
	}
	o := Options{Rate: 50 * aqm.Mbit, RTT: 20 * time.Millisecond, Duration: 20 * time.Second, Idle: 3 * time.Second,
		Warmup: 5 * time.Second, Tail: time.Second, CC: "cubic", N: 4,
		Queues: []Queue{{Router: "fq-codel"}, {Router: "cake"}}}
	if fifo.Kernel != nil {
		o.Kernel = []KernelQdisc{*fifo.Kernel}
	} else {
		o.Queues = append(o.Queues, fifo)
	}
	cfgs, err := Suite("tcp_nup", o)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	s := &Session{Router: rc, Progress: &progress, OutDir: t.TempDir()}
	err = s.Run(ctx, cfgs, 1)
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range s.Namespaces {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Errorf("namespace %s is still there after the run", ns)
		}
	}
	by := map[string]Result{}
	for _, r := range s.Results {
		if r.Err != "" {
			t.Fatalf("%s: %s", r.Config.Name(), r.Err)
		}
		by[r.Config.Queue.Label()] = r
	}
	ref, ok := by[fifo.Label()]
	if !ok {
		t.Fatalf("no FIFO result (%s) among %v", fifo.Label(), s.Results)
	}
	for _, name := range []string{"fq-codel", "cake"} {
		r, ok := by[name]
		if !ok {
			t.Fatalf("no %s result", name)
		}
		if !(r.AddedP99Ms <= ref.AddedP99Ms/10) {
			t.Errorf("%s: added p99 %.1f ms, want at most a tenth of the FIFO's %.1f ms", name, r.AddedP99Ms, ref.AddedP99Ms)
		}
		if !(r.Share >= 0.90) {
			t.Errorf("%s: goodput %.1f %% of the rate, want at least 90 %%", name, 100*r.Share)
		}
	}
	for _, r := range s.Results { // the router runs in every configuration, delay-only for the kernel's
		st := r.Router
		if st.Read == 0 || !r.Conserved {
			t.Errorf("%s: router counters read %d != written %d + dropped %d + queued %d", r.Config.Name(), st.Read, st.Written, st.Dropped, st.Queued)
		}
	}
}
