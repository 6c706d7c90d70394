package cobalt_test

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
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
// COBALT never signals (under two packets, under two full-size packets of
// bytes) and a BLUE increment that rounds to zero on the 2^32 scale. Each
// case is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	for _, c := range []struct {
		cfg   cobalt.Config
		field string
	}{
		{cobalt.Config{LimitPackets: 1}, "LimitPackets"},
		{cobalt.Config{LimitPackets: 2}, ""},
		{cobalt.Config{LimitBytes: 2*aqm.FullPacketBytes - 1}, "LimitBytes"},
		{cobalt.Config{LimitBytes: 2 * aqm.FullPacketBytes}, ""},
		{cobalt.Config{Control: cobalt.Control{BlueIncrement: 0x1p-33}}, "BlueIncrement"},
		{cobalt.Config{Control: cobalt.Control{BlueIncrement: 0x1p-32}}, ""},
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
