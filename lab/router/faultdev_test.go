package router

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// TestFaultDeviceSchedule protects the fault injector itself: every n-th
// packet fails with the errors given in turn, the others reach the device,
// and a down device refuses every write with EIO.
func TestFaultDeviceSchedule(t *testing.T) {
	var got int
	p := newPipe(1, func([]byte) bool { got++; return true })
	f := NewFaultDevice(p)
	f.FailWrites(3, syscall.ENOBUFS, syscall.EAGAIN)
	pkts := make([][]byte, 10)
	for i := range pkts {
		pkts[i] = []byte{byte(i)}
	}
	var errs []error
	written := 0
	for rest := pkts; len(rest) > 0; {
		n, err := f.WriteBatch(rest)
		written += n
		if err == nil {
			break
		}
		errs = append(errs, err)
		rest = rest[n+1:]
	}
	if written != 7 || got != 7 || len(errs) != 3 || f.Injected() != 3 {
		t.Fatalf("written %d, device saw %d, errors %v, injected %d; want 7, 7, 3 errors, 3", written, got, errs, f.Injected())
	}
	if !errors.Is(errs[0], syscall.ENOBUFS) || !errors.Is(errs[1], syscall.EAGAIN) || !errors.Is(errs[2], syscall.ENOBUFS) {
		t.Errorf("errors %v; want ENOBUFS, EAGAIN, ENOBUFS", errs)
	}
	f.FailWrites(0)
	f.SetDown(true)
	if n, err := f.WriteBatch(pkts[:2]); n != 0 || !errors.Is(err, syscall.EIO) {
		t.Errorf("down: WriteBatch = %d, %v; want 0, EIO", n, err)
	}
	f.SetDown(false)
	if n, err := f.WriteBatch(pkts[:2]); n != 2 || err != nil {
		t.Errorf("up again: WriteBatch = %d, %v; want 2, nil", n, err)
	}
}

// TestRouterThroughFaults protects the router against device faults: with
// write errors injected and the device down for a while, every refused
// packet is counted as a write error, the rest are written, the router
// keeps forwarding once the device is up, and nothing leaks.
func TestRouterThroughFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var written int
		p := newPipe(4096, func([]byte) bool { written++; return true })
		f := NewFaultDevice(p)
		f.FailWrites(10, syscall.EIO, syscall.ENOBUFS, syscall.EAGAIN)
		r, err := New(Config{AQM: "fq-codel", Rate: 10 * aqm.Mbit, Drain: 100 * time.Millisecond, Clock: clock.Since(time.Now())}, f)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		stopCtx, stop := context.WithCancel(context.Background())
		go func() { done <- r.Run(stopCtx) }()
		send := func(n int) {
			for i := range n {
				p.in <- ipv4("10.201.1.2", "10.201.2.2", 0, 500, uint32(i))
				time.Sleep(time.Millisecond) // 4 Mb/s, under the rate
			}
		}
		send(200)
		f.SetDown(true)
		send(100)
		time.Sleep(20 * time.Millisecond)
		f.SetDown(false)
		before := r.Stats().Written.Packets
		send(200)
		time.Sleep(50 * time.Millisecond)
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s := r.Stats()
		if !s.Conserved() || s.Read.Packets != 500 {
			t.Fatalf("conserved %v, read %d; want true, 500", s.Conserved(), s.Read.Packets)
		}
		if s.Dropped.WriteError != f.Injected() || uint64(written) != s.Written.Packets {
			t.Errorf("write errors %d, injected %d; device saw %d, written %d", s.Dropped.WriteError, f.Injected(), written, s.Written.Packets)
		}
		if s.Dropped.WriteError < 100 || s.Written.Packets-before < 150 {
			t.Errorf("write errors %d (want the 100 sent while down and more); written after up %d (want most of 200)", s.Dropped.WriteError, s.Written.Packets-before)
		}
		if s.BuffersInUse != 0 {
			t.Errorf("%d buffers out after shutdown", s.BuffersInUse)
		}
	})
}
