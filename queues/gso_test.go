package queues_test

import (
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/aqm/aqmtest"
	"github.com/aqmkit/aqmkit/queues"
)

// TestEveryQueueCountsSegments protects the wire-packet accounting of GSO
// super-packets for every queue of the registry: built from its preset
// for 50 Mb/s (the queues that shape, unshaped: the kit does not wait for
// a paced departure) with a packet limit of 100, each holds at most 100 segments however they
// are grouped, and its Len and Stats count segments (the kit's GSO
// checks).
func TestEveryQueueCountsSegments(t *testing.T) {
	const limit = 100
	for _, s := range queues.List() {
		o := queues.Options{Rate: 50 * aqm.Mbit, LimitPackets: limit}
		if s.Shapes {
			o.Rate = 0
		}
		t.Run(s.Name, func(t *testing.T) {
			aqmtest.RunGSO(t, aqmtest.Factory{
				New: func(seed uint64, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
					o.Seed = seed
					return queues.New(s.Name, o, onDrop)
				},
				LimitPackets: limit,
			})
		})
	}
}
