package cake_test

import (
	"fmt"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
)

// Two LAN hosts download through a 10 Mbit/s link shaped by CAKE in
// dual-dsthost mode: host A with one TCP-like flow, host B with eight.
// Host fairness splits the link evenly between the hosts, not 1:8.
func Example_hostFairness() {
	queued := map[uint32]int{} // packets queued per flow
	q, err := cake.New(cake.Config{
		Rate:     10 * aqm.Mbit,
		TinMode:  cake.DiffServ4,
		FlowMode: cake.DualDstHost,
		Seed:     1, // a fixed seed for a reproducible example; leave 0 in production
	}, func(p aqm.Packet[string], _ aqm.Verdict) { queued[p.Hash]-- })
	if err != nil {
		panic(err)
	}
	type flow struct {
		host string
		info cake.Info
		hash uint32
	}
	var flows []flow
	flows = append(flows, flow{"A", cake.Info{SrcHost: 100, DstHost: 1}, 1})
	for i := range 8 {
		flows = append(flows, flow{"B", cake.Info{SrcHost: uint32(200 + i), DstHost: 2}, uint32(10 + i)})
	}
	bytes := map[string]int{}
	now := aqm.Time(time.Second)
	end := now + aqm.Time(10*time.Second)
	for now < end {
		for _, f := range flows { // keep every flow backlogged
			for ; queued[f.hash] < 10; queued[f.hash]++ {
				q.EnqueueInfo(aqm.Packet[string]{Payload: f.host, Meta: aqm.Meta{Size: 1500, Hash: f.hash}}, f.info, now)
			}
		}
		if p, ok := q.Dequeue(now); ok {
			queued[p.Hash]--
			bytes[p.Payload] += int(p.Size)
			continue
		}
		now = q.NextDeparture(now) // the shaper holds the rest back until then
	}
	for _, h := range []string{"A", "B"} {
		fmt.Printf("host %s: %.1f Mbit/s\n", h, float64(bytes[h])*8/10/1e6)
	}
	// Output:
	// host A: 5.0 Mbit/s
	// host B: 5.0 Mbit/s
}
