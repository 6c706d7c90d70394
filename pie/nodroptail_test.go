package pie_test

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/pie"
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
// PIE never signals: fewer than four packets or four mean packets of bytes
// (the "two packets" safeguard), and with the rate estimator a threshold
// no larger than a mean packet or a buffer that never holds it. Each case
// is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	for _, c := range []struct {
		cfg   pie.Config
		field string
	}{
		{pie.Config{LimitPackets: 3}, "LimitPackets"},
		{pie.Config{LimitPackets: 4}, ""},
		{pie.Config{LimitBytes: 4*1500 - 1}, "LimitBytes"},
		{pie.Config{LimitBytes: 4 * 1500}, ""},
		{pie.Config{LimitBytes: 400, Control: pie.Control{MeanPacketBytes: 100}}, ""},
		{pie.Config{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1500}}, "DequeueThresholdBytes"},
		{pie.Config{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1501}}, ""},
		{pie.Config{LimitBytes: 16384 + 2*1500 - 1, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"},
		{pie.Config{LimitBytes: 16384 + 2*1500, Control: pie.Control{RateEstimator: true}}, ""},
		{pie.Config{LimitPackets: 12, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"}, // 18000 < 19384
		{pie.Config{LimitPackets: 13, Control: pie.Control{RateEstimator: true}}, ""},
		{pie.Config{LimitPackets: 12, Control: pie.Control{DequeueThresholdBytes: 100000}}, ""}, // the estimator is off
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
