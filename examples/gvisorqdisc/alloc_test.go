package gvisorqdisc

import (
	"fmt"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/queues"
)

// TestSteadyStateAllocs protects the qdisc's steady-state path from
// allocating: WritePacket, the queue, the dispatcher's batches and the
// release of each packet, measured over whole bursts of 1000 packets (the
// producer's and the dispatcher's allocations both count), for UDP packets
// that are hashed and TCP packets that carry netstack's endpoint hash.
func TestSteadyStateAllocs(t *testing.T) {
	for _, pk := range []struct {
		name string
		mk   func() []*stack.PacketBuffer
	}{{"udp", benchPackets}, {"tcp", benchPacketsTCP}} {
		for _, name := range []string{"fifo", "codel", "fq-codel", "cake", "dualpi2"} {
			t.Run(fmt.Sprintf("%s/%s", name, pk.name), func(t *testing.T) {
				c := &counter{done: make(chan struct{}, 1)}
				// A packet the AQM drops (a slow run, under the race
				// detector, builds sojourn times) counts as arrived, so
				// that the burst ends.
				drop := func(*stack.PacketBuffer, aqm.Verdict) { c.add(1) }
				q, err := New(c, Config{Queue: name, Options: queues.Options{LimitPackets: 1000, Seed: 1}, OnDrop: drop})
				if err != nil {
					t.Fatal(err)
				}
				pkts := pk.mk()
				defer func() {
					q.Close()
					for _, p := range pkts {
						p.DecRef()
					}
				}()
				run := func() {
					c.target.Store(c.n.Load() + int64(len(pkts)))
					for _, p := range pkts {
						_ = q.WritePacket(p) // a refusal went to OnDrop
					}
					<-c.done
				}
				run() // the flows' first packets, the pools
				perBurst := testing.AllocsPerRun(20, run)
				// AllocsPerRun rounds down: zero means fewer than one
				// allocation per 1000 packets.
				if perBurst != 0 {
					t.Errorf("%v allocations per burst of %d packets, want 0", perBurst, len(pkts))
				}
			})
		}
	}
}
