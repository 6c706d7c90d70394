//go:build tools

// Package apicheck pins the version of apidiff that scripts/apicheck runs.
// It is a module of its own, so that the library's go.mod stays free of
// tool dependencies.
package apicheck

import _ "golang.org/x/exp/cmd/apidiff"
