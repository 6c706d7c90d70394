package sfq

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
)

// TestSFQReconfigureUnderTraffic protects Reconfigure with the kit's own
// checks: changing limits, divisor, quantum and perturbation every few
// operations of random traces loses, duplicates and reorders nothing.
func TestSFQReconfigureUnderTraffic(t *testing.T) {
	cycle := []Config{
		{LimitPackets: 64},
		{LimitPackets: 8, DepthPackets: 3, Divisor: 4, HeadDrop: true},
		{LimitPackets: 32, QuantumBytes: 300, PerturbPeriod: time.Millisecond},
		{LimitPackets: 64, LimitBytes: 20000, Divisor: 16},
	}
	f := sfqFactory(cycle[0])
	f.LimitPackets, f.LimitBytes = 64, 0
	f.Reconfigure = func(q aqm.Queue[uint64], i int) error {
		return q.(*Queue[uint64]).Reconfigure(cycle[i%len(cycle)])
	}
	aqmtest.Run(t, f)
}
