package autorate_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/autorate"
)

// A controller driving a shaper: the link is busy and the delays are low,
// so the rate climbs 4% a step; then a queue forms beyond the shaper, the
// probes' round-trip times rise by 100 ms, and the third delayed sample cuts
// the rate by 16.75% (the mean rise, 49.9 ms, is two thirds of the way
// from the 30 ms threshold to the 60 ms of the full cut).
func Example() {
	c, err := autorate.New(autorate.Config{MinRate: 10 * aqm.Mbit, BaseRate: 50 * aqm.Mbit, MaxRate: 100 * aqm.Mbit})
	if err != nil {
		panic(err)
	}
	shaper := autorate.SetterFunc(func(r aqm.Rate) error {
		fmt.Println("shaper rate", r) // f.SetRate(r) on a front
		return nil
	})
	c.Drive(shaper)

	now := aqm.Time(time.Second)
	step := func(d time.Duration) { now = now.Add(d) }
	for range 3 { // the shaper is saturated, RTTs at their base
		c.Achieved(now, c.Rate())
		c.Sample(now, 0, 20*time.Millisecond)
		step(200 * time.Millisecond)
	}
	for range 3 { // bufferbloat: 120 ms round trips
		d := c.Sample(now, 0, 120*time.Millisecond)
		if d.Action != autorate.Hold {
			fmt.Println(d.Action, d.Rate)
		}
		step(50 * time.Millisecond)
	}
	// Output:
	// shaper rate 50mbit
	// shaper rate 52mbit
	// shaper rate 54.08mbit
	// shaper rate 56.2432mbit
	// shaper rate 46.822821mbit
	// cut 46.822821mbit
}
