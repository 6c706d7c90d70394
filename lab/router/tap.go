package router

import "github.com/aqmkit/aqmkit/aqm"

// Tap shows a router's packets to a measurement, such as a passive
// round-trip estimator, without copying them. Each function is called
// with the instant (Config.Clock) and the IP packet (behind any
// virtio-net header; a kept GSO super-packet as one packet): it may read
// the bytes during the call only, must not keep or change them, and must
// not block, since it runs on the packet path. Either may be nil.
type Tap struct {
	// Read sees every packet read into a buffer whose IP header is valid,
	// before it is queued (and so also those then dropped for want of a
	// queue, or by the queue); it is called on the device's reading
	// goroutine.
	Read func(now aqm.Time, ip []byte)
	// Written sees every packet as it is written to a device, after its
	// queue and delay line; it is called on the goroutine writing the
	// direction (its consumer or its delay line, or a reader for an
	// unshaped direction), so calls for different directions may overlap.
	Written func(now aqm.Time, ip []byte)
}

// tapRead shows ip to Config.Tap.Read, if set.
func (r *Router) tapRead(ip []byte) {
	if f := r.cfg.Tap.Read; f != nil {
		f(r.clk.Now(), ip)
	}
}

// tapWritten shows the packets of ps, about to be written, to
// Config.Tap.Written, if set, at one instant.
func (r *Router) tapWritten(ps [][]byte) {
	f := r.cfg.Tap.Written
	if f == nil {
		return
	}
	now := r.clk.Now()
	for _, p := range ps {
		f(now, p[min(r.off, len(p)):])
	}
}
