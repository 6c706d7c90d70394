package main

import (
	"strings"
	"testing"

	"github.com/aqmkit/aqmkit/lab/router"
)

// TestLine protects the stat line: totals, the non-zero drop reasons by
// name, and one part per queue.
func TestLine(t *testing.T) {
	s := router.Stats{
		Read: router.Count{Packets: 10}, Written: router.Count{Packets: 6}, Queued: 1, Marked: 2,
		Dropped: router.Drops{Total: 3, Early: 2, NotIP: 1},
		Queues:  []router.QueueStats{{Prefix: "10.201.1.0/24", Read: router.Count{Packets: 9}}},
	}
	got := line(s)
	for _, want := range []string{"read 10 written 6 dropped 3 (early 2, not_ip 1) marked 2 queued 1", "| 10.201.1.0/24 r 9 "} {
		if !strings.Contains(got, want) {
			t.Errorf("line = %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "overlimit") {
		t.Errorf("line = %q names a reason with no drops", got)
	}
}
