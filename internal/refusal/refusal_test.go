package refusal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
)

// recorder is a testing.TB that records Errorf calls instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// fakeConfig refuses itself naming the fields it lists.
type fakeConfig struct{ fields []string }

func (c fakeConfig) Validate() error {
	var errs []error
	for _, f := range c.fields {
		errs = append(errs, &aqm.ConfigError{Pkg: "fake", Field: f, Value: 0, Rule: "is bad"})
	}
	return errors.Join(errs...)
}

// TestCheckFails protects the helper's power to fail: a refusal
// where acceptance was wanted, an acceptance where a refusal was, the wrong
// field, and one field too many are each reported, and right cases are not.
func TestCheckFails(t *testing.T) {
	r := &recorder{TB: t}
	Check(r, []Case{
		Accepts(fakeConfig{}),
		Refuses(fakeConfig{[]string{"A"}}, "A"),
	})
	if len(r.errs) != 0 {
		t.Fatalf("right cases reported: %v", r.errs)
	}
	Check(r, []Case{
		Accepts(fakeConfig{[]string{"A"}}),
		Refuses(fakeConfig{}, "A"),
		Refuses(fakeConfig{[]string{"B"}}, "A"),
		Refuses(fakeConfig{[]string{"A", "B"}}, "A"),
	})
	if len(r.errs) != 4 {
		t.Fatalf("reported %d of 4 wrong cases: %v", len(r.errs), r.errs)
	}
}
