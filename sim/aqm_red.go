package sim

import (
	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/red"
)

// redConfig is the RED family's shared configuration: the link rate and
// packet size (e.RED.MeanPacketBytes, else the MSS) for the automatic
// weight and the idle decay, the scenario's thresholds (or automatic ones),
// e.RED's weight, max_p and Wait (or the defaults), ECN marking on, the
// scenario's buffer.
func redConfig(e Env) red.Config {
	mean := e.MSS
	if e.RED.MeanPacketBytes > 0 {
		mean = e.RED.MeanPacketBytes
	}
	return red.Config{
		MinThreshold:    e.REDMinThreshold,
		MaxThreshold:    e.REDMaxThreshold,
		MaxP:            e.RED.MaxP,
		Weight:          e.RED.Weight,
		Wait:            e.RED.Wait,
		LinkRate:        aqm.Rate(e.RateBps),
		MeanPacketBytes: mean,
		LimitPackets:    e.BufferPackets,
		Seed:            e.Seed,
	}
}

// newRED builds a RED-family queue, under a device FIFO if e.RED asks for
// one.
func newRED(e Env, c red.Config) (aqm.Queue[uint64], error) {
	q, err := red.New(c, e.OnDrop)
	if err != nil {
		return nil, err
	}
	if e.RED.DevicePackets > 0 {
		return newDeviceQueue(q, e.RED.DevicePackets), nil
	}
	return q, nil
}

func init() {
	register(AQM{Name: "red", Desc: "RED (Floyd & Jacobson 1993), automatic weight, ECN", New: func(e Env) (aqm.Queue[uint64], error) {
		return newRED(e, redConfig(e))
	}})
	register(AQM{Name: "gentle-red", Desc: "Gentle RED (ramp max_p→1 over [max_th, 2·max_th])", New: func(e Env) (aqm.Queue[uint64], error) {
		c := redConfig(e)
		c.Gentle = true
		return newRED(e, c)
	}})
	register(AQM{Name: "ared", Desc: "Adaptive RED (Floyd, Gummadi & Shenker 2001), gentle, automatic weight", New: func(e Env) (aqm.Queue[uint64], error) {
		c := redConfig(e)
		// As ns-3's ARED switch: gentle, adaptive max_p from its own
		// initial value, and always the automatic weight.
		c.Gentle, c.Adaptive = true, true
		c.MaxP, c.Weight = e.RED.AREDMaxP, 0
		return newRED(e, c)
	}})
}
