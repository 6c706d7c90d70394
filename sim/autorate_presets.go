package sim

import (
	"time"

	"github.com/aqmkit/aqmkit/autorate"
)

// The settings the guide recommends per kind of link. A downlink with long
// gaps in delivery (T-Mobile's LTE downlink) keeps arPassive.
const (
	// arCellular is for cellular links that fade deep and come back (LTE
	// uplinks, 5G while driving): arFast with bufferbloat at 3 delayed
	// samples of 6 (cake-autorate's default) and Recovery 0.5. With
	// Recovery 1 (arRecovery) the Verizon LTE uplink's ping p99 is 987 ms,
	// over cake-autorate's 951; with this, 892 ms. Three delayed samples
	// of 6 instead of two keep the Sprint drive above cake-autorate's
	// utilisation (93.3 % against 92.3).
	arCellular autorateVariant = iota + arCakeAutorate + 1
	// arStarlink is for Starlink: arPassive with thresholds of 8, 25 and
	// 50 ms on the flows' RTT rise and increases of up to 15 % per
	// achieved-rate report, so that the rate climbs back within the 15 s
	// between reconfigurations and cuts a little earlier than the
	// defaults.
	arStarlink
	// arMmwave is for links that stop delivering for whole seconds (5G
	// mmWave while driving): arFast with bufferbloat at 3 delayed samples
	// of 6, without cuts to the achieved rate (near zero during an
	// outage) and without Recovery. On the Verizon mmWave drive this keeps
	// the ping p99 at cake-autorate's (715 ms against 714) at 62 %
	// utilisation against its 37 %; arCellular carries 77 % at 792 ms.
	// There Recovery is what raises the p99 (761–767 ms with it, 716–719
	// without) and the achieved-rate cuts cost utilisation (55 % against
	// 61 %).
	arMmwave
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
	case arMmwave:
		c = autorateConfig(t, arFast)
		c.DetectionThreshold = 3
		c.AchievedCut = 0
	case arStarlink:
		c = autorateConfig(t, arPassive)
		c.FullIncreaseBelow, c.DelayThreshold, c.FullCutAbove = 8*time.Millisecond, 25*time.Millisecond, 50*time.Millisecond
		c.MaxIncrease = 0.15
	}
	return c
}
