package gvisorqdisc

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gvisor.dev/gvisor/pkg/refs"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/link/qdisc/fifo"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	udpproto "gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/queues"
)

// The two netstacks of the load test: A sends bulk TCP through the qdisc
// under test at bottleneckRate; B answers through gVisor's own fifo qdisc,
// without a rate. The addresses are from TEST-NET-1 and exist only in this
// process.
var (
	addrA = tcpip.AddrFrom4([4]byte{192, 0, 2, 1})
	addrB = tcpip.AddrFrom4([4]byte{192, 0, 2, 2})
)

const (
	bottleneckRate = 10 * aqm.Mbit
	queueLimit     = 1000 // packets, as runsc sizes gVisor's fifo
	bulkPort       = 5001
	echoPort       = 7
	warmup         = 1500 * time.Millisecond // TCP fills the FIFO well within it
	loadedFor      = 2500 * time.Millisecond // probes measured after the warm-up
	probeEvery     = 25 * time.Millisecond
)

// pair is two netstacks joined by a pipe link.
type pair struct {
	a, b *stack.Stack
	q    *QDisc
	once sync.Once
}

func newPair(t *testing.T, cfg Config) *pair {
	t.Helper()
	epA, epB := pipe.New("\x02\x00\x00\x00\x00\x01", "\x02\x00\x00\x00\x00\x02", 1500)
	mk := func() *stack.Stack {
		s := stack.New(stack.Options{
			NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
			TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udpproto.NewProtocol},
		})
		sack := tcpip.TCPSACKEnabled(true)
		require.Nil(t, s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack))
		// Windows large enough for the bulk flow to fill the FIFO, as a
		// long-lived download through a sandbox does.
		rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4 << 10, Default: 4 << 20, Max: 8 << 20}
		require.Nil(t, s.SetTransportProtocolOption(tcp.ProtocolNumber, &rcv))
		snd := tcpip.TCPSendBufferSizeRangeOption{Min: 4 << 10, Default: 4 << 20, Max: 8 << 20}
		require.Nil(t, s.SetTransportProtocolOption(tcp.ProtocolNumber, &snd))
		s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: 1}})
		return s
	}
	p := &pair{a: mk(), b: mk()}
	q, err := New(epA, cfg)
	require.NoError(t, err)
	p.q = q
	require.Nil(t, p.a.CreateNICWithOptions(1, epA, stack.NICOptions{QDisc: q}))
	require.True(t, q.CountDrops(p.a, 1))
	require.Nil(t, p.b.CreateNICWithOptions(1, epB, stack.NICOptions{QDisc: fifo.New(epB, 1, queueLimit)}))
	for s, addr := range map[*stack.Stack]tcpip.Address{p.a: addrA, p.b: addrB} {
		require.Nil(t, s.AddProtocolAddress(1, tcpip.ProtocolAddress{
			Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{Address: addr, PrefixLen: 24},
		}, stack.AddressProperties{}))
	}
	return p
}

func (p *pair) destroy() {
	p.once.Do(func() {
		p.a.Destroy()
		p.b.Destroy()
	})
}

// echo answers UDP probes on B until the connection closes.
func echo(c *gonet.UDPConn) {
	buf := make([]byte, 64)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = c.WriteTo(buf[:n], from)
	}
}

// prober sends a numbered UDP probe from A to B's echo every interval
// and times each reply: a probe never waits for the one before it, so a
// slow queue does not thin the samples.
type prober struct {
	c     *gonet.UDPConn
	mu    sync.Mutex
	sent  map[uint64]time.Time
	rtts  []time.Duration
	count uint64
}

func newProber(c *gonet.UDPConn) *prober {
	pr := &prober{c: c, sent: map[uint64]time.Time{}}
	go pr.receive()
	return pr
}

func (pr *prober) receive() {
	buf := make([]byte, 64)
	for {
		n, err := pr.c.Read(buf)
		if err != nil {
			return
		}
		now := time.Now()
		if n < 8 {
			continue
		}
		pr.mu.Lock()
		if t, ok := pr.sent[binary.BigEndian.Uint64(buf)]; ok {
			pr.rtts = append(pr.rtts, now.Sub(t))
			delete(pr.sent, binary.BigEndian.Uint64(buf))
		}
		pr.mu.Unlock()
	}
}

// send sends n probes, interval apart.
func (pr *prober) send(n int, interval time.Duration) {
	var msg [32]byte
	for range n {
		pr.mu.Lock()
		pr.count++
		binary.BigEndian.PutUint64(msg[:], pr.count)
		pr.sent[pr.count] = time.Now()
		pr.mu.Unlock()
		_, _ = pr.c.Write(msg[:])
		time.Sleep(interval)
	}
}

// collect waits up to grace for the replies still due, then returns the
// round-trip times measured since the last collect and how many probes
// went unanswered.
func (pr *prober) collect(grace time.Duration) (rtts []time.Duration, lost int) {
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		pr.mu.Lock()
		left := len(pr.sent)
		pr.mu.Unlock()
		if left == 0 {
			break
		}
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	rtts, lost = pr.rtts, len(pr.sent)
	pr.rtts = nil
	clear(pr.sent)
	return rtts, lost
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// loadResult is what one run of the load test measured.
type loadResult struct {
	idle, loaded []time.Duration
	lost         int
	bulkBytes    int64
	stats        aqm.Stats
}

// runLoad runs bulk TCP from A to B through a qdisc made from cfg and
// probes the round-trip time with small UDP packets, idle and then under
// load. The load lasts warmup+loadedFor; every wait is bounded.
func runLoad(t *testing.T, cfg Config) loadResult {
	p := newPair(t, cfg)
	t.Cleanup(p.destroy)
	var res loadResult

	ec, err := gonet.DialUDP(p.b, &tcpip.FullAddress{NIC: 1, Addr: addrB, Port: echoPort}, nil, ipv4.ProtocolNumber)
	require.NoError(t, err)
	defer ec.Close()
	go echo(ec)
	pc, err := gonet.DialUDP(p.a, nil, &tcpip.FullAddress{NIC: 1, Addr: addrB, Port: echoPort}, ipv4.ProtocolNumber)
	require.NoError(t, err)
	defer pc.Close()
	pr := newProber(pc)
	pr.send(20, 5*time.Millisecond)
	res.idle, _ = pr.collect(time.Second)
	require.GreaterOrEqual(t, len(res.idle), 15, "idle probes answered")

	ln, err := gonet.ListenTCP(p.b, tcpip.FullAddress{NIC: 1, Addr: addrB, Port: bulkPort}, ipv4.ProtocolNumber)
	require.NoError(t, err)
	var received atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	stop := time.Now().Add(warmup + loadedFor)
	go func() { // B's sink, bounded too: a FIN stuck behind a loaded stack must not hang the test
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(stop.Add(5 * time.Second))
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			received.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	conn, err := gonet.DialTCP(p.a, tcpip.FullAddress{NIC: 1, Addr: addrB, Port: bulkPort}, ipv4.ProtocolNumber)
	require.NoError(t, err)
	go func() { // A's bulk sender, bounded by stop
		defer wg.Done()
		defer conn.Close()
		chunk := make([]byte, 64<<10)
		_ = conn.SetWriteDeadline(stop)
		for time.Now().Before(stop) {
			if _, err := conn.Write(chunk); err != nil {
				return
			}
		}
	}()

	time.Sleep(warmup)
	base := received.Load()
	pr.send(int(loadedFor/probeEvery)-1, probeEvery)
	res.bulkBytes = received.Load() - base
	time.Sleep(time.Until(stop))
	res.loaded, res.lost = pr.collect(3 * time.Second) // the last replies wait behind the queue
	_ = ln.Close()                                     // in case the sink never accepted
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("bulk transfer did not stop")
	}

	// Once the stacks are gone (which closes the qdisc, discarding what
	// it still held), every drop the queue made and every packet Close
	// discarded is in the NIC's drop counter, and the NIC's transmit count
	// is what the queue accepted.
	nic := p.a.NICInfo()[1].Stats
	p.destroy()
	res.stats = p.q.Stats()
	discarded := p.q.Front().Detail().Flushed.Packets
	require.Equal(t, res.stats.Dropped().Packets+discarded, nic.TxPacketsDroppedNoBufferSpace.Value(), "NIC drops = queue drops")
	require.Equal(t, res.stats.Enqueued.Packets, nic.Tx.Packets.Value(), "NIC transmits = queue accepts")
	require.Equal(t, 0, res.stats.Len)
	return res
}

// TestNetstackLatencyUnderLoad protects the point of the qdisc: two
// netstacks joined by a 10 Mbit/s bottleneck, bulk TCP from one to the
// other, and a small UDP probe beside it. Behind a 1000-packet FIFO (the
// drop-tail gVisor runs) the probe waits behind the standing queue; behind
// FQ-CoDel it is a sparse flow and waits for at most a packet or two, so
// FQ-CoDel's added latency (median loaded RTT minus median idle RTT) must
// be at most a tenth of the FIFO's, while the bulk flow still moves at a
// good part of the rate. Every PacketBuffer is released at the end.
func TestNetstackLatencyUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 4-second bulk transfers between netstacks; skipped with -short")
	}
	results := map[string]loadResult{}
	for _, name := range []string{"fifo", "fq-codel"} {
		cfg := Config{Queue: name, Rate: bottleneckRate, Options: queues.Options{LimitPackets: queueLimit}}
		r := runLoad(t, cfg)
		results[name] = r
		t.Logf("%-8s idle RTT median %v, loaded median %v (%d probes, %d lost), bulk %.1f Mbit/s, dropped %d, sent %d",
			name, median(r.idle), median(r.loaded), len(r.loaded), r.lost,
			float64(r.bulkBytes)*8/loadedFor.Seconds()/1e6, r.stats.Dropped().Packets, r.stats.Dequeued.Packets)
	}
	added := func(r loadResult) time.Duration { return max(median(r.loaded)-median(r.idle), 0) }
	ff, fq := results["fifo"], results["fq-codel"]
	require.GreaterOrEqual(t, len(ff.loaded), 10, "FIFO probes answered")
	require.GreaterOrEqual(t, len(fq.loaded), 50, "FQ-CoDel probes answered")
	require.Greater(t, added(ff), 50*time.Millisecond, "the FIFO built a standing queue")
	require.LessOrEqual(t, added(fq), added(ff)/10, "FQ-CoDel added %v, the FIFO %v", added(fq), added(ff))
	for name, r := range results {
		minBytes := int64(uint64(bottleneckRate) / 8 * uint64(loadedFor.Milliseconds()) / 1000 / 4)
		require.Greater(t, r.bulkBytes, minBytes, "%s carried the bulk flow at a quarter of the rate at least", name)
	}
	require.Positive(t, fq.stats.DroppedEarly.Packets, "CoDel controlled the bulk flow")

	if refs.GetLeakMode() == refs.LeaksPanic {
		require.NotPanics(t, refs.DoRepeatedLeakCheck, "every PacketBuffer was released")
	}
}
