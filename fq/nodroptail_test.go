package fq_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm/aqmtest"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cobalt"
	"github.com/aqmkit/aqmkit/codel"
	"github.com/aqmkit/aqmkit/fq"
	"github.com/aqmkit/aqmkit/pie"
)

// TestValidateNoDropTail protects the rules that apply each flow AQM's
// limits to the queue's shared limits, which one flow may fill: CoDel's
// three packets and three MTUs, COBALT's two packets and two full-size
// packets, PIE's four packets, four mean packets and rate-estimator
// threshold. Each case is refused naming its field, and the boundary value
// is accepted.
func TestValidateNoDropTail(t *testing.T) {
	aqmtest.CheckRefusals(t, []aqmtest.Refusal{
		aqmtest.Refuses(fq.CoDelConfig{LimitPackets: 2}, "LimitPackets"),
		aqmtest.Accepts(fq.CoDelConfig{LimitPackets: 3}),
		aqmtest.Refuses(fq.CoDelConfig{MemoryLimitBytes: 3*1514 - 1}, "MemoryLimitBytes"),
		aqmtest.Accepts(fq.CoDelConfig{MemoryLimitBytes: 3 * 1514}),
		aqmtest.Accepts(fq.CoDelConfig{Control: codel.Control{MTUBytes: 1 << 20}}), // 32 MiB hold it
		aqmtest.Refuses(fq.CoDelConfig{MemoryLimitBytes: 3<<20 - 1, Control: codel.Control{MTUBytes: 1 << 20}}, "MemoryLimitBytes"),
		aqmtest.Refuses(fq.CobaltConfig{LimitPackets: 1}, "LimitPackets"),
		aqmtest.Accepts(fq.CobaltConfig{LimitPackets: 2}),
		aqmtest.Refuses(fq.CobaltConfig{MemoryLimitBytes: 2*aqm.FullPacketBytes - 1}, "MemoryLimitBytes"),
		aqmtest.Accepts(fq.CobaltConfig{MemoryLimitBytes: 2 * aqm.FullPacketBytes}),
		aqmtest.Refuses(fq.CobaltConfig{Control: cobalt.Control{BlueIncrement: 0x1p-33}}, "BlueIncrement"),
		aqmtest.Refuses(fq.PIEConfig{LimitPackets: 3}, "LimitPackets"),
		aqmtest.Accepts(fq.PIEConfig{LimitPackets: 4}),
		aqmtest.Refuses(fq.PIEConfig{MemoryLimitBytes: 4*1500 - 1}, "MemoryLimitBytes"),
		aqmtest.Accepts(fq.PIEConfig{MemoryLimitBytes: 4 * 1500}),
		aqmtest.Refuses(fq.PIEConfig{Control: pie.Control{RateEstimator: true, DequeueThresholdBytes: 1500}}, "DequeueThresholdBytes"),
		aqmtest.Refuses(fq.PIEConfig{MemoryLimitBytes: 16384 + 2*1500 - 1, Control: pie.Control{RateEstimator: true}}, "DequeueThresholdBytes"),
		aqmtest.Accepts(fq.PIEConfig{MemoryLimitBytes: 16384 + 2*1500, Control: pie.Control{RateEstimator: true}}),
		aqmtest.Accepts(fq.PIEConfig{Control: pie.Control{RateEstimator: true, MeanPacketBytes: 10}}), // 10240 packets of 10 bytes hold the threshold
	})
}
