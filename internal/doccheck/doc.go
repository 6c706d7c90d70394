// Package doccheck holds the tests that keep the Go in the README and in
// docs/ compiling, their relative links pointing at files and headings that
// exist, the README within its shape (at most 250 lines, the two set-up
// commands first, a section on choosing a queue), and the README, the guides
// and the results free of notebook words ("session", "as before").
//
// Every ```go block in README.md and docs/**/*.md is type-checked against
// the packages of the workspace as they are today:
//
//   - A block that starts with a package clause (comments may come first) is
//     a complete file and must compile as it stands.
//   - A block preceded by the line
//     <!-- compiled as a function body: PARAMS --> is a list of statements;
//     the test wraps it in a function whose parameters are PARAMS, a Go
//     parameter list naming what the snippet uses but does not declare
//     (for example "ctx context.Context, rate aqm.Rate"). The packages of
//     aqmkit and the common standard ones it names are imported for it, and
//     variables and imports it leaves unused are forgiven.
//   - A block preceded by <!-- not compiled: REASON --> is skipped; the
//     reason is required, and says why the block is deliberately partial.
//
// Any other block fails the test, and so does a block that does not compile.
// The marker must be the last non-blank line before the opening fence.
//
// The test needs the go command (it asks `go list -export` for the export
// data of the imported packages) and skips when it is not on PATH.
package doccheck
