package bench

import (
	"fmt"
	"testing"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/internal/ring"
)

// burstSizes are the burst lengths of BenchmarkBurst.
var burstSizes = []int{1, 8, 32, 128}

// BenchmarkBurst is the burst table: the scenarios of BenchmarkPacket
// driven a burst at a time through each queue's own burst path
// (aqm.BatchQueue, looked up once, as a packet path holding the concrete
// queue would call it), one time reading per burst. Its figure is
// ns/pkt, the time per packet forwarded; ns/op is per burst.
func BenchmarkBurst(b *testing.B) {
	for _, name := range algoOrder {
		b.Run(name, func(b *testing.B) {
			a, ok := packetAlgos[name]
			if !ok {
				b.Skip("not built yet")
			}
			for _, sc := range scenarios {
				if sc.FQOnly && !a.FQ {
					continue
				}
				for _, n := range burstSizes {
					b.Run(fmt.Sprintf("%s/%d", sc.Name, n), func(b *testing.B) {
						d, err := newBurstDriver(a, sc, n)
						if err != nil {
							b.Fatal(err)
						}
						if d == nil {
							b.Skip("scenario not applicable")
						}
						runBurst(b, d)
					})
				}
			}
		})
	}
	for _, n := range burstSizes {
		b.Run(fmt.Sprintf("ring/%d", n), func(b *testing.B) {
			// A bare ring: push a burst, pop a burst, 100 standing.
			r := ring.New[aqm.Packet[uint64]](1024)
			for i := range 100 {
				r.PushBack(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500}})
			}
			var sum, seq uint64
			b.ReportAllocs()
			for b.Loop() {
				for range n {
					seq++
					r.PushBack(aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500}})
				}
				for range n {
					p, _ := r.PopFront()
					sum += p.Payload
				}
			}
			benchSink = sum
			reportPerPacket(b, n)
		})
	}
}

// reportPerPacket reports the time per packet of a run whose ops were
// bursts of n packets.
func reportPerPacket(b *testing.B, n int) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pkt")
	}
}

// burstDriver is driver's burst twin: per op it advances time by the
// burst's span, offers a burst of packets at that one time, and dequeues
// in bursts while the queue, by its own count, is deeper than the depth.
type burstDriver struct {
	driver
	bq  aqm.BatchQueue[uint64] // the queue's burst path, looked up once
	in  []aqm.Packet[uint64]
	vs  []aqm.Verdict
	out []aqm.Packet[uint64]
}

func newBurstDriver(a PacketAlgo, sc Scenario, n int) (*burstDriver, error) {
	d := &burstDriver{in: make([]aqm.Packet[uint64], n), vs: make([]aqm.Verdict, n), out: make([]aqm.Packet[uint64], n)}
	if ok, err := d.init(a, sc); !ok {
		return nil, err
	}
	d.dt *= aqm.Time(n)
	bq, ok := d.q.(aqm.BatchQueue[uint64])
	if !ok {
		return nil, fmt.Errorf("%s has no burst path", a.Name)
	}
	d.bq = bq
	return d, nil
}

func (d *burstDriver) step() {
	d.now += d.dt
	// The sequence number, flow and sum live in locals for the loops, as
	// C's harness keeps them in registers: a field updated per packet
	// would add a store-to-load chain per packet to every row.
	seq, flow, flows := d.seq, d.flow, d.flows
	for i := range d.in {
		seq++
		if flow++; flow == flows {
			flow = 0
		}
		d.in[i] = aqm.Packet[uint64]{Payload: seq, Meta: aqm.Meta{Size: 1500, Hash: flow}}
	}
	d.seq, d.flow = seq, flow
	d.n += d.bq.EnqueueBatch(d.in, d.vs, d.now)
	for d.n > d.depth {
		got := d.bq.DequeueBatch(d.out[:min(d.n-d.depth, len(d.out))], d.now)
		if got == 0 {
			break
		}
		d.n -= got
		d.forwarded += uint64(got)
		sum := d.sum
		for _, p := range d.out[:got] {
			sum += p.Payload
		}
		d.sum = sum
	}
}

// runBurst times bursts after a warm-up of warmPackets packets.
func runBurst(b *testing.B, d *burstDriver) {
	b.ReportAllocs()
	warm := warmPackets / len(d.in)
	for i := 0; i < warm || b.Loop(); i++ {
		d.step()
	}
	b.StopTimer()
	if err := d.check(); err != nil {
		b.Fatal(err)
	}
	reportPacket(b, &d.driver)
	reportPerPacket(b, len(d.in))
}

// TestBurstScenarioMeaning protects the burst table's claims as
// TestScenarioMeaning does the single-call table's: with bursts of 32 the
// harness's count stays equal to Len, "idle" and "standing" never signal
// and "congested" runs the signal path.
func TestBurstScenarioMeaning(t *testing.T) {
	for _, name := range algoOrder {
		a := packetAlgos[name]
		for _, sc := range scenarios {
			if sc.FQOnly && !a.FQ {
				continue
			}
			d, err := newBurstDriver(a, sc, 32)
			if err != nil || d == nil {
				t.Fatalf("%s/%s: %v", name, sc.Name, err)
			}
			const bursts = 1000
			for range bursts {
				d.step()
			}
			if err := d.check(); err != nil {
				t.Errorf("%s/%s: %v", name, sc.Name, err)
			}
			s := d.q.Stats()
			signals := s.Dropped().Packets + s.Marked.Packets
			switch sc.Name {
			case "idle", "standing":
				if signals != 0 {
					t.Errorf("%s/%s: %d packets signalled in bursts, want none", name, sc.Name, signals)
				}
			case "congested":
				if name != "fifo" && signals < bursts*32/200 {
					t.Errorf("%s/%s: %d packets signalled in bursts, want the signal path to run", name, sc.Name, signals)
				}
			}
			if d.forwarded+s.Dropped().Packets == 0 {
				t.Errorf("%s/%s: no packet left the queue", name, sc.Name)
			}
		}
	}
}
