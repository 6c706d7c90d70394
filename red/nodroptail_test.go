package red_test

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/red"
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

// TestValidateNoDropTail protects the byte-mode rule that refuses a byte
// limit below two mean-size packets (given, or derived as 2·MaxThreshold),
// which refuses most packets before RED sees a queue. Each case is refused
// naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	for _, c := range []struct {
		cfg   red.Config
		field string
	}{
		{red.Config{ByteMode: true, MinThreshold: 300, MaxThreshold: 900, LimitBytes: 1999}, "LimitBytes"},
		{red.Config{ByteMode: true, MinThreshold: 300, MaxThreshold: 900, LimitBytes: 2000}, ""},
		{red.Config{ByteMode: true, MinThreshold: 300, MaxThreshold: 999}, "MaxThreshold"},
		{red.Config{ByteMode: true, MinThreshold: 300, MaxThreshold: 1000}, ""},
		{red.Config{MinThreshold: 1, MaxThreshold: 3, LimitBytes: 10}, ""}, // packet mode: no such rule
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
