package sim

import "github.com/aqmkit/aqmkit/autorate"

// The settings the guide recommends per kind of link. A downlink with long
// gaps in delivery (T-Mobile's LTE downlink) keeps arPassive.
const (
	// arCellular is for cellular links that fade deep and come back (LTE
	// uplinks, 5G while driving): arFast with bufferbloat at 3 delayed
	// samples of 6 (cake-autorate's default) and Recovery 0.5. Two
	// delayed samples cut on single late replies of a fading radio, and
	// Recovery 1 returns all the way into a fade that has not ended: the
	// Verizon LTE uplink's p99 is then 987 ms against 892 ms.
	arCellular autorateVariant = iota + arCakeAutorate + 1
	// arStarlink is for Starlink: arPassive with increases of up to 8 %
	// per achieved-rate report, so that the rate climbs back within the
	// 15 s between the satellite hand-overs.
	arStarlink
)

// linkPreset is the configuration of the recommended variant v for a
// trace; autorateConfig calls it for arCellular and arStarlink.
func linkPreset(t *Trace, v autorateVariant) autorate.Config {
	var c autorate.Config
	switch v {
	case arCellular:
		c = autorateConfig(t, arFast)
		c.DetectionThreshold = 3
		c.Recovery = 0.5
	case arStarlink:
		c = autorateConfig(t, arPassive)
		c.MaxIncrease = 0.08
	}
	return c
}
