package router

import (
	"fmt"

	"github.com/aqmkit/aqmkit/aqm"
)

// SetRate changes the direction's rate from any goroutine, as a rate
// controller (package autorate's Setter) does: its front's token bucket
// takes the new rate at once, with a bucket of Config.Burst at it, and so
// does the shaper of a queue that shapes by itself (CAKE); the packets
// already queued stay. It refuses a zero rate and a router that runs
// unshaped (Config.Rate zero).
func (d *Queue) SetRate(r aqm.Rate) error {
	if r == 0 {
		return fmt.Errorf("router: %v: a zero rate would stop shaping", d.prefix)
	}
	if d.front.Config().Rate == 0 {
		return fmt.Errorf("router: %v: the router runs unshaped", d.prefix)
	}
	d.setQueueRate(r)
	if err := d.front.Reconfigure(frontConfig(r, d.r.cfg.Burst)); err != nil {
		return err
	}
	d.rate.Store(uint64(r))
	return nil
}

// Rate returns the direction's rate: its front's, zero when the front does
// not shape.
func (d *Queue) Rate() aqm.Rate { return d.front.Config().Rate }
