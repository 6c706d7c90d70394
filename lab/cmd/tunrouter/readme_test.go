package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEShowsThisProgram protects the README's promise that its
// "Real traffic" router is a whole, working program: the Go block there
// is this file, byte for byte, so it builds and vets with the module.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	md := string(readme)
	i := strings.Index(md, "\n## Real traffic\n")
	if i < 0 {
		t.Fatal(`README.md has no "## Real traffic" section`)
	}
	md = md[i:]
	start := strings.Index(md, "```go\n")
	end := strings.Index(md[start+6:], "\n```")
	if start < 0 || end < 0 {
		t.Fatal(`README.md's "## Real traffic" section has no Go block`)
	}
	if got, want := md[start+6:start+6+end]+"\n", string(src); got != want {
		t.Errorf("README.md's router differs from lab/cmd/tunrouter/main.go; copy the file into the README")
	}
}
