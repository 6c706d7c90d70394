package fq_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/internal/refusal"

	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/internal/frame"
	"github.com/aqmkit/aqmkit/pie"
)

// TestValidateNoDropTail protects the rules that apply each flow AQM's
// limits to the queue's shared limits, which one flow may fill: CoDel's
// three packets and three MTUs, COBALT's two packets and two full-size
// packets, PIE's four packets, four mean packets and rate-estimator
// threshold. Each case is refused naming its field, and the boundary value
// is accepted.
func TestValidateNoDropTail(t *testing.T) {
	refusal.Check(t, []refusal.Case{
		refusal.Refuses(fq.CoDelConfig{LimitPackets: 2}, "LimitPackets"),
		refusal.Accepts(fq.CoDelConfig{LimitPackets: 3}),
		refusal.Refuses(fq.CoDelConfig{MemoryLimitBytes: 3*1514 - 1}, "MemoryLimitBytes"),
		refusal.Accepts(fq.CoDelConfig{MemoryLimitBytes: 3 * 1514}),
		refusal.Accepts(fq.CoDelConfig{Control: codel.Control{MTUBytes: 1 << 20}}), // 32 MiB hold it
		refusal.Refuses(fq.CoDelConfig{MemoryLimitBytes: 3<<20 - 1, Control: codel.Control{MTUBytes: 1 << 20}}, "MemoryLimitBytes"),
		refusal.Refuses(fq.CobaltConfig{LimitPackets: 1}, "LimitPackets"),
		refusal.Accepts(fq.CobaltConfig{LimitPackets: 2}),
		refusal.Refuses(fq.CobaltConfig{MemoryLimitBytes: 2*frame.FullBytes - 1}, "MemoryLimitBytes"),
		refusal.Accepts(fq.CobaltConfig{MemoryLimitBytes: 2 * frame.FullBytes}),
		refusal.Refuses(fq.CobaltConfig{Control: cobalt.Control{BlueIncrement: 0x1p-33}}, "BlueIncrement"),
		refusal.Refuses(fq.PIEConfig{LimitPackets: 3}, "LimitPackets"),
		refusal.Accepts(fq.PIEConfig{LimitPackets: 4}),
		refusal.Refuses(fq.PIEConfig{MemoryLimitBytes: 4*1500 - 1}, "MemoryLimitBytes"),
		refusal.Accepts(fq.PIEConfig{MemoryLimitBytes: 4 * 1500}),
		refusal.Refuses(fq.PIEConfig{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1500}}, "DequeueThresholdBytes"),
		refusal.Refuses(fq.PIEConfig{MemoryLimitBytes: 16384 + 2*1500 - 1, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"),
		refusal.Accepts(fq.PIEConfig{MemoryLimitBytes: 16384 + 2*1500, Control: pie.Control{RateEstimator: true}}),
		refusal.Accepts(fq.PIEConfig{Control: pie.Control{RateEstimator: true, MeanPacketBytes: 10}}), // 10240 packets of 10 bytes hold the threshold
	})
}
