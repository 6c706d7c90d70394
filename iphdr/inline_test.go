package iphdr

import (
	"os/exec"
	"strings"
	"testing"
)

// The helpers the hash and parse speed depend on stay within the
// compiler's inlining budget: a SipRound that is a call costs several
// times more (see the note on round).
func TestInlining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package; skipped with -short")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(goCmd, "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go build -gcflags=-m: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if _, fn, ok := strings.Cut(line, ": can inline "); ok {
			fn, _, _ = strings.Cut(fn, " ")
			got[fn] = true
		}
	}
	for _, fn := range []string{"round", "Hasher.start", "le64", "le32", "be16", "isExt6", "isEcho", "setCE4", "size", "Hasher.WithMode"} {
		if !got[fn] {
			t.Errorf("%s is no longer inlinable", fn)
		}
	}
}
