package bench

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// inlineWant lists, per package directory, the per-packet methods that must
// stay inlinable (type arguments dropped from the names).
var inlineWant = []string{
	"fifo (*Queue).Len", "internal/tally NoteSize", "aqm (*Count).Add", "aqm (*Count).AddMeta", "aqm Meta.SegmentCount", "aqm Time.Since",
	"internal/ring ring.(*Ring).PushBack", "internal/ring ring.(*Ring).PopFront",
	"internal/rng (*Source).Uint64", // Uint32 and Float64 cost 83-85, just over the budget of 80
}

// TestInlining protects the hot-path shape the per-packet costs depend on:
// the building blocks' per-packet methods must inline into the queues, so
// that a packet moves between ring and the caller in registers (see
// aqm.TestPacketFitsRegisters for the other half). It reads the compiler's
// own -m report, as net/netip's TestInlining does.
func TestInlining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the library with -gcflags=-m")
	}
	cmd := exec.Command("go", "build", "-gcflags=-m",
		"github.com/aqmkit/aqmkit/aqm", "github.com/aqmkit/aqmkit/fifo", "github.com/aqmkit/aqmkit/internal/ring",
		"github.com/aqmkit/aqmkit/internal/rng", "github.com/aqmkit/aqmkit/internal/tally",
		"github.com/aqmkit/aqmkit/red", "github.com/aqmkit/aqmkit/codel", "github.com/aqmkit/aqmkit/pie",
		"github.com/aqmkit/aqmkit/dualq", "github.com/aqmkit/aqmkit/fq")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	inlined := inlinable(out)
	for _, fn := range inlineWant {
		if !inlined[fn] {
			t.Errorf("%s is no longer inlinable", fn)
		}
	}
}

// inlinable parses the compiler's "dir/file.go:line:col: can inline name"
// lines into keys "dir name", so that each package's Queue is checked on
// its own. The compiler prints paths relative to a directory of its own
// choosing, so leading "./" and "../" are dropped.
func inlinable(report []byte) map[string]bool {
	re := regexp.MustCompile(`(?m)^(?:\.\.?/)*([\w/]+)/\w+\.go:\d+:\d+: can inline (.+)$`)
	m := map[string]bool{}
	for _, s := range re.FindAllSubmatch(report, -1) {
		name := string(s[2])
		if strings.Contains(name, "[") && !strings.Contains(name, "go.shape") {
			// A concrete instantiation such as (*CoDel[int]).Enqueue is a
			// thin wrapper around the shared go.shape body and always
			// inlines; only the body says anything.
			continue
		}
		m[string(s[1])+" "+withoutTypeArgs(name)] = true
	}
	return m
}

// TestInlinableParsing protects the parser TestInlining relies on: nested
// type arguments are dropped and names are keyed by their package folder.
func TestInlinableParsing(t *testing.T) {
	m := inlinable([]byte("./internal/ring/ring.go:49:6: can inline ring.(*Ring[go.shape.struct { Payload int; Size uint32 }]).PushBack\n" +
		"../red/queue.go:341:6: can inline (*Queue[go.shape.int]).Dequeue\n" +
		"../codel/queue.go:9:6: cannot inline (*Queue[go.shape.int]).Dequeue: too complex\n" +
		"fq/codel.go:9:6: can inline (*CoDel[int]).Enqueue\n"))
	if !m["internal/ring ring.(*Ring).PushBack"] || !m["red (*Queue).Dequeue"] || m["codel (*Queue).Dequeue"] || len(m) != 2 {
		t.Errorf("parsed %v", m)
	}
	if got := withoutTypeArgs("ring.(*Ring[aqm.Packet[int]]).PushBack"); got != "ring.(*Ring).PushBack" {
		t.Errorf("withoutTypeArgs = %q", got)
	}
}

// withoutTypeArgs drops every bracketed type argument list, however nested:
// "ring.(*Ring[aqm.Packet[int]]).PushBack" becomes "ring.(*Ring).PushBack".
func withoutTypeArgs(name string) string {
	out := make([]byte, 0, len(name))
	depth := 0
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0:
			out = append(out, c)
		}
	}
	return string(out)
}
