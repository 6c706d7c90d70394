package bench

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/red"
)

// redConfig sets RED's thresholds for a scenario: above the 100-packet
// standing queue for "idle" and "standing" (no early drops), around it for
// "congested" (min 50, max 150: the average settles near 100, p_b ≈ max_p/2,
// so the signal path runs). w_q = 0.002 (Floyd and Jacobson's value) so the
// average reaches the standing queue within the warm-up.
func redConfig(sc Scenario, gentle, adaptive bool) red.Config {
	c := red.Config{MinThreshold: 150, MaxThreshold: 450, Weight: 0.002, LimitPackets: 10000,
		Gentle: gentle, Adaptive: adaptive, Seed: 1}
	if sc.Name == "congested" {
		c.MinThreshold, c.MaxThreshold = 50, 150
	}
	return c
}

func init() {
	for _, v := range []struct {
		name             string
		gentle, adaptive bool
	}{{"red", false, false}, {"gentle-red", true, false}, {"ared", true, true}} {
		registerPacket(PacketAlgo{Name: v.name, New: func(sc Scenario) (aqm.Queue[uint64], error) {
			return red.New[uint64](redConfig(sc, v.gentle, v.adaptive), nil)
		}})
	}
}
