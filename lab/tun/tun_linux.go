//go:build linux

package tun

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// iffMultiQueue is IFF_MULTI_QUEUE from <linux/if_tun.h>; the frozen syscall
// package predates it.
const iffMultiQueue = 0x0100

// From <linux/if_tun.h>: IFF_VNET_HDR and the TUNSETOFFLOAD request,
// _IOW('T', 208, unsigned int).
const (
	iffVnetHdr    = 0x4000
	tunSetOffload = 0x400454d0
)

// offloadSets are the offload sets Open asks for, in order, until the
// kernel accepts one.
var offloadSets = []uint32{
	OffloadCsum | OffloadTSO4 | OffloadTSO6 | OffloadTSOECN | OffloadUSO4 | OffloadUSO6,
	OffloadCsum | OffloadTSO4 | OffloadTSO6 | OffloadTSOECN,
	OffloadCsum | OffloadTSO4 | OffloadTSO6,
	OffloadCsum,
}

// ifreq is struct ifreq: the name, then a union whose largest member (struct
// ifmap) takes 24 bytes on 64-bit systems and 16 on 32-bit ones. The kernel
// copies sizeof(struct ifreq), which never exceeds this struct.
type ifreq struct {
	name [16]byte
	data [24]byte
}

func newIfreq(name string) *ifreq {
	r := new(ifreq)
	copy(r.name[:MaxNameLen], name)
	return r
}

func (r *ifreq) setUint16(v uint16) { *(*uint16)(unsafe.Pointer(&r.data[0])) = v }
func (r *ifreq) uint16() uint16     { return *(*uint16)(unsafe.Pointer(&r.data[0])) }
func (r *ifreq) setInt32(v int32)   { *(*int32)(unsafe.Pointer(&r.data[0])) = v }
func (r *ifreq) int32() int32       { return *(*int32)(unsafe.Pointer(&r.data[0])) }

func (r *ifreq) nameString() string {
	for i, c := range r.name {
		if c == 0 {
			return string(r.name[:i])
		}
	}
	return string(r.name[:])
}

func ioctl(fd int, req uintptr, r *ifreq) error {
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(r)))
	if e != 0 {
		return e
	}
	return nil
}

// Device is one open queue of a TUN device.
type Device struct {
	f      *os.File
	rc     syscall.RawConn
	name   string
	mtu    int
	closed atomic.Bool
	vnet   bool
	offl   uint32
	note   string

	rmu    sync.Mutex // one batch read at a time; guards the fields below
	rbufs  [][]byte
	rsizes []int
	rn     int
	rerr   error
	rstep  func(fd uintptr) bool

	wmu   sync.Mutex // one batch write at a time; guards the fields below
	wpkts [][]byte
	wn    int
	werr  error
	wstep func(fd uintptr) bool
}

// Open opens a queue of the TUN device cfg.Name, creating the device if no
// device of that name exists, and sets the link up (unless cfg.KeepDown) and
// its MTU (if cfg.MTU is positive). It needs CAP_NET_ADMIN, or ownership of a
// persistent device. Errors name what failed: the device node, the attach
// (EBUSY: a single-queue device already has a reader; EINVAL: the device is
// a TAP, or its multi-queue mode differs from cfg's), or the link setup.
func Open(cfg Config) (*Device, error) {
	if err := checkName(cfg.Name); err != nil {
		return nil, fmt.Errorf("tun: open %q: %w", cfg.Name, err)
	}
	if cfg.MTU < 0 {
		return nil, fmt.Errorf("tun: open %q: MTU (%d) must not be negative", cfg.Name, cfg.MTU)
	}
	fd, err := syscall.Open("/dev/net/tun", syscall.O_RDWR|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("tun: open /dev/net/tun: %w", err)
	}
	r := newIfreq(cfg.Name)
	flags := uint16(syscall.IFF_TUN | syscall.IFF_NO_PI)
	if cfg.MultiQueue {
		flags |= iffMultiQueue
	}
	var note string
	vnet := cfg.Offload
	if vnet {
		r.setUint16(flags | iffVnetHdr)
		if err := ioctl(fd, syscall.TUNSETIFF, r); err != nil {
			note = fmt.Sprintf("IFF_VNET_HDR refused (%v): opened without offloads", err)
			vnet = false
			r = newIfreq(cfg.Name)
		}
	}
	if !vnet {
		r.setUint16(flags)
		if err := ioctl(fd, syscall.TUNSETIFF, r); err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("tun: attach %q (TUNSETIFF): %w", cfg.Name, err)
		}
	}
	var offl uint32
	if !vnet {
		// A persistent device keeps the offloads its last opener set; a
		// reader without the header could not tell a super-packet's size.
		syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), tunSetOffload, 0)
	}
	if vnet {
		var errs []string
		for _, set := range offloadSets {
			_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), tunSetOffload, uintptr(set))
			if e == 0 {
				offl = set
				break
			}
			errs = append(errs, fmt.Sprintf("%#x: %v", set, e))
		}
		if len(errs) > 0 {
			note = "TUNSETOFFLOAD refused " + strings.Join(errs, ", ")
			if offl == 0 {
				note += ": reads carry a virtio-net header but no super-packets"
			}
		}
	}
	name := r.nameString()
	mtu, err := setupLink(name, cfg.MTU, !cfg.KeepDown)
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	// The descriptor is non-blocking, so os.NewFile registers it with the
	// runtime's poller: reads park the goroutine, not the thread, and
	// Close and deadlines wake them.
	f := os.NewFile(uintptr(fd), "/dev/net/tun:"+name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("tun: %s: %w", name, err)
	}
	d := &Device{f: f, rc: rc, name: name, mtu: mtu, vnet: vnet, offl: offl, note: note}
	d.rstep = d.readStep
	d.wstep = d.writeStep
	return d, nil
}

// setupLink sets the link's MTU (if mtu > 0) and brings it up (if up), and
// returns the MTU in effect.
func setupLink(name string, mtu int, up bool) (int, error) {
	s, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("tun: %s: socket for link setup: %w", name, err)
	}
	defer syscall.Close(s)
	if mtu > 0 {
		r := newIfreq(name)
		r.setInt32(int32(mtu))
		if err := ioctl(s, syscall.SIOCSIFMTU, r); err != nil {
			return 0, fmt.Errorf("tun: %s: set MTU %d: %w", name, mtu, err)
		}
	}
	if up {
		r := newIfreq(name)
		if err := ioctl(s, syscall.SIOCGIFFLAGS, r); err != nil {
			return 0, fmt.Errorf("tun: %s: get link flags: %w", name, err)
		}
		if f := r.uint16(); f&syscall.IFF_UP == 0 {
			r.setUint16(f | syscall.IFF_UP)
			if err := ioctl(s, syscall.SIOCSIFFLAGS, r); err != nil {
				return 0, fmt.Errorf("tun: %s: set link up: %w", name, err)
			}
		}
	}
	r := newIfreq(name)
	if err := ioctl(s, syscall.SIOCGIFMTU, r); err != nil {
		return 0, fmt.Errorf("tun: %s: get MTU: %w", name, err)
	}
	return int(r.int32()), nil
}

// Name returns the interface's name.
func (d *Device) Name() string { return d.name }

// MTU returns the interface's MTU when the device was opened.
func (d *Device) MTU() int { return d.mtu }

// VnetHdr reports whether every packet read from and written to the device
// starts with a virtio-net header (Config.Offload, accepted).
func (d *Device) VnetHdr() bool { return d.vnet }

// Offloads returns the TUNSETOFFLOAD flags the kernel accepted (Offload*
// constants), 0 without Config.Offload.
func (d *Device) Offloads() uint32 { return d.offl }

// OffloadNote says what the kernel refused of Config.Offload and what
// Open did instead; empty when it accepted everything asked.
func (d *Device) OffloadNote() string { return d.note }

// Read reads one IP packet into b and returns its length, blocking until one
// arrives. A packet longer than b is cut to len(b) (use a buffer of at least
// the MTU). After Close it returns os.ErrClosed; after the read deadline,
// os.ErrDeadlineExceeded.
func (d *Device) Read(b []byte) (int, error) {
	n, err := d.f.Read(b)
	return n, d.mapErr(err)
}

// Write writes one IP packet, which the kernel receives as if it had arrived
// on the interface.
func (d *Device) Write(b []byte) (int, error) {
	n, err := d.f.Write(b)
	return n, d.mapErr(err)
}

// ReadBatch blocks until at least one packet is ready, then reads into
// bufs[i] every packet the kernel holds, up to len(bufs) (and len(sizes)),
// writing each length into sizes[i], and returns how many it read: one read
// system call per packet, one poller wake-up per batch. An error is returned
// only when no packet was read.
func (d *Device) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	k := min(len(bufs), len(sizes))
	if k == 0 {
		return 0, nil
	}
	d.rbufs, d.rsizes, d.rn, d.rerr = bufs[:k], sizes[:k], 0, nil
	err := d.rc.Read(d.rstep)
	n := d.rn
	if err == nil {
		err = d.rerr
	}
	d.rbufs, d.rsizes = nil, nil
	if n > 0 {
		return n, nil
	}
	return 0, d.mapErr(err)
}

func (d *Device) readStep(fd uintptr) bool {
	for d.rn < len(d.rbufs) {
		n, err := syscall.Read(int(fd), d.rbufs[d.rn])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return d.rn > 0 // nothing yet: let the poller wait
		case err != nil:
			d.rerr = err
			return true
		}
		d.rsizes[d.rn] = n
		d.rn++
	}
	return true
}

// WriteBatch writes pkts in order, one system call each, within one poller
// turn. It returns how many were written; if that is fewer than len(pkts),
// err says why pkts[n] was not (the kernel refuses a malformed packet with
// EINVAL, for one), and the caller may go on with pkts[n+1:].
func (d *Device) WriteBatch(pkts [][]byte) (int, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if len(pkts) == 0 {
		return 0, nil
	}
	d.wpkts, d.wn, d.werr = pkts, 0, nil
	err := d.rc.Write(d.wstep)
	n := d.wn
	if err == nil {
		err = d.werr
	}
	d.wpkts = nil
	return n, d.mapErr(err)
}

func (d *Device) writeStep(fd uintptr) bool {
	for d.wn < len(d.wpkts) {
		_, err := syscall.Write(int(fd), d.wpkts[d.wn])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			d.werr = err
			return true
		}
		d.wn++
	}
	return true
}

// SetReadDeadline makes blocked and future reads return
// os.ErrDeadlineExceeded once t has passed; the zero t clears it. A router
// uses it to stop its readers while its writers finish.
func (d *Device) SetReadDeadline(t time.Time) error {
	return d.mapErr(d.f.SetReadDeadline(t))
}

// Close closes the queue and wakes a blocked Read, which returns
// os.ErrClosed. A device Open created disappears when its last queue closes;
// a persistent one stays. Close is idempotent.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	return d.f.Close()
}

// mapErr turns the poller's closed-file error, which a RawConn does not
// translate, into os.ErrClosed.
func (d *Device) mapErr(err error) error {
	if err == nil {
		return nil
	}
	if d.closed.Load() && !errors.Is(err, os.ErrDeadlineExceeded) {
		return os.ErrClosed
	}
	return err
}
