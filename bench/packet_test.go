package bench

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/fifo"
	"github.com/aqmkit/aqmkit/internal/ring"
	"github.com/aqmkit/aqmkit/queues"
)

// Scenario is one row of the packet benchmark table.
type Scenario struct {
	Name string
	// Depth is the standing queue the harness keeps: after each Enqueue it
	// dequeues while the queue holds more than Depth packets.
	Depth int
	// Step is the virtual time between consecutive packets; with Depth it
	// sets the sojourn time (about Depth*Step).
	Step time.Duration
	// Flows is the number of distinct flow hashes, used round robin.
	Flows int
	// FQOnly marks scenarios run only for the fair queues.
	FQOnly bool
}

// The scenarios of BenchmarkPacket.
var scenarios = []Scenario{
	// idle: every packet is enqueued and dequeued at once.
	{Name: "idle", Depth: 0, Step: time.Microsecond, Flows: 1},
	// standing: 100 packets queued, sojourn about 1 ms, below every
	// AQM's target, so no AQM drops.
	{Name: "standing", Depth: 100, Step: 10 * time.Microsecond, Flows: 1},
	// congested: 100 packets queued, sojourn about 100 ms, far above
	// target, so the drop or mark path runs.
	{Name: "congested", Depth: 100, Step: time.Millisecond, Flows: 1},
	// flows=1024: 1024 active flows, two packets each, below target.
	{Name: "flows=1024", Depth: 2048, Step: 100 * time.Nanosecond, Flows: 1024, FQOnly: true},
}

// PacketAlgo is one algorithm's entry in the table. New builds a queue
// configured so that the scenario means what it says for this algorithm (for
// RED, thresholds above 100 packets for "standing" and around it for
// "congested"); it returns a nil queue to skip a scenario.
type PacketAlgo struct {
	Name string
	FQ   bool
	New  func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error)
}

// algoOrder is the table's fixed order; algorithms not registered yet are
// reported as skipped.
// algoOrder is the registry's list (package queues): every algorithm the
// library has is benchmarked, in its display order; TestEveryQueueBenchmarked
// fails if one has no benchmark configuration here.
var algoOrder = queues.Names()

var packetAlgos = map[string]PacketAlgo{}

// registerPacket adds an algorithm to the table (see packet_algos_test.go).
func registerPacket(a PacketAlgo) {
	if !slices.Contains(algoOrder, a.Name) {
		panic("bench: unknown algorithm " + a.Name)
	}
	packetAlgos[a.Name] = a
}

func init() {
	registerPacket(PacketAlgo{Name: "fifo", New: func(sc Scenario, onDrop aqm.DropFunc[uint64]) (aqm.Queue[uint64], error) {
		return fifo.New(fifo.Config{LimitPackets: 10000}, onDrop)
	}})
}

// BenchmarkPacket is the cross-algorithm table: ns per packet forwarded.
func BenchmarkPacket(b *testing.B) {
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
				b.Run(sc.Name, func(b *testing.B) {
					d, err := newDriver(a, sc)
					if err != nil {
						b.Fatal(err)
					}
					if d == nil {
						b.Skip("scenario not applicable")
					}
					runPacket(b, d)
				})
			}
		})
	}
	b.Run("ring", func(b *testing.B) {
		r := ring.New[aqm.Packet[uint64]](1024)
		for i := range 100 {
			r.PushBack(aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500}})
		}
		var sink uint64
		i := uint64(0)
		for b.Loop() {
			r.PushBack(aqm.Packet[uint64]{Payload: i, Meta: aqm.Meta{Size: 1500}})
			p, _ := r.PopFront()
			sink += p.Payload
			i++
		}
		benchSink = sink
	})
	b.Run("chan", func(b *testing.B) {
		c := make(chan aqm.Packet[uint64], 1024)
		for i := range 100 {
			c <- aqm.Packet[uint64]{Payload: uint64(i), Meta: aqm.Meta{Size: 1500}}
		}
		var sink uint64
		i := uint64(0)
		for b.Loop() {
			c <- aqm.Packet[uint64]{Payload: i, Meta: aqm.Meta{Size: 1500}}
			p := <-c
			sink += p.Payload
			i++
		}
		benchSink = sink
	})
}

var benchSink uint64

// warmPackets is how many packets the harness loop runs untimed so that the
// queue reaches its steady state (depth, EWMA averages, controllers) before
// measurement.
const warmPackets = 20000

// runPacket times one packet forwarded per op: advance the virtual clock,
// Enqueue one packet, then Dequeue while the queue holds more than Depth
// packets (by the driver's own count, see driver).
// The loop is written out (no closure over the clock and counters) and it
// uses every dequeued packet (it sums the payloads), as the C reference
// harness does.
func runPacket(b *testing.B, d *driver) {
	b.ReportAllocs()
	// The first warmPackets iterations do not call b.Loop, whose first
	// call starts the timer.
	for i := 0; i < warmPackets || b.Loop(); i++ {
		d.step()
	}
	b.StopTimer()
	if err := d.check(); err != nil {
		b.Fatal(err)
	}
	reportPacket(b, d)
}

// reportPacket ends a timed run: it keeps the result alive and reports the
// share of packets signalled.
func reportPacket(b *testing.B, d *driver) {
	benchSink = d.forwarded + d.sum
	s := d.q.Stats()
	if off := s.Offered().Packets; off > 0 {
		b.ReportMetric(float64(s.Dropped().Packets+s.Marked.Packets)/float64(off), "signals/pkt")
	}
}

// driver is the harness's per-packet step: advance time, enqueue one packet
// (round robin over the scenario's flows, without a division per packet),
// and dequeue while the queue is deeper than the scenario's depth.
//
// The driver counts the queue's length itself, as the C reference harness
// reads its ring's count, instead of calling Len before every Dequeue:
// accepted arrivals add one, packets dequeued or handed to the DropFunc
// (dequeue-time AQM drops, evictions) take one off. An op is then exactly
// the two calls it is defined as, an Enqueue and a Dequeue. check compares
// the count with Len after a run.
type driver struct {
	q         aqm.Queue[uint64]
	now, dt   aqm.Time
	seq       uint64
	forwarded uint64
	sum       uint64 // of the dequeued payloads, so that each is used
	flow      uint32
	flows     uint32
	depth     int
	n         int // packets in the queue, by the driver's count
}

// newDriver builds the scenario's queue for a, with the driver's DropFunc.
func newDriver(a PacketAlgo, sc Scenario) (*driver, error) {
	d := new(driver)
	if ok, err := d.init(a, sc); !ok {
		return nil, err
	}
	return d, nil
}

// init sets d up for sc and builds its queue, with d's DropFunc; it
// reports false if a skips the scenario or fails.
func (d *driver) init(a PacketAlgo, sc Scenario) (bool, error) {
	*d = driver{now: aqm.Time(time.Second), dt: aqm.Time(sc.Step), flows: uint32(sc.Flows), depth: sc.Depth}
	q, err := a.New(sc, d.dropped)
	if err != nil || q == nil {
		return false, err
	}
	d.q = q
	return true, nil
}

// dropped is the queue's DropFunc: a queued packet left without Dequeue.
func (d *driver) dropped(aqm.Packet[uint64], aqm.Verdict) { d.n-- }

func (d *driver) step() {
	d.now += d.dt
	d.seq++
	if d.flow++; d.flow == d.flows {
		d.flow = 0
	}
	if d.q.Enqueue(aqm.Packet[uint64]{Payload: d.seq, Meta: aqm.Meta{Size: 1500, Hash: d.flow}}, d.now).Accepted() {
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

// check reports an error if the driver's count of queued packets is not
// the queue's Len.
func (d *driver) check() error {
	if d.n != d.q.Len() {
		return fmt.Errorf("harness counted %d queued packets, Len says %d", d.n, d.q.Len())
	}
	return nil
}

// drive runs warmPackets untimed steps and then n more, and returns the
// queue's counters over the n alone.
func drive(d *driver, n int) (aqm.Stats, error) {
	for range warmPackets {
		d.step()
	}
	before := d.q.Stats()
	for range n {
		d.step()
	}
	after := d.q.Stats()
	after.DroppedOverlimit.Packets -= before.DroppedOverlimit.Packets
	after.DroppedEarly.Packets -= before.DroppedEarly.Packets
	after.DroppedOverload.Packets -= before.DroppedOverload.Packets
	after.Marked.Packets -= before.Marked.Packets
	return after, d.check()
}

// TestEveryQueueBenchmarked protects the table from falling behind the
// library: every queue of the registry has a benchmark configuration and
// a generated concrete-type loop, and the table has nothing else.
func TestEveryQueueBenchmarked(t *testing.T) {
	for _, name := range queues.Names() {
		if _, ok := packetAlgos[name]; !ok {
			t.Errorf("%s is in the registry but has no benchmark configuration (packet_algos_test.go)", name)
		}
		if directRunner[name] == nil || directSteps[name] == nil {
			t.Errorf("%s is in the registry but has no concrete-type loop (direct_test.go)", name)
		}
	}
	if len(packetAlgos) != len(queues.Names()) {
		t.Errorf("the table has %d algorithms, the registry %d", len(packetAlgos), len(queues.Names()))
	}
}
