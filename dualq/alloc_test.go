package dualq_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/dualq"
)

var (
	sinkVerdict aqm.Verdict
	sinkPacket  aqm.Packet[uint64]
)

// TestZeroAllocs protects the hot path: no allocation per Enqueue or
// Dequeue, on the plain, mark, drop and lazy-update paths.
func TestZeroAllocs(t *testing.T) {
	drops := 0
	onDrop := func(aqm.Packet[uint64], aqm.Verdict) { drops++ }
	run := func(name string, cfg dualq.Config, ecn aqm.ECN, step time.Duration, depth int) {
		t.Run(name, func(t *testing.T) {
			q, err := dualq.New(cfg, onDrop)
			require.NoError(t, err)
			now := t0
			for range depth {
				now += aqm.Time(step)
				q.Enqueue(pkt(ecn, 1500, 1), now)
			}
			allocs := testing.AllocsPerRun(2000, func() {
				now += aqm.Time(step)
				sinkVerdict = q.Enqueue(pkt(ecn, 1500, 1), now)
				for q.Len() > depth {
					sinkPacket, _ = q.Dequeue(now)
				}
			})
			require.Zero(t, allocs)
		})
	}
	run("idle", dualq.Config{}, aqm.ECT0, time.Microsecond, 0)
	run("standing-classic", dualq.Config{}, aqm.ECT0, 10*time.Microsecond, 100)
	run("congested-classic-drop", dualq.Config{}, aqm.NotECT, time.Millisecond, 100)
	run("congested-l4s-mark", dualq.Config{}, aqm.ECT1, time.Millisecond, 100)
	run("overload", dualq.Config{Alpha: 50, Beta: 50}, aqm.ECT1, 3*time.Millisecond, 100)
	run("ramp-tsfifo", dualq.Config{Ramp: true, TimeShiftedFIFO: true}, aqm.ECT1, 20*time.Microsecond, 100)
	run("idle-gaps", dualq.Config{}, aqm.ECT0, time.Hour, 3)
	require.Positive(t, drops)
}
