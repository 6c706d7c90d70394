package red

import (
	"os/exec"
	"strings"
	"testing"
)

// TestInlining protects the controller's per-arrival fast path, which
// Enqueue and the run of EnqueueBatch call once per packet and which must
// inline into both, read from the compiler's own -m report (as net/netip's
// TestInlining does).
func TestInlining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with -gcflags=-m")
	}
	out, err := exec.Command("go", "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, fn := range inlineWant {
		if !strings.Contains(string(out), "can inline "+fn+"\n") {
			t.Errorf("%s is no longer inlinable", fn)
		}
	}
}

var inlineWant = []string{
	"(*controller).update", "ewma", "(*controller).below", "(*controller).belowMin", "(*controller).quietInBand",
	"(*controller).settle", "(*controller).held", "(*controller).adaptDue", "(*controller).prob",
}
