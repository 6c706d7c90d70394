package main

import (
	"bytes"
	"flag"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDualPI2SeparatesL4S protects the demo's claim on real loopback
// sockets: through DualPI2 the L4S flow's delay stays an order of magnitude
// below the Classic flow's (which the PI controller holds near its 15 ms
// target), and the L4S flow is signalled with CE marks, the Classic one with
// losses. Through a single PIE queue both flows see the same delay, longer
// than the L4S flow's under DualPI2.
func TestDualPI2SeparatesL4S(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ECN on UDP sockets is wired up for Linux only")
	}
	var out bytes.Buffer
	res, err := run(t.Context(), []string{"-aqm", "dualpi2", "-duration", "3s"}, &out)
	require.NoError(t, err)
	t.Log("\n" + out.String())
	l, c := res[0], res[1]
	require.Less(t, l.P50, 5*time.Millisecond, "L4S queue stays shallow")
	require.Greater(t, c.P50, 5*time.Millisecond, "Classic queue is held near the PI target")
	require.Greater(t, c.P50, 4*l.P50)
	require.Positive(t, l.CE, "L4S is signalled by CE marks")
	require.Zero(t, c.CE, "a Not-ECT flow is never marked")
	require.Greater(t, c.Sent-c.Received, 0, "Classic is signalled by drops")

	out.Reset()
	res, err = run(t.Context(), []string{"-aqm", "pie", "-duration", "2s"}, &out)
	require.NoError(t, err)
	t.Log("\n" + out.String())
	pl, pc := res[0], res[1]
	require.InDelta(t, float64(pc.P50), float64(pl.P50), float64(pc.P50)/2, "in one shared queue the L4S flow waits like the Classic one")
	require.Greater(t, pl.P50, 2*l.P50, "and longer than in its own DualPI2 queue")
}

// TestHelp protects -h: one line saying what the program is comes first,
// and asking for help is not a failure.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := run(t.Context(), []string{"-h"}, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.True(t, strings.HasPrefix(out.String(), "l4sdemo shows DualPI2"), out.String())
}
