package red

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
)

// TestReconfigureUnderTraffic protects Reconfigure with the kit's own
// checks: switching variants, modes and limits every few operations of
// random traces loses, duplicates and reorders nothing.
func TestReconfigureUnderTraffic(t *testing.T) {
	cycle := []Config{
		{MinThreshold: 5, MaxThreshold: 15, LimitPackets: 50},
		{Gentle: true, MinThreshold: 2, MaxThreshold: 6, LimitPackets: 8},
		{Gentle: true, Adaptive: true, MinThreshold: 5, MaxThreshold: 15, LimitPackets: 64, AdaptInterval: 10 * time.Millisecond},
		{ByteMode: true, MinThreshold: 3000, MaxThreshold: 9000, LimitPackets: 64, LimitBytes: 40000},
		{Wait: true, Gentle: true, MinThreshold: 2, MaxThreshold: 6, LimitPackets: 16, MaxP: 0.5},
		{Wait: true, ByteMode: true, MinThreshold: 3000, MaxThreshold: 9000, LimitPackets: 64, LimitBytes: 40000},
	}
	f := factory(t, cycle[0])
	f.LimitPackets, f.LimitBytes = 64, 0 // the largest packet limit in the cycle; byte limits vary
	f.Reconfigure = func(q aqm.Queue[aqmtest.Payload], i int) error {
		return q.(*Queue[aqmtest.Payload]).Reconfigure(cycle[i%len(cycle)])
	}
	aqmtest.Run(t, f)
}
