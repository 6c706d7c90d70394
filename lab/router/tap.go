package router

import "github.com/aqmkit/aqmkit/aqm"

// Tap sees the packets that cross the router, for a program that measures
// what they carry (autorate.PassiveRTT's round trips): Read each packet
// read from the device once its direction is found, before it is queued;
// Written each packet as its direction writes it back, after its queue and
// delay line. The packet is the IP packet (behind any virtio-net header),
// valid for the call only; now is the router's clock. Read runs on the
// reading goroutine and Written on each direction's, so a Tap must be safe
// for concurrent use, and quick: it runs on the packet path.
type Tap interface {
	Read(q *Queue, packet []byte, now aqm.Time)
	Written(q *Queue, packet []byte, now aqm.Time)
}

// tapRead hands a packet just read to the Tap, if any.
func (r *Router) tapRead(d *Queue, ip []byte) {
	if r.cfg.Tap != nil {
		r.cfg.Tap.Read(d, ip, r.clk.Now())
	}
}

// tapWritten hands the packets about to be written to the Tap, if any.
func (d *Queue) tapWritten(ps [][]byte) {
	t := d.r.cfg.Tap
	if t == nil || len(ps) == 0 {
		return
	}
	now := d.r.clk.Now()
	for _, p := range ps {
		t.Written(d, p[d.r.off:], now)
	}
}
