package dualq_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/dualq"
)

// TestReconfigureUnderTraffic protects Reconfigure with the kit's own
// checks: changing limits, scheduler and classification every few
// operations of random traces loses, duplicates and reorders nothing.
func TestReconfigureUnderTraffic(t *testing.T) {
	cycle := []dualq.Config{
		{LimitPackets: 64, LimitBytes: 64 * 1500},
		{LimitPackets: 8, LimitBytes: 6000, Alpha: 100, Beta: 100},
		{LimitPackets: 32, LimitBytes: 32 * 1500, TimeShiftedFIFO: true},
		{LimitPackets: 64, LimitBytes: 64 * 1500, Ramp: true, ClassicProtectionPercent: 50},
	}
	f := factory(cycle[0], 64, 64*1500)
	f.Reconfigure = func(q aqm.Queue[uint64], i int) error {
		return q.(*dualq.Queue[uint64]).Reconfigure(cycle[i%len(cycle)])
	}
	aqmtest.Run(t, f)
}
