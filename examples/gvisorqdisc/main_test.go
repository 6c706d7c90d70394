package gvisorqdisc

import (
	"flag"
	"os"
	"testing"

	"gvisor.dev/gvisor/pkg/refs"
)

// TestMain turns on gVisor's reference leak checker for the tests (not
// for benchmarks, whose cost it would change): every PacketBuffer is then
// tracked from creation to release, and the netstack test checks that
// none is left.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		refs.SetLeakMode(refs.LeaksPanic)
	}
	os.Exit(m.Run())
}
