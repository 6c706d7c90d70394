package bucket

import (
	"os/exec"
	"strings"
	"testing"
)

// TestInlining protects the front's hot path: the bucket's per-packet
// methods must inline into the front's consumer, read from the compiler's
// own -m report (as net/netip's TestInlining does).
func TestInlining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with -gcflags=-m")
	}
	out, err := exec.Command("go", "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, fn := range inlineWant {
		if !strings.Contains(string(out)+" ", "can inline "+fn+"\n") {
			t.Errorf("%s is no longer inlinable", fn)
		}
	}
}

var inlineWant = []string{
	"(*Bucket).Ready", "(*Bucket).Wait", "(*Bucket).Charge", "(*Bucket).CreditBytes",
	"(*Bucket).Fill", "CeilDiv", "DefaultBurst",
}
