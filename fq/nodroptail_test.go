package fq_test

import (
	"errors"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fq"
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

// TestValidateNoDropTail protects the rules that apply each flow AQM's
// limits to the queue's shared limits, which one flow may fill: CoDel's
// three packets and three MTUs, COBALT's two packets and two full-size
// packets, PIE's four packets, four mean packets and rate-estimator
// threshold. Each case is refused naming its field, and the boundary value
// is accepted.
func TestValidateNoDropTail(t *testing.T) {
	for _, c := range []struct {
		cfg   interface{ Validate() error }
		field string
	}{
		{fq.CoDelConfig{LimitPackets: 2}, "LimitPackets"},
		{fq.CoDelConfig{LimitPackets: 3}, ""},
		{fq.CoDelConfig{MemoryLimitBytes: 3*1514 - 1}, "MemoryLimitBytes"},
		{fq.CoDelConfig{MemoryLimitBytes: 3 * 1514}, ""},
		{fq.CoDelConfig{Control: codel.Control{MTUBytes: 1 << 20}}, ""}, // 32 MiB hold it
		{fq.CoDelConfig{MemoryLimitBytes: 3<<20 - 1, Control: codel.Control{MTUBytes: 1 << 20}}, "MemoryLimitBytes"},
		{fq.CobaltConfig{LimitPackets: 1}, "LimitPackets"},
		{fq.CobaltConfig{LimitPackets: 2}, ""},
		{fq.CobaltConfig{MemoryLimitBytes: 2*aqm.FullPacketBytes - 1}, "MemoryLimitBytes"},
		{fq.CobaltConfig{MemoryLimitBytes: 2 * aqm.FullPacketBytes}, ""},
		{fq.CobaltConfig{Control: cobalt.Control{BlueIncrement: 0x1p-33}}, "BlueIncrement"},
		{fq.PIEConfig{LimitPackets: 3}, "LimitPackets"},
		{fq.PIEConfig{LimitPackets: 4}, ""},
		{fq.PIEConfig{MemoryLimitBytes: 4*1500 - 1}, "MemoryLimitBytes"},
		{fq.PIEConfig{MemoryLimitBytes: 4 * 1500}, ""},
		{fq.PIEConfig{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1500}}, "DequeueThresholdBytes"},
		{fq.PIEConfig{MemoryLimitBytes: 16384 + 2*1500 - 1, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"},
		{fq.PIEConfig{MemoryLimitBytes: 16384 + 2*1500, Control: pie.Control{RateEstimator: true}}, ""},
		{fq.PIEConfig{Control: pie.Control{RateEstimator: true, MeanPacketBytes: 10}}, ""}, // 10240 packets of 10 bytes hold the threshold
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
