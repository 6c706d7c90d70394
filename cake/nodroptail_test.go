package cake_test

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
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
// CAKE never signals: it never drops a flow's last packet, so one packet
// of limit, or less than two MTUs of bytes, leaves only the pruner. Each
// case is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	for _, c := range []struct {
		cfg   cake.Config
		field string
	}{
		{cake.Config{LimitPackets: 1}, "LimitPackets"},
		{cake.Config{LimitPackets: 2}, ""},
		{cake.Config{MemoryLimitBytes: 2*cake.MTU - 1}, "MemoryLimitBytes"},
		{cake.Config{MemoryLimitBytes: 2 * cake.MTU}, ""},
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
