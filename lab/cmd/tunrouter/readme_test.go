package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEShowsThisProgram protects the router guide's promise that the
// smallest router it shows is a whole, working program: the Go block after
// "This is `lab/cmd/tunrouter`:" in docs/guide/router.md is this file, byte
// for byte, so it builds and vets with the module.
func TestREADMEShowsThisProgram(t *testing.T) {
	const guide = "docs/guide/router.md"
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", guide))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	md := string(readme)
	i := strings.Index(md, "This is `lab/cmd/tunrouter`:")
	if i < 0 {
		t.Fatal(guide + " does not show lab/cmd/tunrouter")
	}
	md = md[i:]
	start := strings.Index(md, "```go\n")
	end := strings.Index(md[start+6:], "\n```")
	if start < 0 || end < 0 {
		t.Fatal(guide + " has no Go block after its mention of lab/cmd/tunrouter")
	}
	if got, want := md[start+6:start+6+end]+"\n", string(src); got != want {
		t.Errorf("%s's router differs from lab/cmd/tunrouter/main.go; copy the file into the guide", guide)
	}
}
