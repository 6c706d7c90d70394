package bench

import (
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/cake"
	"github.com/aqmkit/aqmkit/fq"
)

// BenchmarkFloodGuard measures what the fair queues' flood guard costs on
// ordinary traffic, with no flood: ns per packet forwarded (one Enqueue and
// the Dequeues that keep the standing depth, as in BenchmarkPacket) for
// FQ-CoDel and CAKE with the guard on and with DisableFloodGuard, on three
// many-flow workloads:
//
//   - flows=1024: 1024 recurring flows round robin, two packets each
//     queued (2048 standing, about 0.2 ms), so arrivals find their bucket
//     occupied;
//   - sparse=256: 256 recurring flows round robin with 32 packets
//     queued, so every arrival finds its bucket empty and takes the
//     owner's path (and the sparse-flow check);
//   - churn-every-32: as flows=1024, but every 32nd packet carries a hash never
//     seen before (a one-packet flow, as DNS or a new connection's SYN),
//     fewer new flows than the guard's budget of one per eight packets.
//
// Compare guard=on with guard=off within one run; run the two in
// alternating order (-bench 'FloodGuard/.*/on$' and '/off$') to rotate it.
func BenchmarkFloodGuard(b *testing.B) {
	queuesUnderTest := []struct {
		name string
		new  func(off bool, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error)
	}{
		{"fq-codel", func(off bool, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			return fq.NewCoDel(fq.CoDelConfig{Seed: 1, DisableFloodGuard: off}, onDrop)
		}},
		{"cake", func(off bool, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
			return cake.New(cake.Config{TinMode: cake.BestEffort, FlowMode: cake.Flows, Seed: 1, DisableFloodGuard: off}, onDrop)
		}},
	}
	workloads := []struct {
		name         string
		flows, depth int
		step         time.Duration
		churnEvery   uint64 // a fresh hash every churnEvery packets; 0 = none
	}{
		{"flows=1024", 1024, 2048, 100 * time.Nanosecond, 0},
		{"sparse=256", 256, 32, time.Microsecond, 0},
		{"churn-every-32", 1024, 2048, 100 * time.Nanosecond, 32},
	}
	for _, qu := range queuesUnderTest {
		b.Run(qu.name, func(b *testing.B) {
			for _, w := range workloads {
				b.Run(w.name, func(b *testing.B) {
					for _, off := range []bool{false, true} {
						name := "on"
						if off {
							name = "off"
						}
						b.Run(name, func(b *testing.B) {
							d := &guardDriver{driver: driver{now: aqm.Time(time.Second), dt: aqm.Time(w.step), flows: uint32(w.flows), depth: w.depth}, churnEvery: w.churnEvery}
							q, err := qu.new(off, d.dropped)
							if err != nil {
								b.Fatal(err)
							}
							d.q = q
							b.ReportAllocs()
							for i := 0; i < warmPackets || b.Loop(); i++ {
								d.step()
							}
							b.StopTimer()
							if err := d.check(); err != nil {
								b.Fatal(err)
							}
							reportPacket(b, &d.driver)
						})
					}
				})
			}
		})
	}
}

// guardDriver is the packet harness's driver with optional one-packet
// flows: every churnEvery-th packet takes a fresh hash instead of the
// round robin's.
type guardDriver struct {
	driver
	churnEvery uint64
	fresh      uint32
}

func (d *guardDriver) step() {
	if d.churnEvery == 0 || (d.seq+1)%d.churnEvery != 0 {
		d.driver.step()
		return
	}
	// A fresh hash above the round robin's range.
	d.now += d.dt
	d.seq++
	d.fresh++
	if d.q.Enqueue(aqm.Packet[uint64]{Payload: d.seq, Meta: aqm.Meta{Size: 1500, Hash: d.flows + d.fresh}}, d.now).Accepted() {
		d.n++
	}
	for d.n > d.depth {
		p, ok := d.q.Dequeue(d.now)
		if !ok {
			break
		}
		d.n--
		d.forwarded++
		d.sum += p.Payload
	}
}
