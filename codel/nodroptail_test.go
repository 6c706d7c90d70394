package codel_test

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/codel"
)

// refusedFields returns the fields err names.
func refusedFields(err error) []string {
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

// TestValidateNoDropTail protects the rules that refuse limits with which
// CoDel never signals: fewer than three packets, or fewer bytes than three
// MTUs, leave no more than MTUBytes behind the packet leaving. Each case
// is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	for _, c := range []struct {
		cfg   codel.Config
		field string // "" : accepted
	}{
		{codel.Config{LimitPackets: 1}, "LimitPackets"},
		{codel.Config{LimitPackets: 2}, "LimitPackets"},
		{codel.Config{LimitPackets: 3}, ""},
		{codel.Config{LimitBytes: 3*codel.DefaultMTUBytes - 1}, "LimitBytes"},
		{codel.Config{LimitBytes: 3 * codel.DefaultMTUBytes}, ""},
		{codel.Config{LimitBytes: 1 << 21, Control: codel.Control{MTUBytes: 1 << 20}}, "LimitBytes"},
		{codel.Config{LimitBytes: 1500, Control: codel.Control{MTUBytes: 500}}, ""},
	} {
		err := c.cfg.Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("%+v: %v; want accepted", c.cfg, err)
			}
			continue
		}
		if f := refusedFields(err); len(f) != 1 || f[0] != c.field || !errors.Is(err, aqm.ErrInvalidConfig) {
			t.Errorf("%+v: fields %v (%v); want %s", c.cfg, f, err, c.field)
		}
	}
}
