// Package readme checks that the README's usage example compiles as written
// against the library's public API.
package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUseSectionCompiles protects the README's promise that its Use
// section is a working program: the first Go block under "## Use" is
// written to a temporary package inside this module and vetted (type
// checked) against the library as it is.
func TestUseSectionCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, ok := useBlock(string(readme))
	if !ok {
		t.Fatal(`README.md has no Go block under "## Use"`)
	}
	if !strings.Contains(src, "package main") {
		t.Fatal("the Use block must be a whole program (package main)")
	}
	dir, err := os.MkdirTemp(".", "snippet")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "vet", "./"+filepath.Base(dir)).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's Use block does not compile:\n%s\n%s", out, src)
	}
}

// useBlock returns the first ```go block after the "## Use" heading.
func useBlock(md string) (string, bool) {
	i := strings.Index(md, "\n## Use\n")
	if i < 0 {
		return "", false
	}
	md = md[i:]
	start := strings.Index(md, "```go\n")
	if start < 0 {
		return "", false
	}
	md = md[start+len("```go\n"):]
	end := strings.Index(md, "\n```")
	if end < 0 {
		return "", false
	}
	return md[:end+1], true
}

// TestUseBlockExtraction protects the extraction itself, so a README edit
// that moves the block cannot make the check vacuous.
func TestUseBlockExtraction(t *testing.T) {
	src, ok := useBlock("# x\n\n## Use\n\ntext\n\n```go\npackage main\n```\n\n## Next\n```go\nother\n```\n")
	if !ok || src != "package main\n" {
		t.Fatalf("got %q, %v", src, ok)
	}
	if _, ok := useBlock("# x\n## Other\n```go\nx\n```\n"); ok {
		t.Fatal("found a block without a Use heading")
	}
}
