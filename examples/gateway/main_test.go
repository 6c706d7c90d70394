package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/stretchr/testify/require"
)

// TestRunForwards protects the program on loopback: IP packets sent to
// -listen arrive at -upstream byte for byte (a light load, so CAKE neither
// drops nor marks: no packet waits above the target), the report names the
// diffserv4 tins, and a bad
// -overhead is refused. Bounded in packets (100) and time. The packets
// belong to ten flows that recur, as real connections do: a hundred
// one-packet flows in bursts at twice the rate would be a flood of new
// flows to CAKE's flood guard, which keeps such packets waiting at most
// the target.
func TestRunForwards(t *testing.T) {
	up, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	require.NoError(t, err)
	defer up.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	addrc := make(chan netip.AddrPort, 1)
	runErr := make(chan error, 1)
	go func() {
		runErr <- run(ctx, []string{"-listen", "127.0.0.1:0", "-upstream", up.LocalAddr().String(),
			"-rate", "8mbit", "-overhead", "ethernet", "-stats", "0"}, &out, func(a netip.AddrPort) { addrc <- a })
	}()
	var gw netip.AddrPort
	select {
	case gw = <-addrc:
	case err := <-runErr:
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(gw))
	require.NoError(t, err)
	defer conn.Close()
	const n = 100
	want := map[string]bool{}
	for i := range n {
		p := udp4(server, [4]byte{192, 168, 1, byte(10 + i%2)}, 443, uint16(40000+i%10), 0, 500)
		p[4], p[5] = byte(i>>8), byte(i) // the IP ID tells the packets apart
		fixChecksum(p)
		want[string(p)] = true
		_, err := conn.Write(p)
		require.NoError(t, err)
		if i%5 == 4 {
			// Bursts of 5 take 2.5 ms at 8 Mbit/s, below CAKE's 5 ms target:
			// COBALT, as Linux's, drops the second packet of a flow that
			// waits above the target twice in a row.
			time.Sleep(5 * time.Millisecond)
		}
	}
	got := 0
	buf := make([]byte, 2048)
	require.NoError(t, up.SetReadDeadline(time.Now().Add(5*time.Second)))
	for got < n {
		k, err := up.Read(buf)
		if err != nil {
			cancel()
			<-runErr
			t.Fatalf("received %d of %d: %v\n%s", got, n, err, out.String())
		}
		require.True(t, want[string(buf[:k])], "an unaltered packet we sent")
		delete(want, string(buf[:k]))
		got++
	}
	cancel()
	require.NoError(t, <-runErr)
	require.Contains(t, out.String(), "cake diffserv4 dual-dsthost")
	require.Contains(t, out.String(), "Best Effort: 100 pkts, 0 drops")

	err = run(t.Context(), []string{"-upstream", "127.0.0.1:1", "-overhead", "carrier-pigeon"}, &out, nil)
	require.ErrorContains(t, err, "carrier-pigeon")
	require.True(t, strings.Contains(err.Error(), "docsis"), "the error lists the presets")
}

// TestBuffersFollowRate protects the default pool size: it follows -rate
// (a slow link gets a few hundred buffers, not 4096, so an unresponsive
// flow cannot queue for seconds), stays within [64, 4096], and an explicit
// negative -buffers is an error.
func TestBuffersFollowRate(t *testing.T) {
	slow, fast := buffersFor(10*aqm.Mbit), buffersFor(200*aqm.Mbit)
	require.Less(t, slow, 500, "10 Mb/s")
	require.Greater(t, fast, slow)
	require.LessOrEqual(t, buffersFor(100*aqm.Gbit), 4096)
	require.GreaterOrEqual(t, buffersFor(aqm.Kbit), 64)
	require.Equal(t, 4096, buffersFor(0))
	var out bytes.Buffer
	require.ErrorContains(t, run(t.Context(), []string{"-upstream", "127.0.0.1:9", "-buffers", "-1"}, &out, nil), "-buffers -1")
}

// TestDemo protects -demo, the one-line way to watch the gateway work: two
// devices download through it, and CAKE gives each about half the link
// although one opens eight flows and the other one.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-demo", "-rate", "10mbit", "-duration", "2s", "-stats", "0"}, &out, nil))
	i := strings.Index(out.String(), "demo: ")
	require.GreaterOrEqual(t, i, 0, out.String())
	var offeredA, a, offeredB, b, link float64
	_, err := fmt.Sscanf(out.String()[i:], "demo: device A (1 flow at %f Mbit/s) received %f Mbit/s; device B (8 flows at %f Mbit/s each) received %f Mbit/s; link %f Mbit/s",
		&offeredA, &a, &offeredB, &b, &link)
	require.NoError(t, err, out.String())
	require.InDelta(t, 1, a/b, 0.25, "each device gets about half: %s", out.String())
	require.InDelta(t, link, a+b, 0.1*link, "the link is used: %s", out.String())
}

// TestHelp protects -h: one line saying what the program is comes first,
// and asking for help is not a failure.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	require.ErrorIs(t, run(t.Context(), []string{"-h"}, &out, nil), flag.ErrHelp)
	require.True(t, strings.HasPrefix(out.String(), "gateway queues raw IP packets"), out.String())
}

// fixChecksum recomputes p's IPv4 header checksum.
func fixChecksum(p []byte) {
	p[10], p[11] = 0, 0
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(p[i])<<8 | uint32(p[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	p[10], p[11] = byte(^sum>>8), byte(^sum)
}
