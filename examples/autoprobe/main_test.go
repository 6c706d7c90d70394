package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
)

// TestDemo protects the demo's point: when the simulated capacity falls,
// the replies' round trips rise and the controller cuts the rate, and
// every probe's reply is a sample; bounded to 6 s on 127.0.0.1.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-demo", "-duration", "6s"}, &out))
	m := regexp.MustCompile(`samples (\d+): cuts (\d+)`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	samples, _ := strconv.Atoi(m[1])
	cuts, _ := strconv.Atoi(m[2])
	require.Greater(t, samples, 20, out.String()) // 6 s of probes every 150 ms
	require.Positive(t, cuts, out.String())
	// Every cut comes after the capacity fell at 2 s.
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "cut" {
			at, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "s"), 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, at, 2.0, line)
		}
	}
}

// TestProbeLoop protects the loop on a plain reflector: the replies'
// round trips reach the controller, a high achieved rate with low delay
// raises the rate through the Setter, and the loop stops with its context.
func TestProbeLoop(t *testing.T) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	go serveEcho(ctx, c, nil)
	var sent atomic.Uint64
	var last atomic.Uint64
	counter := func() (uint64, error) { return sent.Add(500_000), nil } // 20 Mbit/s every 200 ms
	set := autorate.SetterFunc(func(r aqm.Rate) error { last.Store(uint64(r)); return nil })
	var out bytes.Buffer
	err = probeLoop(ctx, []string{c.LocalAddr().String()}, autorate.Config{MinRate: aqm.Mbit, BaseRate: 10 * aqm.Mbit, MaxRate: 100 * aqm.Mbit},
		counter, set, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "increase", out.String())
	require.Greater(t, last.Load(), uint64(10*aqm.Mbit), out.String())
}
