//go:build linux

package wgtun

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/aqmkit/aqmkit/aqm"
)

// tunPath is a real path through two wireguard-go TUN devices with their
// offloads (IFF_VNET_HDR, TSO, batches of 128), one in each of two network
// namespaces made for the test:
//
//	ns a: 10.199.0.1 ─ tun a ═[forward a→b: the device under test]═▶ tun b ─ 10.199.1.1 :ns b
//	                   tun a ◀═[forward b→a: raw]═══════════════════ tun b
//
// Kernel TCP in a sends through tun a; the test's forwarders play the
// router (or wireguard-go) between the devices. t.Cleanup deletes the
// namespaces, and with them the devices, addresses and routes.
type tunPath struct {
	t      testing.TB
	nsA    string
	nsB    string
	a, b   tun.Device
	closed bool
}

// mtu is the devices' MTU: wireguard-go's default.
const mtu = 1420

// newTUNPath builds the path, or skips the test with the reason it cannot.
func newTUNPath(t testing.TB) *tunPath {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and TUN devices")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("no TUN support: %v", err)
	}
	var id [3]byte
	_, _ = rand.Read(id[:])
	p := &tunPath{t: t, nsA: "wgtun" + hex.EncodeToString(id[:]) + "-a", nsB: "wgtun" + hex.EncodeToString(id[:]) + "-b"}
	for _, ns := range []string{p.nsA, p.nsB} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Skipf("cannot create network namespaces: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	var err error
	if p.a, err = createTUNIn(p.nsA, "wgta"); err != nil {
		t.Skipf("cannot create a TUN device in a namespace: %v", err)
	}
	if p.b, err = createTUNIn(p.nsB, "wgtb"); err != nil {
		_ = p.a.Close()
		t.Skipf("cannot create a TUN device in a namespace: %v", err)
	}
	t.Cleanup(p.close)
	for _, c := range [][]string{
		{p.nsA, "link", "set", "lo", "up"},
		{p.nsA, "addr", "add", "10.199.0.1/32", "dev", "wgta"},
		{p.nsA, "link", "set", "wgta", "up"},
		{p.nsA, "route", "add", "10.199.1.0/24", "dev", "wgta"},
		{p.nsB, "link", "set", "lo", "up"},
		{p.nsB, "addr", "add", "10.199.1.1/32", "dev", "wgtb"},
		{p.nsB, "link", "set", "wgtb", "up"},
		{p.nsB, "route", "add", "10.199.0.0/24", "dev", "wgtb"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n"}, c...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip -n %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	return p
}

// close closes both devices (once).
func (p *tunPath) close() {
	if !p.closed {
		p.closed = true
		_ = p.a.Close()
		_ = p.b.Close()
	}
}

// inNetns runs fn on a thread that has joined network namespace ns, so
// that the sockets and devices fn creates belong to ns.
func inNetns(ns string, fn func() error) error {
	target, err := os.Open("/run/netns/" + ns)
	if err != nil {
		return err
	}
	defer target.Close()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer self.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked if the thread cannot go back: it then ends with the goroutine
		if err := setns(target); err != nil {
			done <- err
			return
		}
		err := fn()
		if setns(self) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// createTUNIn creates a wireguard-go TUN device called name in namespace
// ns.
func createTUNIn(ns, name string) (dev tun.Device, err error) {
	err = inNetns(ns, func() error {
		dev, err = tun.CreateTUN(name, mtu)
		return err
	})
	return dev, err
}

// reader is what a forwarder reads from: a device, or the wrapper.
type reader interface {
	Read(bufs [][]byte, sizes []int, offset int) (int, error)
}

// forward reads bursts from src and writes them to dst as wireguard-go's
// receive path does (offset 16, buffers of 64 KiB so that dst can coalesce
// them), until src fails; it returns the packets it moved. inspect, if not
// nil, sees each packet first.
func forward(src reader, dst tun.Device, inspect func([]byte)) (packets int) {
	const offset = 16
	bufs := make([][]byte, MaxBatch)
	out := make([][]byte, MaxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, offset+65535)
	}
	sizes := make([]int, MaxBatch)
	for {
		n, err := src.Read(bufs, sizes, offset)
		for i := range n {
			out[i] = bufs[i][:offset+sizes[i]]
			if inspect != nil {
				inspect(out[i][offset:])
			}
		}
		if n > 0 {
			_, _ = dst.Write(out[:n], offset)
			packets += n
		}
		if err != nil && !errors.Is(err, tun.ErrTooManySegments) {
			return packets
		}
	}
}

// tcpBulk sends one kernel TCP flow from ns a to ns b for d and returns the
// bytes the receiver got.
func (p *tunPath) tcpBulk(d time.Duration) (int64, error) {
	var ln net.Listener
	if err := inNetns(p.nsB, func() (err error) { ln, err = net.Listen("tcp4", "10.199.1.1:0"); return err }); err != nil {
		return 0, err
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	var c net.Conn
	if err := inNetns(p.nsA, func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		return 0, err
	}
	buf := make([]byte, 256<<10)
	deadline := time.Now().Add(d)
	_ = c.SetWriteDeadline(deadline)
	for time.Now().Before(deadline) {
		if _, err := c.Write(buf); err != nil {
			break
		}
	}
	_ = c.Close()
	select {
	case n := <-got:
		return n, nil
	case <-time.After(10 * time.Second):
		return 0, errors.New("the receiver did not finish")
	}
}

// runPath forwards through the path, a→b from src (the device under test,
// the wrapper or tun a itself) and b→a raw, while fn runs; it then closes
// src (a wrapper closes tun a) and the devices, waits for the forwarders,
// and returns the packets moved a→b and src's Close error.
func (p *tunPath) runPath(src reader, inspect func([]byte), fn func()) (packets int, closeErr error) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); packets = forward(src, p.b, inspect) }()
	go func() { defer wg.Done(); forward(p.b, p.a, nil) }()
	fn()
	if c, ok := src.(io.Closer); ok {
		closeErr = c.Close()
	}
	p.close()
	wg.Wait()
	return packets, closeErr
}

// tunModes lists the modes BenchmarkTUNPath compares: the raw device
// first, then those named in WGTUN_BENCH_MODES (comma-separated), or all.
func tunModes() []pathMode {
	all := []pathMode{
		{name: "raw"},
		{name: "pass-through", cfg: &Config{Algorithm: PassThrough}},
		{name: "fifo", cfg: &Config{Algorithm: FIFO, MaxPacketBytes: mtu}},
		{name: "fq-codel", cfg: &Config{Algorithm: FQCoDel, MaxPacketBytes: mtu}},
		// A rate far above the path's: shaped, so the reader goroutine
		// reads and Read copies, but the rate never holds a packet back.
		{name: "fq-codel-100g", cfg: &Config{Algorithm: FQCoDel, Rate: 100 * aqm.Gbit, MaxPacketBytes: mtu}},
	}
	want := os.Getenv("WGTUN_BENCH_MODES")
	if want == "" {
		return all
	}
	modes := all[:1]
	for _, m := range all[1:] {
		if slices.Contains(strings.Split(want, ","), m.name) {
			modes = append(modes, m)
		}
	}
	return modes
}

// getenvFloat reads a float from the environment, 0 if unset or bad.
func getenvFloat(name string) float64 {
	var f float64
	_, _ = fmt.Sscan(os.Getenv(name), &f)
	return f
}

// TestRealTUN protects the wrapper on a real Linux TUN with offloads
// (IFF_VNET_HDR, TSO, batches of 128) under kernel TCP, each run a second
// long: unshaped, the direct path carries the flow with every packet
// accounted for and none copied; shaped at 20 Mbit/s with ECN, FQ-CoDel's
// CE marks arrive in the forwarded headers; Write refuses an offset with no
// room for the virtio-net header; Close ends the wrapper cleanly.
func TestRealTUN(t *testing.T) {
	const d = time.Second
	t.Run("unshaped", func(t *testing.T) {
		p := newTUNPath(t)
		w, err := New(p.a, Config{MaxPacketBytes: mtu})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		moved, closeErr := p.runPath(w, nil, func() { n, err = p.tcpBulk(d) })
		if err != nil || closeErr != nil {
			t.Fatalf("flow: %v, Close: %v", err, closeErr)
		}
		st, mt := w.Stats(), metricsOf(w)
		t.Logf("%.2f Gbit/s, %d packets, %v direct reads, %v copied", float64(n*8)/d.Seconds()/1e9, moved, mt["wgtun_direct_reads"], mt["wgtun_copied_packets"])
		if n == 0 || moved == 0 {
			t.Fatal("nothing went through")
		}
		// Close may catch a burst read but not yet queued (refused, as
		// the front is closed) or queued but not yet read out (flushed).
		read := uint64(mt["wgtun_read_packets"])
		refused, flushed := uint64(mt["front_refused_closed_packets"]), uint64(mt["front_flushed_packets"])
		if got := st.Enqueued.Packets + st.Dropped().Packets - st.DroppedQueued.Packets + refused; got != read {
			t.Errorf("the queue saw %d packets and refused %d of the %d read", got-refused, refused, read)
		}
		if out := uint64(moved) + st.Dropped().Packets + uint64(st.Len) + refused + flushed; read != out {
			t.Errorf("read %d != forwarded %d + dropped %d + queued %d + refused at Close %d + flushed at Close %d",
				read, moved, st.Dropped().Packets, st.Len, refused, flushed)
		}
		if mt["wgtun_direct_reads"] == 0 {
			t.Error("no read took the direct path")
		}
		if c := mt["wgtun_copied_packets"]; c > float64(read)/10 {
			t.Errorf("%v of %d packets copied: one flow's bursts should stay in place", c, read)
		}
	})
	t.Run("shaped-ecn", func(t *testing.T) {
		p := newTUNPath(t)
		if out, err := exec.Command("ip", "netns", "exec", p.nsA, "sysctl", "-qw", "net.ipv4.tcp_ecn=1").CombinedOutput(); err != nil {
			t.Skipf("cannot turn ECN on: %v: %s", err, out)
		}
		w, err := New(p.a, Config{Rate: 20 * aqm.Mbit, MaxPacketBytes: mtu})
		if err != nil {
			t.Fatal(err)
		}
		pkt := [][]byte{make([]byte, 64)}
		if _, err := w.Write(pkt, 0); !errors.Is(err, ErrWriteOffset) {
			t.Errorf("Write at offset 0 on a TUN with offloads: %v, want ErrWriteOffset", err)
		}
		var ce, ect int
		inspect := func(b []byte) {
			if len(b) >= 20 && b[0]>>4 == 4 {
				switch b[1] & 3 {
				case 3:
					ce++
				case 1, 2:
					ect++
				}
			}
		}
		var n int64
		moved, closeErr := p.runPath(w, inspect, func() { n, err = p.tcpBulk(2 * d) })
		if err != nil || closeErr != nil {
			t.Fatalf("flow: %v, Close: %v", err, closeErr)
		}
		st := w.Stats()
		t.Logf("%.1f Mbit/s, %d packets, %d ECT, %d CE; the queue marked %d, dropped %d",
			float64(n*8)/(2*d).Seconds()/1e6, moved, ect, ce, st.Marked.Packets, st.Dropped().Packets)
		if ect == 0 {
			t.Fatal("the flow did not negotiate ECN")
		}
		if st.Marked.Packets == 0 || ce == 0 {
			t.Errorf("FQ-CoDel marked %d packets, %d arrived with CE: want both positive", st.Marked.Packets, ce)
		}
		if uint64(ce) > st.Marked.Packets {
			t.Errorf("%d CE packets but only %d marked", ce, st.Marked.Packets)
		}
	})
}
