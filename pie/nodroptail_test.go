package pie_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm/aqmtest"

	"github.com/aqmkit/aqmkit/pie"
)

// TestValidateNoDropTail protects the rules that refuse limits with which
// PIE never signals: fewer than four packets or four mean packets of bytes
// (the "two packets" safeguard), and with the rate estimator a threshold
// no larger than a mean packet or a buffer that never holds it. Each case
// is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	aqmtest.CheckRefusals(t, []aqmtest.Refusal{
		aqmtest.Refuses(pie.Config{LimitPackets: 3}, "LimitPackets"),
		aqmtest.Accepts(pie.Config{LimitPackets: 4}),
		aqmtest.Refuses(pie.Config{LimitBytes: 4*1500 - 1}, "LimitBytes"),
		aqmtest.Accepts(pie.Config{LimitBytes: 4 * 1500}),
		aqmtest.Accepts(pie.Config{LimitBytes: 400, Control: pie.Control{MeanPacketBytes: 100}}),
		aqmtest.Refuses(pie.Config{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1500}}, "DequeueThresholdBytes"),
		aqmtest.Accepts(pie.Config{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1501}}),
		aqmtest.Refuses(pie.Config{LimitBytes: 16384 + 2*1500 - 1, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"),
		aqmtest.Accepts(pie.Config{LimitBytes: 16384 + 2*1500, Control: pie.Control{RateEstimator: true}}),
		aqmtest.Refuses(pie.Config{LimitPackets: 12, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"), // 18000 < 19384
		aqmtest.Accepts(pie.Config{LimitPackets: 13, Control: pie.Control{RateEstimator: true}}),
		aqmtest.Accepts(pie.Config{LimitPackets: 12, Control: pie.Control{DequeueThresholdBytes: 100000}}), // the estimator is off
	})
}
