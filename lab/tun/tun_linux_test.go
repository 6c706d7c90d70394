//go:build linux

package tun

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envNetns names the test a child process runs inside its own network
// namespace.
const envNetns = "AQMKIT_TUN_TEST_NETNS"

// inNetns runs the calling test again in a child process in a fresh network
// namespace and reports false in the parent, or reports true in the child,
// which then runs the test's body. Devices and addresses made there vanish
// with the namespace when the child exits, whatever happens.
func inNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envNetns) == t.Name() {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates TUN devices inside a fresh network namespace")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("no TUN support: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envNetns+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	var pe *os.PathError
	if errors.As(err, &pe) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		t.Skipf("cannot create a network namespace: %v", err)
	}
	t.Logf("child in a fresh network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		t.Skip("the child skipped (see its output)")
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child did not pass %s", t.Name())
	}
	return false
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func needIP(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2) to give the device an address")
	}
}

// TestOpenCreatesAndSetsUp protects device creation: Open makes the device,
// sets the link up with the MTU asked for, and the device disappears with its
// last queue.
func TestOpenCreatesAndSetsUp(t *testing.T) {
	if !inNetns(t) {
		return
	}
	d, err := Open(Config{Name: "aqmt0", MTU: 1400})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name() != "aqmt0" || d.MTU() != 1400 {
		t.Errorf("Name, MTU = %q, %d; want aqmt0, 1400", d.Name(), d.MTU())
	}
	ifi, err := net.InterfaceByName("aqmt0")
	if err != nil {
		t.Fatal(err)
	}
	if ifi.Flags&net.FlagUp == 0 || ifi.MTU != 1400 {
		t.Errorf("interface flags %v MTU %d; want up and 1400", ifi.Flags, ifi.MTU)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := net.InterfaceByName("aqmt0"); err == nil {
		t.Errorf("aqmt0 still exists after its only queue closed")
	}
	// An empty name lets the kernel choose.
	d, err = Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !strings.HasPrefix(d.Name(), "tun") {
		t.Errorf("kernel-chosen name %q, want tunN", d.Name())
	}
}

// udp4 builds an IPv4/UDP packet with valid checksums.
func udp4(src, dst netip.AddrPort, payload []byte) []byte {
	p := make([]byte, 28+len(payload))
	p[0], p[8], p[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	binary.BigEndian.PutUint16(p[10:], ^fold(sum(p[:20], 0)))
	u := p[20:]
	binary.BigEndian.PutUint16(u[0:], src.Port())
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	copy(u[8:], payload)
	ps := sum(p[12:20], 17+uint32(len(u)))
	c := ^fold(sum(u, ps))
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], c)
	return p
}

func sum(b []byte, s uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// TestReadWriteRoundTrip protects the data path: a datagram the kernel routes
// into the device is read whole, as a bare IPv4 packet, and a packet written
// to the device is delivered to a local socket.
func TestReadWriteRoundTrip(t *testing.T) {
	if !inNetns(t) {
		return
	}
	needIP(t)
	d, err := Open(Config{Name: "aqmt1"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	run(t, "ip", "addr", "add", "10.201.9.1/24", "dev", "aqmt1")
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 201, 9, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	peer := netip.MustParseAddrPort("10.201.9.2:4000")
	if _, err := conn.WriteToUDPAddrPort([]byte("hello"), peer); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	if err := d.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var pkt []byte
	for pkt == nil { // skip anything else the kernel sends (IPv6 router solicitations)
		n, err := d.Read(buf)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if buf[0]>>4 == 4 && n >= 28 && buf[9] == 17 {
			pkt = buf[:n]
		}
	}
	want := udp4(local, peer, []byte("hello"))
	want[4], want[5], want[6], want[7] = pkt[4], pkt[5], pkt[6], pkt[7] // id and flags are the kernel's
	binary.BigEndian.PutUint16(want[10:], 0)
	binary.BigEndian.PutUint16(want[10:], ^fold(sum(want[:20], 0)))
	if !bytes.Equal(pkt[:20], want[:20]) || !bytes.Equal(pkt[20:24], want[20:24]) || !bytes.Equal(pkt[28:], []byte("hello")) {
		t.Errorf("read\n %x\nwant\n %x", pkt, want)
	}
	reply := udp4(peer, local, []byte("world"))
	if n, err := d.Write(reply); err != nil || n != len(reply) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := conn.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("socket did not get the written packet: %v", err)
	}
	if string(buf[:n]) != "world" || from != peer {
		t.Errorf("socket got %q from %v, want \"world\" from %v", buf[:n], from, peer)
	}
}

// TestBatches protects ReadBatch and WriteBatch: packets the kernel already
// holds come back from one call, and a batch write delivers every packet in
// order.
func TestBatches(t *testing.T) {
	if !inNetns(t) {
		return
	}
	needIP(t)
	d, err := Open(Config{Name: "aqmt2"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	run(t, "ip", "addr", "add", "10.201.9.1/24", "dev", "aqmt2")
	run(t, "sysctl", "-qw", "net.ipv6.conf.aqmt2.disable_ipv6=1")
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 201, 9, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	peer := netip.MustParseAddrPort("10.201.9.2:4000")
	const sent = 6
	for i := range sent {
		if _, err := conn.WriteToUDPAddrPort([]byte{byte(i)}, peer); err != nil {
			t.Fatal(err)
		}
	}
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	sizes := make([]int, len(bufs))
	d.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []byte
	most := 0
	for len(got) < sent {
		n, err := d.ReadBatch(bufs, sizes)
		if err != nil {
			t.Fatalf("ReadBatch after %d packets: %v", len(got), err)
		}
		most = max(most, n)
		for i := range n {
			if p := bufs[i][:sizes[i]]; len(p) == 29 && p[9] == 17 {
				got = append(got, p[28])
			}
		}
	}
	if !bytes.Equal(got, []byte{0, 1, 2, 3, 4, 5}) {
		t.Errorf("payloads %v, want 0..5 in order", got)
	}
	if most < 2 {
		t.Errorf("every ReadBatch returned one packet; want the %d queued packets in fewer calls", sent)
	}
	pkts := make([][]byte, sent)
	for i := range pkts {
		pkts[i] = udp4(peer, local, []byte{byte(10 + i)})
	}
	pkts[2] = []byte{0x00, 0x01} // not IP: the kernel refuses it
	n, err := d.WriteBatch(pkts)
	if n != 2 || err == nil {
		t.Fatalf("WriteBatch = %d, %v; want 2 and the kernel's refusal of pkts[2]", n, err)
	}
	if n, err := d.WriteBatch(pkts[3:]); n != 3 || err != nil {
		t.Fatalf("WriteBatch of the rest = %d, %v", n, err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var rcv []byte
	for range 5 {
		b := make([]byte, 16)
		n, _, err := conn.ReadFromUDPAddrPort(b)
		if err != nil {
			t.Fatalf("after %v: %v", rcv, err)
		}
		rcv = append(rcv, b[:n]...)
	}
	if !bytes.Equal(rcv, []byte{10, 11, 13, 14, 15}) {
		t.Errorf("socket got %v, want 10 11 13 14 15", rcv)
	}
}

// TestCloseUnblocksRead protects shutdown: Close wakes a Read blocked on an
// idle device with os.ErrClosed, and a read deadline wakes it with
// os.ErrDeadlineExceeded.
func TestCloseUnblocksRead(t *testing.T) {
	if !inNetns(t) {
		return
	}
	d, err := Open(Config{Name: "aqmt3", KeepDown: true}) // down: nothing arrives
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(make([]byte, 2048)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	d.SetReadDeadline(time.Time{})
	done := make(chan error, 2)
	go func() { _, err := d.Read(make([]byte, 2048)); done <- err }()
	go func() { _, err := d.ReadBatch([][]byte{make([]byte, 2048)}, []int{0}); done <- err }()
	time.Sleep(50 * time.Millisecond) // let both block
	d.Close()
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, os.ErrClosed) {
				t.Errorf("blocked read returned %v, want os.ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not unblock a blocked read")
		}
	}
}

// TestPersistentAttach protects attaching: Open joins a persistent device made
// by ip tuntap, which stays after Close, and the multi-queue mode must match.
func TestPersistentAttach(t *testing.T) {
	if !inNetns(t) {
		return
	}
	needIP(t)
	run(t, "ip", "tuntap", "add", "dev", "aqmp0", "mode", "tun")
	d, err := Open(Config{Name: "aqmp0", MTU: 1280})
	if err != nil {
		t.Fatal(err)
	}
	if d.MTU() != 1280 {
		t.Errorf("MTU %d, want 1280", d.MTU())
	}
	if _, err := Open(Config{Name: "aqmp0"}); err == nil {
		t.Errorf("a second single-queue Open succeeded; want EBUSY")
	}
	if _, err := Open(Config{Name: "aqmp0", MultiQueue: true}); err == nil {
		t.Errorf("a multi-queue Open of a single-queue device succeeded")
	}
	d.Close()
	if _, err := net.InterfaceByName("aqmp0"); err != nil {
		t.Errorf("persistent device gone after Close: %v", err)
	}

	run(t, "ip", "tuntap", "add", "dev", "aqmq0", "mode", "tun", "multi_queue")
	var qs []*Device
	for range 3 {
		q, err := Open(Config{Name: "aqmq0", MultiQueue: true})
		if err != nil {
			t.Fatalf("queue %d: %v", len(qs), err)
		}
		qs = append(qs, q)
	}
	for _, q := range qs {
		q.Close()
	}
}

// TestOffloadUDPSuperPackets protects the offload path: a device opened with
// Offload takes the TSO and USO offloads, a UDP GSO send (UDP_SEGMENT)
// routed into it is read as one super-packet behind a virtio-net header
// whose kind and segment size say what it stands for, and a super-packet
// written back with such a header reaches a local socket as its segments.
func TestOffloadUDPSuperPackets(t *testing.T) {
	if !inNetns(t) {
		return
	}
	needIP(t)
	d, err := Open(Config{Name: "aqmt5", Offload: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.VnetHdr() {
		t.Fatalf("no virtio-net header: %s", d.OffloadNote())
	}
	want := uint32(OffloadCsum | OffloadTSO4 | OffloadTSO6 | OffloadUSO4 | OffloadUSO6)
	if d.Offloads()&want != want {
		t.Skipf("the kernel accepted offloads %#x, not %#x (%s)", d.Offloads(), want, d.OffloadNote())
	}
	run(t, "ip", "addr", "add", "10.201.9.1/24", "dev", "aqmt5")
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 201, 9, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	const udpSegment = 103 // UDP_SEGMENT from <linux/udp.h>
	var serr error
	rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_UDP, udpSegment, 1000) })
	if serr != nil {
		t.Skipf("no UDP GSO: %v", serr)
	}
	payload := make([]byte, 2500)
	for i := range payload {
		payload[i] = byte(i)
	}
	peer := netip.MustParseAddrPort("10.201.9.2:4000")
	if _, err := conn.WriteToUDPAddrPort(payload, peer); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, OffloadBufferSize)
	if err := d.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var pkt []byte
	for pkt == nil {
		n, err := d.Read(buf)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if n >= 10+28 && buf[10]>>4 == 4 && buf[10+9] == 17 {
			pkt = buf[:n]
		}
	}
	// flags, kind UDP_L4 (5), segment size 1000, little-endian
	if pkt[1] != 5 || binary.LittleEndian.Uint16(pkt[4:6]) != 1000 || len(pkt) != 10+28+2500 {
		t.Fatalf("header %x, length %d; want kind 5, segment size 1000, length %d", pkt[:10], len(pkt), 10+28+2500)
	}
	// Write a super-packet back: 3 datagrams of at most 1000 bytes to the
	// local socket, checksum left partial for the kernel.
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	src := netip.MustParseAddrPort("10.201.9.2:4000")
	sp := udp4(src, local, payload)
	u := sp[20:]
	binary.BigEndian.PutUint16(u[6:], fold(sum(sp[12:20], 17+uint32(len(u)))))
	hdr := []byte{1, 5, 28, 0, 0xe8, 0x03, 20, 0, 6, 0} // NEEDS_CSUM, UDP_L4, 1000, start 20, offset 6
	if _, err := d.Write(append(hdr, sp...)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := 0
	rb := make([]byte, 4096)
	for got < len(payload) {
		n, _, err := conn.ReadFromUDPAddrPort(rb)
		if err != nil {
			t.Fatalf("after %d bytes: %v", got, err)
		}
		if n > 1000 || !bytes.Equal(rb[:n], payload[got:got+n]) {
			t.Fatalf("datagram of %d bytes at %d does not match", n, got)
		}
		got += n
	}
}
