package pie_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/internal/refusal"

	"github.com/aqmkit/aqmkit/pie"
)

// TestValidateNoDropTail protects the rules that refuse limits with which
// PIE never signals: fewer than four packets or four mean packets of bytes
// (the "two packets" safeguard), and with the rate estimator a threshold
// no larger than a mean packet or a buffer that never holds it. Each case
// is refused naming its field, and the boundary value is accepted.
func TestValidateNoDropTail(t *testing.T) {
	refusal.Check(t, []refusal.Case{
		refusal.Refuses(pie.Config{LimitPackets: 3}, "LimitPackets"),
		refusal.Accepts(pie.Config{LimitPackets: 4}),
		refusal.Refuses(pie.Config{LimitBytes: 4*1500 - 1}, "LimitBytes"),
		refusal.Accepts(pie.Config{LimitBytes: 4 * 1500}),
		refusal.Accepts(pie.Config{LimitBytes: 400, Control: pie.Control{MeanPacketBytes: 100}}),
		refusal.Refuses(pie.Config{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1500}}, "DequeueThresholdBytes"),
		refusal.Accepts(pie.Config{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1501}}),
		refusal.Refuses(pie.Config{LimitBytes: 16384 + 2*1500 - 1, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"),
		refusal.Accepts(pie.Config{LimitBytes: 16384 + 2*1500, Control: pie.Control{RateEstimator: true}}),
		refusal.Refuses(pie.Config{LimitPackets: 12, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"), // 18000 < 19384
		refusal.Accepts(pie.Config{LimitPackets: 13, Control: pie.Control{RateEstimator: true}}),
		refusal.Accepts(pie.Config{LimitPackets: 12, Control: pie.Control{DequeueThresholdBytes: 100000}}), // the estimator is off
	})
}
