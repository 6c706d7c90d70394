// Package refusal checks that a configuration's Validate refuses exactly
// the field a test names, with an error wrapping [aqm.ErrInvalidConfig].
package refusal

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
)

// A Case is one case for [Check], made by [Refuses] or [Accepts].
type Case struct {
	Config interface{ Validate() error }
	Field  string // "" : Validate must accept Config
}

// Refuses is the case of a configuration whose Validate must refuse it
// naming exactly field.
func Refuses(cfg interface{ Validate() error }, field string) Case {
	return Case{Config: cfg, Field: field}
}

// Accepts is the case of a configuration whose Validate must accept it.
func Accepts(cfg interface{ Validate() error }) Case { return Case{Config: cfg} }

// Check runs Validate on each case's configuration and reports a
// case that is refused when it should be accepted, accepted when it should
// be refused, or refused for any other set of fields than the one named, or
// with an error that does not wrap [aqm.ErrInvalidConfig].
func Check(t testing.TB, cases []Case) {
	t.Helper()
	for _, c := range cases {
		err := c.Config.Validate()
		if c.Field == "" {
			if err != nil {
				t.Errorf("%T%+v: %v; want accepted", c.Config, c.Config, err)
			}
			continue
		}
		if f := Fields(err); len(f) != 1 || f[0] != c.Field || !errors.Is(err, aqm.ErrInvalidConfig) {
			t.Errorf("%T%+v: fields %v (%v); want %s", c.Config, c.Config, f, err, c.Field)
		}
	}
}

// Fields returns the fields that err's [*aqm.ConfigError]s name, in
// order, looking through errors.Join lists.
func Fields(err error) []string {
	var out []string
	list := []error{err}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		list = u.Unwrap()
	}
	for _, e := range list {
		var ce *aqm.ConfigError
		if errors.As(e, &ce) {
			out = append(out, ce.Field)
		}
	}
	return out
}
