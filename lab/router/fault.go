package router

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// FaultDevice wraps a Device and injects the faults a real TUN shows: write
// errors (EIO, ENOBUFS, EAGAIN, ...) at a chosen rate, and a down state in
// which every write fails with EIO, as a TUN whose link is down refuses
// them. Reads pass through. It is for tests and soak runs: a router behind
// it must count every refused packet (Drops.WriteError) and keep going.
// All methods are safe for concurrent use.
type FaultDevice struct {
	Device
	every    atomic.Uint64 // 0: no injected write errors; n: every n-th packet fails
	writes   atomic.Uint64 // packets offered to WriteBatch
	down     atomic.Bool
	injected atomic.Uint64
	mu       sync.Mutex
	errs     []syscall.Errno
	next     int
}

// NewFaultDevice returns dev behind a FaultDevice that injects nothing yet.
func NewFaultDevice(dev Device) *FaultDevice { return &FaultDevice{Device: dev} }

// FailWrites makes every n-th packet written fail with the next of errs in
// turn (EIO if errs is empty); n zero stops the injected write errors.
func (f *FaultDevice) FailWrites(n uint64, errs ...syscall.Errno) {
	f.mu.Lock()
	f.errs = append([]syscall.Errno(nil), errs...)
	if len(f.errs) == 0 {
		f.errs = []syscall.Errno{syscall.EIO}
	}
	f.next = 0
	f.mu.Unlock()
	f.every.Store(n)
}

// SetDown takes the device down (every write fails with EIO) or up again.
func (f *FaultDevice) SetDown(down bool) { f.down.Store(down) }

// Injected returns how many writes failed because of an injected fault.
func (f *FaultDevice) Injected() uint64 { return f.injected.Load() }

// WriteBatch writes pkts through the wrapped device up to the first packet
// chosen to fail, and returns the wrapped device's count and error, or the
// injected error for that packet.
func (f *FaultDevice) WriteBatch(pkts [][]byte) (int, error) {
	if len(pkts) == 0 {
		return 0, nil
	}
	if f.down.Load() {
		f.writes.Add(1)
		f.injected.Add(1)
		return 0, syscall.EIO
	}
	k := len(pkts)
	if n := f.every.Load(); n > 0 {
		start := f.writes.Load()
		// The first index i with (start+i+1) a multiple of n.
		first := int((n - (start+1)%n) % n)
		if first < k {
			k = first
		}
	}
	w, err := f.Device.WriteBatch(pkts[:k])
	f.writes.Add(uint64(w))
	if err != nil || w < k || k == len(pkts) {
		return w, err
	}
	f.writes.Add(1)
	f.injected.Add(1)
	return k, f.nextErr()
}

func (f *FaultDevice) nextErr() syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) == 0 {
		return syscall.EIO
	}
	e := f.errs[f.next%len(f.errs)]
	f.next++
	return e
}

// SetReadDeadline passes the deadline to the wrapped device.
func (f *FaultDevice) SetReadDeadline(t time.Time) error { return f.Device.SetReadDeadline(t) }
