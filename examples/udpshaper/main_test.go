package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/examples/internal/traffic"
)

// scenario runs the relay with the given AQM on loopback at 8 Mbit/s (1000
// packets/s of 1000 bytes) with a 200-packet limit, and offers it a bulk flow
// at twice that rate plus a sparse probe flow (one 100-byte packet every
// 10 ms), both bounded in packets and time. It returns every sample the
// upstream receiver recorded, with times counted from the start of sending,
// and the program's output.
func scenario(t *testing.T, aqmName string, d time.Duration) ([]traffic.Sample, string) {
	t.Helper()
	recv, err := traffic.Listen()
	require.NoError(t, err)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), d+5*time.Second)
	defer cancel()
	addrc := make(chan netip.AddrPort, 1)
	runErr := make(chan error, 1)
	go func() {
		runErr <- run(ctx, []string{
			"-listen", "127.0.0.1:0", "-upstream", recv.Addr().String(),
			"-rate", "8mbit", "-burst", "50000", "-aqm", aqmName, "-limit", "200", "-stats", "500ms",
		}, &out, func(a netip.AddrPort) { addrc <- a })
	}()
	var relayAddr netip.AddrPort
	select {
	case relayAddr = <-addrc:
	case err := <-runErr:
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	start := traffic.Since()
	var wg sync.WaitGroup
	n := int(d.Seconds() * 1000)
	wg.Go(func() {
		_, err := traffic.Send(ctx, relayAddr, traffic.Flow{ID: 1, PacketsPerSec: 2000, SizeBytes: 1000, Count: 2 * n})
		require.NoError(t, err)
	})
	wg.Go(func() {
		_, err := traffic.Send(ctx, relayAddr, traffic.Flow{ID: 2, PacketsPerSec: 100, SizeBytes: 100, Count: n / 10})
		require.NoError(t, err)
	})
	wg.Wait()
	time.Sleep(300 * time.Millisecond) // let the queue drain (at most 200 ms of packets)
	cancel()
	require.NoError(t, <-runErr)
	samples := recv.Close()
	for i := range samples { // times from the start of the scenario
		samples[i].Sent -= start
		samples[i].Received -= start
	}
	return samples, out.String()
}

// TestProbeDelayFIFOvsFQCoDel protects the reason the shaper exists:
// behind a shaped bottleneck overloaded 2×, a sparse probe waits behind the
// whole drop-tail FIFO (200 packets = 200 ms), while FQ-CoDel serves it
// within a few milliseconds. It also checks the loopback rate: the bytes
// forwarded while the queue is backlogged are within 5% of 8 Mbit/s. The
// shaper's 50 kB (50 ms) burst lets it catch up after the scheduling stalls
// of a loaded machine running -race. The two delays are compared with each
// other, not with fixed bounds, so a slow machine slows both alike.
func TestProbeDelayFIFOvsFQCoDel(t *testing.T) {
	const d = 2 * time.Second
	fifo, out := scenario(t, "fifo", d)
	t.Log(out)
	probe := traffic.Select(fifo, 2, d/2, d)
	require.NotEmpty(t, probe)
	fifoP50 := traffic.Percentile(probe, 0.5)
	t.Logf("fifo: probe delay p50 %v p90 %v (%d samples)", fifoP50, traffic.Percentile(probe, 0.9), len(probe))

	// Loopback rate while backlogged: all bytes that arrived in [0.5 s, 2 s)
	// (the queue is full throughout).
	var bytes int
	var first, last time.Duration
	for _, s := range fifo {
		if s.Received >= d/4 && s.Received < d {
			if first == 0 {
				first = s.Received
			}
			last = s.Received
			bytes += s.Size
		}
	}
	got := float64(bytes) * 8 / (last - first).Seconds()
	t.Logf("fifo: forwarded %.3f Mbit/s", got/1e6)
	require.InEpsilon(t, 8e6, got, 0.05, "shaped rate on loopback")

	fqc, out := scenario(t, "fq-codel", d)
	t.Log(out)
	probe = traffic.Select(fqc, 2, d/2, d)
	require.NotEmpty(t, probe)
	fqP90 := traffic.Percentile(probe, 0.9)
	t.Logf("fq-codel: probe delay p50 %v p90 %v (%d samples)", traffic.Percentile(probe, 0.5), fqP90, len(probe))
	require.Greater(t, fifoP50, 10*fqP90, "the probe waits behind the FIFO's full buffer, an order of magnitude longer than behind FQ-CoDel")
}

// TestEveryAQM protects the -aqm flag: each algorithm relays traffic, prints
// its statistics, and accounts for every datagram.
func TestEveryAQM(t *testing.T) {
	for _, name := range []string{"codel", "sfq", "pie", "dualpi2", "red"} {
		t.Run(name, func(t *testing.T) {
			samples, out := scenario(t, name, 400*time.Millisecond)
			require.NotEmpty(t, samples)
			require.Contains(t, out, "final: rx=")
			final := out[strings.Index(out, "final:"):]
			t.Log(strings.TrimSpace(final))
		})
	}
}

// TestFlags protects the command line: a missing upstream, a bad rate and an
// unknown AQM are errors, not panics; rates take tc's syntax; and -h names
// each flag's argument sensibly.
func TestFlags(t *testing.T) {
	var out bytes.Buffer
	require.ErrorContains(t, run(t.Context(), nil, &out, nil), "-upstream is required")
	err := run(t.Context(), []string{"-upstream", "127.0.0.1:9", "-rate", "fast"}, &out, nil)
	require.ErrorContains(t, err, `invalid value "fast" for flag -rate`)
	require.ErrorContains(t, err, "tc unit")
	require.ErrorContains(t, run(t.Context(), []string{"-upstream", "127.0.0.1:9", "-aqm", "nope", "-listen", "127.0.0.1:0"}, &out, nil), "unknown queue \"nope\"")

	out.Reset()
	require.ErrorIs(t, run(t.Context(), []string{"-h"}, &out, nil), flag.ErrHelp)
	help := out.String()
	require.Contains(t, help, "-duration duration")
	require.NotContains(t, help, "-duration long")
	require.Contains(t, help, "-rate rate")
	require.Contains(t, help, "tc syntax")
	require.Contains(t, help, "(default 10mbit)")
}

// TestDemo protects -demo, the one-line way to watch the relay work: it
// drives the relay itself for -duration, and behind FQ-CoDel the probe
// gets through while the bulk flow is held to the rate.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-demo", "-aqm", "fq-codel", "-rate", "8mbit", "-duration", "1s", "-stats", "0"}, &out, nil))
	var sent, received int
	var p50, p99 string
	line := out.String()[strings.Index(out.String(), "demo: probe"):]
	_, err := fmt.Sscanf(line, "demo: probe (100 bytes every 10 ms): %d sent, %d received, one-way delay p50 %s p99 %s", &sent, &received, &p50, &p99)
	require.NoError(t, err, out.String())
	require.Equal(t, 100, sent)
	require.GreaterOrEqual(t, received, 95, "the probe is not starved by the bulk flow")
	require.ErrorContains(t, run(t.Context(), []string{"-demo", "-upstream", "127.0.0.1:9"}, &out, nil), "leave out -upstream")
}

// TestHelp protects -h: it says in one line what the program is, then the
// flags, and it is not an error to the caller.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"-h"}, &out, nil)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.True(t, strings.HasPrefix(out.String(), "udpshaper relays UDP datagrams"), out.String())
	require.Contains(t, out.String(), "-demo")
}
