package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

const module = "github.com/aqmkit/aqmkit"

// block is one ```go block of a Markdown file.
type block struct {
	file   string // relative to the repository root
	line   int    // of the opening fence
	code   string // with the fence's indentation removed
	marker string // the HTML comment before the fence, "" if none
}

var (
	fenceOpen  = regexp.MustCompile("^(\\s*)```go\\s*$")
	fenceAny   = regexp.MustCompile("^\\s*```")
	fenceClose = regexp.MustCompile("^\\s*```\\s*$")
	markerLine = regexp.MustCompile(`^\s*<!--\s*(.*?)\s*-->\s*$`)
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	pkgRef     = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.`)
)

// bodyImports are the packages a function-body snippet may name without
// importing them: the library's and a few of the standard library's.
var bodyImports = map[string]string{
	"aqm": module + "/aqm", "aqmtest": module + "/aqm/aqmtest", "fifo": module + "/fifo",
	"red": module + "/red", "codel": module + "/codel", "cobalt": module + "/cobalt",
	"pie": module + "/pie", "dualq": module + "/dualq", "sfq": module + "/sfq",
	"fq": module + "/fq", "cake": module + "/cake", "iphdr": module + "/iphdr",
	"clock": module + "/clock", "aqmexpvar": module + "/aqmexpvar", "front": module + "/front",
	"queues": module + "/queues", "autorate": module + "/autorate",
	"context": "context", "errors": "errors", "expvar": "expvar", "flag": "flag", "fmt": "fmt",
	"io": "io", "log": "log", "slog": "log/slog", "net": "net", "netip": "net/netip",
	"http": "net/http", "os": "os", "sync": "sync", "time": "time", "strings": "strings",
}

// root returns the repository root: two levels above this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !bytes.HasPrefix(mod, []byte("module "+module+"\n")) {
		t.Fatalf("%s is not the root of %s: %v", dir, module, err)
	}
	return dir
}

// markdownFiles lists README.md, CHANGELOG.md and every .md file under docs/.
func markdownFiles(t *testing.T, dir string) []string {
	t.Helper()
	files := []string{"README.md", "CHANGELOG.md"}
	err := filepath.WalkDir(filepath.Join(dir, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// blocks returns the ```go blocks of one Markdown text.
func blocks(file, text string) []block {
	var out []block
	lines := strings.Split(text, "\n")
	lastMarker, inFence := "", false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if inFence {
			if fenceClose.MatchString(l) {
				inFence = false
			}
			continue
		}
		if m := fenceOpen.FindStringSubmatch(l); m != nil {
			b := block{file: file, line: i + 1, marker: lastMarker}
			var code []string
			for i++; i < len(lines) && !fenceClose.MatchString(lines[i]); i++ {
				code = append(code, strings.TrimPrefix(lines[i], m[1]))
			}
			b.code = strings.Join(code, "\n") + "\n"
			out = append(out, b)
			lastMarker = ""
			continue
		}
		if fenceAny.MatchString(l) {
			inFence, lastMarker = true, ""
			continue
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		lastMarker = ""
		if m := markerLine.FindStringSubmatch(l); m != nil {
			lastMarker = m[1]
		}
	}
	return out
}

// source turns a block into a Go file to check, or says why it is skipped.
// soft reports whether unused variables and imports are forgiven.
func source(b block) (src string, soft bool, skip string, err error) {
	switch {
	case strings.HasPrefix(b.marker, "not compiled:"):
		reason := strings.TrimSpace(strings.TrimPrefix(b.marker, "not compiled:"))
		if reason == "" {
			return "", false, "", fmt.Errorf("a not-compiled marker needs a reason")
		}
		return "", false, reason, nil
	case strings.HasPrefix(b.marker, "compiled as a function body:"):
		params := strings.TrimSpace(strings.TrimPrefix(b.marker, "compiled as a function body:"))
		var imports []string
		seen := map[string]bool{}
		// The parameters' types name packages too (f *front.Front[[]byte]).
		for _, m := range pkgRef.FindAllStringSubmatch(params+"\n"+b.code, -1) {
			if p, ok := bodyImports[m[1]]; ok && !seen[p] {
				seen[p] = true
				imports = append(imports, strconv.Quote(p))
			}
		}
		sort.Strings(imports)
		var s strings.Builder
		s.WriteString("package snippet\n\nimport (\n")
		for _, p := range imports {
			s.WriteString("\t" + p + "\n")
		}
		fmt.Fprintf(&s, ")\n\nfunc _(%s) {\n%s}\n", params, b.code)
		return s.String(), true, "", nil
	}
	if startsWithPackage(b.code) {
		return b.code, false, "", nil
	}
	return "", false, "", fmt.Errorf("neither a complete file (package clause) nor marked " +
		"<!-- compiled as a function body: PARAMS --> or <!-- not compiled: REASON --> (see package doc)")
}

func startsWithPackage(code string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", code, parser.PackageClauseOnly)
	return err == nil && f.Name != nil
}

// exportData asks the go command for the export data of paths and their
// dependencies, built from the workspace as it is.
func exportData(t *testing.T, dir string, paths []string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-e", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
		// Snippets may import the lab or example modules: use the workspace
		// even where the caller turned it off.
		cmd.Env = append(cmd.Env, "GOWORK="+filepath.Join(dir, "go.work"))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	if stderr.Len() > 0 {
		t.Logf("go list -export: %s", stderr.String())
	}
	return exports
}

// TestSnippetsCompile protects the README and the guides from Go that no
// longer compiles: every ```go block is a complete file or marked as a
// function body, and type-checks against today's packages, unless marked
// as not compiled with a reason.
func TestSnippetsCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH; the check needs `go list -export` for the imported packages")
	}
	dir := root(t)
	type unit struct {
		b    block
		src  string
		soft bool
		file *ast.File
	}
	var units []unit
	fset := token.NewFileSet()
	paths := map[string]bool{}
	for _, f := range markdownFiles(t, dir) {
		text, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks(f, string(text)) {
			src, soft, skip, err := source(b)
			switch {
			case err != nil:
				t.Errorf("%s:%d: %v", b.file, b.line, err)
				continue
			case skip != "":
				t.Logf("%s:%d: not compiled: %s", b.file, b.line, skip)
				continue
			}
			af, err := parser.ParseFile(fset, fmt.Sprintf("%s:%d", b.file, b.line), src, parser.SkipObjectResolution)
			if err != nil {
				t.Errorf("%s:%d: does not parse: %v\n%s", b.file, b.line, err, src)
				continue
			}
			for _, imp := range af.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				paths[p] = true
			}
			units = append(units, unit{b, src, soft, af})
		}
	}
	if len(units) == 0 {
		t.Fatal("no Go snippets found: the extraction is broken")
	}
	var list []string
	for p := range paths {
		list = append(list, p)
	}
	sort.Strings(list)
	exports := exportData(t, dir, list)
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %q (not in the workspace, or it does not build)", path)
		}
		return os.Open(file)
	})
	for _, u := range units {
		var errs []string
		conf := types.Config{Importer: imp, Error: func(err error) {
			if te, ok := err.(types.Error); ok && te.Soft && u.soft {
				return // an unused variable or import in a function-body snippet
			}
			errs = append(errs, err.Error())
		}}
		_, _ = conf.Check("snippet", fset, []*ast.File{u.file}, nil)
		if len(errs) > 0 {
			t.Errorf("%s:%d: does not compile:\n\t%s\n--- checked as:\n%s", u.b.file, u.b.line,
				strings.Join(errs, "\n\t"), u.src)
		}
	}
	t.Logf("%d snippets type-checked", len(units))
}

// TestBlocks protects the extraction: markers bind to the next fence only,
// indented fences are read, and other languages are left alone.
func TestBlocks(t *testing.T) {
	md := "text\n<!-- not compiled: sketch -->\n\n```go\nx\n```\n\n```sh\n```go\n```\n" +
		"<!-- compiled as a function body: a int -->\nprose\n```go\ny\n```\n" +
		"- item\n\n  ```go\n  package main\n  ```\n"
	got := blocks("f.md", md)
	if len(got) != 3 {
		t.Fatalf("got %d blocks, want 3: %+v", len(got), got)
	}
	if got[0].marker != "not compiled: sketch" || got[0].code != "x\n" || got[0].line != 4 {
		t.Errorf("first block %+v", got[0])
	}
	if got[1].marker != "" || got[1].code != "y\n" {
		t.Errorf("a marker separated from its fence by prose must not bind: %+v", got[1])
	}
	if got[2].code != "package main\n" {
		t.Errorf("indented block %+v", got[2])
	}
	if _, _, _, err := source(got[1]); err == nil {
		t.Error("an unmarked fragment must be reported")
	}
	if _, _, _, err := source(block{marker: "not compiled:"}); err == nil {
		t.Error("a not-compiled marker without a reason must be reported")
	}
	src, soft, _, err := source(block{code: "q, _ := fifo.New[int](fifo.Config{}, nil)\n",
		marker: "compiled as a function body: now aqm.Time"})
	if err != nil || !soft || !strings.Contains(src, `"github.com/aqmkit/aqmkit/fifo"`) ||
		!strings.Contains(src, "func _(now aqm.Time) {") {
		t.Errorf("function body wrapped as\n%s (soft %v, err %v)", src, soft, err)
	}
}

// slug is GitHub's anchor for a heading.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors lists the heading anchors of a Markdown text.
func anchors(text string) map[string]bool {
	out, seen, inFence := map[string]bool{}, map[string]int{}, false
	for _, l := range strings.Split(text, "\n") {
		if inFence && fenceClose.MatchString(l) || !inFence && fenceAny.MatchString(l) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		s := slug(strings.TrimLeft(l, "#"))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestLinks protects readers from dead relative links: every link in the
// README, the CHANGELOG and docs/ names a file that exists, and a heading
// that exists where it names one.
func TestLinks(t *testing.T) {
	dir := root(t)
	n := 0
	for _, f := range markdownFiles(t, dir) {
		text, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		inFence := false
		for i, l := range strings.Split(string(text), "\n") {
			if inFence && fenceClose.MatchString(l) || !inFence && fenceAny.MatchString(l) {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				path, anchor, _ := strings.Cut(target, "#")
				full := filepath.Join(dir, filepath.Dir(f), filepath.FromSlash(path))
				if path == "" {
					full = filepath.Join(dir, f)
				}
				body, err := os.ReadFile(full)
				if err != nil {
					if st, serr := os.Stat(full); serr == nil && st.IsDir() {
						continue
					}
					t.Errorf("%s:%d: link %s: no such file", f, i+1, target)
					continue
				}
				if anchor != "" && strings.HasSuffix(full, ".md") && !anchors(string(body))[anchor] {
					t.Errorf("%s:%d: link %s: no such heading", f, i+1, target)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no links found: the extraction is broken")
	}
}

// TestREADMEShape protects the README's promises to a first-time reader: at
// most 250 lines, opening with the two set-up commands, and a section on
// choosing a queue.
func TestREADMEShape(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	if len(lines) > 250 {
		t.Errorf("README.md has %d lines, want at most 250", len(lines))
	}
	var first []string
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			for _, c := range lines[i+1:] {
				if strings.HasPrefix(c, "```") {
					break
				}
				first = append(first, strings.Fields(c)...)
			}
			break
		}
	}
	cmds := strings.Join(first, " ")
	for _, want := range []string{"go run ./sim/cmd/aqmsim", "go test " + module + "/..."} {
		if !strings.Contains(cmds, want) {
			t.Errorf("README.md's first block lacks %q: %q", want, cmds)
		}
	}
	if n := strings.Count(cmds, "go run") + strings.Count(cmds, "go test"); n != 2 {
		t.Errorf("README.md's first block has %d commands, want the two set-up commands", n)
	}
	if !strings.Contains(string(text), "\n## Choosing a queue\n") {
		t.Error(`README.md lacks the section "## Choosing a queue"`)
	}
}

// notebook matches words of a lab notebook that a guide, a result or the
// README must not use: they speak of how the work was done, not of what a
// reader can use.
var notebook = regexp.MustCompile(`(?i)another lab'?s session|\bsessions?\b|\bas before\b|\bnothing yet\b`)

// TestNoNotebookWords protects the README, the guides and the results from
// notebook lines; design notes, which record how a decision was reached,
// are exempt.
func TestNoNotebookWords(t *testing.T) {
	dir := root(t)
	for _, f := range markdownFiles(t, dir) {
		if f == "CHANGELOG.md" || strings.HasPrefix(f, "docs/design/") {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(text), "\n") {
			if m := notebook.FindString(l); m != "" {
				t.Errorf("%s:%d: %q: say what the reader can use, not how the work went", f, i+1, m)
			}
		}
	}
}
