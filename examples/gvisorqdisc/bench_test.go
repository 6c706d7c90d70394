package gvisorqdisc

import (
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/qdisc/fifo"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/aqmkit/aqmkit/queues"
)

// counter is a lower endpoint that drops what it is given and tells the
// benchmark when the packets it waits for have all arrived.
type counter struct {
	n      atomic.Int64
	target atomic.Int64
	done   chan struct{}
}

// MaxHeaderLength reports that the counter, like a TUN device, adds no
// link header.
func (c *counter) MaxHeaderLength() uint16 { return 0 }

func (c *counter) WritePackets(l stack.PacketBufferList) (int, tcpip.Error) {
	k := int64(l.Len())
	c.add(k)
	return int(k), nil
}

// add counts k packets as arrived (written, or dropped where a test
// counts drops) and tells the waiter when the target is reached.
func (c *counter) add(k int64) {
	if n := c.n.Add(k); n >= c.target.Load() && n-k < c.target.Load() {
		c.done <- struct{}{}
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPackets are the packets each burst writes, held by the benchmark so
// that they are never freed: 1000 UDP packets of 1,400 bytes in 16 flows.
func benchPackets() []*stack.PacketBuffer {
	pkts := make([]*stack.PacketBuffer, 1000)
	for i := range pkts {
		pkts[i] = packet4(0, l4{proto: header.UDPProtocolNumber, srcPort: uint16(5000 + i%16), dstPort: 9}, 1400-28, 0, 0)
	}
	return pkts
}

// benchPacketsTCP are 1000 TCP packets of 1,400 bytes in 16 flows, each
// carrying in PacketBuffer.Hash a random value per flow, as netstack's
// TCP endpoints set it.
func benchPacketsTCP() []*stack.PacketBuffer {
	pkts := make([]*stack.PacketBuffer, 1000)
	for i := range pkts {
		pkts[i] = packet4(0, l4{proto: header.TCPProtocolNumber, srcPort: uint16(5000 + i%16), dstPort: 9}, 1400-40, 0, 0)
		pkts[i].Hash = uint32(i%16+1) * 0x9e3779b9
	}
	return pkts
}

// burst writes every packet of pkts through qd and waits until the lower
// endpoint has them all; it returns the process CPU time and the wall time
// this took.
func burst(qd stack.QueueingDiscipline, c *counter, pkts []*stack.PacketBuffer) (cpu, wall time.Duration) {
	c.target.Store(c.n.Load() + int64(len(pkts)))
	t0, w0 := cpuTime(), time.Now()
	for _, p := range pkts {
		if err := qd.WritePacket(p); err != nil {
			panic(fmt.Sprintf("refused: %v", err))
		}
	}
	<-c.done
	return cpuTime() - t0, time.Since(w0)
}

// BenchmarkCPUPerPacket compares the CPU time a packet costs through this
// qdisc with gVisor's own fifo qdisc (one dispatcher, 1000 packets), in
// one run: each of b.N rounds writes bursts of 1000 packets through every
// variant in turn, the order rotating by round, and measures the whole
// process's CPU time (the producer, the dispatcher, the runtime) per
// packet. It reports the median cpu-ns/pkt of each variant and the median
// and range of each ratio to gVisor's fifo. Run with -benchtime 11x or so.
// The packets are UDP, whose flow hash the qdisc computes.
func BenchmarkCPUPerPacket(b *testing.B) { cpuPerPacket(b, benchPackets()) }

// BenchmarkCPUPerPacketTCP is BenchmarkCPUPerPacket with TCP packets that
// carry netstack's endpoint hash.
func BenchmarkCPUPerPacketTCP(b *testing.B) { cpuPerPacket(b, benchPacketsTCP()) }

func cpuPerPacket(b *testing.B, pkts []*stack.PacketBuffer) {
	type variant struct {
		name string
		qd   stack.QueueingDiscipline
		c    *counter
		cpu  []float64
		wall []float64
	}
	var vs []*variant
	add := func(name string, mk func(lower stack.LinkWriter) stack.QueueingDiscipline) {
		c := &counter{done: make(chan struct{}, 1)}
		vs = append(vs, &variant{name: name, qd: mk(c), c: c})
	}
	add("gvisor-fifo", func(l stack.LinkWriter) stack.QueueingDiscipline { return fifo.New(l, 1, 1000) })
	for _, name := range []string{"fifo", "fq-codel", "cake"} {
		add(name, func(l stack.LinkWriter) stack.QueueingDiscipline {
			q, err := New(l, Config{Queue: name, Options: queues.Options{LimitPackets: 1000, Seed: 1}})
			if err != nil {
				b.Fatal(err)
			}
			return q
		})
	}
	const bursts = 20      // per variant and round: 20,000 packets
	for _, v := range vs { // warm up
		burst(v.qd, v.c, pkts)
	}
	b.ResetTimer()
	for round := range b.N {
		for k := range vs {
			v := vs[(k+round)%len(vs)]
			var cpu, wall time.Duration
			for range bursts {
				c, w := burst(v.qd, v.c, pkts)
				cpu, wall = cpu+c, wall+w
			}
			n := float64(bursts * len(pkts))
			v.cpu = append(v.cpu, float64(cpu.Nanoseconds())/n)
			v.wall = append(v.wall, float64(wall.Nanoseconds())/n)
		}
	}
	b.StopTimer()
	for _, v := range vs {
		v.qd.Close()
	}
	for _, p := range pkts {
		p.DecRef()
	}
	base := vs[0]
	for _, v := range vs {
		b.ReportMetric(med(v.cpu), v.name+"-cpu-ns/pkt")
		line := fmt.Sprintf("%-12s cpu %6.1f ns/pkt [%6.1f, %6.1f]  wall %6.1f ns/pkt", v.name, med(v.cpu), slices.Min(v.cpu), slices.Max(v.cpu), med(v.wall))
		if v != base {
			r := make([]float64, len(v.cpu))
			for i := range r {
				r[i] = v.cpu[i] / base.cpu[i] // same round, neighbours in time
			}
			b.ReportMetric(med(r), v.name+"/gvisor-fifo")
			line += fmt.Sprintf("  ratio to gvisor-fifo %.2f [%.2f, %.2f]", med(r), slices.Min(r), slices.Max(r))
		}
		// Printed, not logged: the benchmark log keeps only ten lines.
		fmt.Printf("    %s (%d rounds)\n", line, b.N)
	}
}

func med(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runBursts sends pkts through q once per b.Loop iteration, reports the
// CPU time per packet as cpu-ns/pkt and returns how many packets it sent.
func runBursts(b *testing.B, q stack.QueueingDiscipline, c *counter, pkts []*stack.PacketBuffer) int {
	var cpu time.Duration
	n := 0
	for b.Loop() {
		d, _ := burst(q, c, pkts)
		cpu += d
		n += len(pkts)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/pkt")
	return n
}

// BenchmarkQDisc writes bursts of 1000 packets through one queue at a time
// (gVisor's fifo, then fifo, fq-codel, cake), for profiling one path alone: it reports the
// process's CPU time per packet and the dispatcher's looks at the queue
// per 1000 packets (each a lock, a clock reading and, when it found the
// queue empty, a park).
func BenchmarkQDisc(b *testing.B) {
	b.Run("gvisor-fifo", func(b *testing.B) {
		c := &counter{done: make(chan struct{}, 1)}
		q := fifo.New(c, 1, 1000)
		pkts := benchPackets()
		burst(q, c, pkts)
		runBursts(b, q, c, pkts)
		q.Close()
		for _, p := range pkts {
			p.DecRef()
		}
	})
	for _, name := range []string{"fifo", "fq-codel", "cake"} {
		b.Run(name, func(b *testing.B) {
			c := &counter{done: make(chan struct{}, 1)}
			q, err := New(c, Config{Queue: name, Options: queues.Options{LimitPackets: 1000, Seed: 1}})
			if err != nil {
				b.Fatal(err)
			}
			pkts := benchPackets()
			burst(q, c, pkts)
			w0 := q.Front().Detail().Wakeups
			n := runBursts(b, q, c, pkts)
			b.ReportMetric(float64(q.Front().Detail().Wakeups-w0)*1000/float64(n), "looks/kpkt")
			q.Close()
			for _, p := range pkts {
				p.DecRef()
			}
		})
	}
}
