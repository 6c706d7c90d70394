//go:build linux

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPassiveNamespaces protects -autorate-passive end to end: with no
// reflector, a TCP upload through the router gives the controller round
// trips from its timestamp echoes (counted on the router's exit line) and
// the transfer completes.
func TestPassiveNamespaces(t *testing.T) {
	l := newLab(t)
	rt := l.start(l.r, "router", "MTU", "-tun", "tun0", "-rate", "20mbit", "-delay", "5ms", "-report", "0",
		"-autorate", "10.201.2.0/24", "-autorate-min", "5mbit", "-autorate-max", "40mbit", "-autorate-passive", "-autorate-recovery", "1")
	l.start(l.s, "server", "ready", "10.201.2.2")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const size = 2 << 20
	out, err := l.helper(ctx, l.c, "client", "check", "10.201.2.2", strconv.Itoa(size)).CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v %s\nrouter:\n%s", err, out, rt.output())
	}
	if err := rt.stop(t); err != nil {
		t.Fatalf("router exit: %v\n%s", err, rt.output())
	}
	log := rt.output()
	t.Logf("router:\n%s", log)
	i := strings.Index(log, "passive round trips ")
	var n, hs int
	if i < 0 {
		t.Fatal("no passive round trips on the router's exit line")
	}
	if _, err := fmt.Sscanf(log[i:], "passive round trips %d (%d from handshakes)", &n, &hs); err != nil || n < 100 || hs < 1 {
		t.Errorf("passive round trips %d, handshakes %d (%v); want hundreds from a 2 MiB upload and its handshake", n, hs, err)
	}
}
