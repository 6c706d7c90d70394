// Package cfgerr lets a configuration that embeds another package's
// settings report their errors under its own name: fq's CoDelConfig embeds
// codel.Control, whose Validate says "codel: Target ...", and fq reports
// "fq: Target ...". The rules stay in the package that owns the fields.
package cfgerr

import (
	"errors"

	"github.com/aqmkit/aqmkit/aqm"
)

// Relabel returns the errors joined in err, in order, each
// [*aqm.ConfigError] copied with Pkg set to pkg (the original is not
// changed); errors that are not ConfigErrors are kept as they are, and
// joined errors within err are flattened. A nil err gives nil.
func Relabel(pkg string, err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Relabel(pkg, e)...)
		}
		return out
	}
	var ce *aqm.ConfigError
	if errors.As(err, &ce) {
		c := *ce
		c.Pkg = pkg
		return []error{&c}
	}
	return []error{err}
}
