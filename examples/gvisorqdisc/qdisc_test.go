package gvisorqdisc

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/iphdr"
	"github.com/aqmkit/aqmkit/queues"
)

// TestMetaMatchesWholePacket protects classification from the parsed
// headers alone: for every kind of packet, the Meta read from the network
// and transport headers has the hash and ECN that package iphdr computes
// from the whole packet's bytes, and Size is pkt.Size().
func TestMetaMatchesWholePacket(t *testing.T) {
	h := iphdr.NewHasherWithKey(1, 2)
	tcp := l4{proto: header.TCPProtocolNumber, srcPort: 40000, dstPort: 443}
	icmp := l4{proto: header.ICMPv4ProtocolNumber, srcPort: 77}
	cases := map[string]*stack.PacketBuffer{
		"v4 udp not-ect":    packet4(0, udp, 100, 0, 0),
		"v4 udp ect0 dscp":  packet4(46<<2|2, udp, 1000, 0, 0),
		"v4 tcp ect1":       packet4(1, tcp, 1448, 0, 0),
		"v4 tcp other port": packet4(0, l4{proto: header.TCPProtocolNumber, srcPort: 40001, dstPort: 443}, 1448, 0, 0),
		"v4 icmp echo":      packet4(0, icmp, 56, 0, 0),
		"v4 first fragment": packet4(0, udp, 1000, header.IPv4FlagMoreFragments, 0),
		"v4 later fragment": packet4(0, l4{}, 1000, 0, 1480),
		"v4 ce":             packet4(3, udp, 10, 0, 0),
		"v6 udp":            packet6(0, udp, 100),
		"v6 tcp ect0":       packet6(2, tcp, 1400),
		"v6 ce dscp":        packet6(10<<2|3, tcp, 0),
	}
	hashes := map[string]uint32{}
	for name, pkt := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := h.Meta(bytesOf(pkt))
			require.NoError(t, err)
			got := meta(&h, pkt, needHash|needECN)
			require.Equal(t, want, got)
			require.Equal(t, uint32(pkt.Size()), got.Size)
			require.Equal(t, want, meta(&h, pkt, needHash|needECN|linkless))
			require.Equal(t, aqm.Meta{Size: want.Size, ECN: want.ECN}, meta(&h, pkt, needECN|linkless))
		})
		hashes[name] = meta(&h, pkt, needHash|needECN).Hash
		pkt.DecRef()
	}
	// Ports, identifiers and the protocol are in the key; the ECN and
	// DSCP bits are not.
	require.NotEqual(t, hashes["v4 tcp ect1"], hashes["v4 tcp other port"])
	require.NotEqual(t, hashes["v4 udp not-ect"], hashes["v4 icmp echo"])
	require.NotEqual(t, hashes["v4 udp not-ect"], hashes["v6 udp"])
	require.Equal(t, hashes["v4 udp not-ect"], hashes["v4 ce"])
	require.Equal(t, hashes["v6 tcp ect0"], hashes["v6 ce dscp"])
}

// TestSetCE protects the CE write: ECT(0) and ECT(1) become CE in IPv4 and
// IPv6, byte for byte as iphdr.SetCE marks the whole packet, the IPv4
// header checksum still verifies, and Not-ECT and CE packets are left as
// they are.
func TestSetCE(t *testing.T) {
	for _, tos := range []uint8{0, 1, 2, 3, 46<<2 | 1, 46<<2 | 2, 0xfc, 0xfe, 0xfd} {
		for _, v6 := range []bool{false, true} {
			var pkt *stack.PacketBuffer
			if v6 {
				pkt = packet6(tos, udp, 64)
			} else {
				pkt = packet4(tos, udp, 64, 0, 0)
			}
			want := bytesOf(pkt)
			refErr := iphdr.SetCE(want)
			changed := setCE(pkt)
			got := bytesOf(pkt)
			require.Equal(t, want, got, "tos %#x v6 %v", tos, v6)
			ect := tos&3 == 1 || tos&3 == 2
			require.Equal(t, ect, changed, "tos %#x v6 %v", tos, v6)
			require.Equal(t, ect, refErr == nil && tos&3 != 3, "reference disagrees on tos %#x", tos)
			if ect {
				e, err := iphdr.ECN(got)
				require.NoError(t, err)
				require.Equal(t, aqm.CE, e)
			}
			if !v6 {
				require.Equal(t, uint16(0xffff), checksum.Checksum(got[:header.IPv4MinimumSize], 0), "checksum of tos %#x", tos)
			}
			pkt.DecRef()
		}
	}
}

// TestSetCEChecksumEdges protects the incremental checksum update at the
// values where ones' complement arithmetic has two zeros: every checksum
// value is reached by varying the ID, and each marked header verifies.
func TestSetCEChecksumEdges(t *testing.T) {
	pkt := packet4(2, udp, 8, 0, 0)
	defer pkt.DecRef()
	nh := header.IPv4(pkt.NetworkHeader().Slice())
	orig := append([]byte(nil), nh...)
	for id := range 1 << 16 {
		copy(nh, orig)
		nh.SetID(uint16(id))
		nh.SetChecksum(0)
		nh.SetChecksum(^nh.CalculateChecksum())
		require.True(t, setCE(pkt))
		if s := checksum.Checksum(nh[:header.IPv4MinimumSize], 0); s != 0xffff {
			t.Fatalf("id %#x: header sums to %#x after marking", id, s)
		}
	}
}

// TestWritePacketRefusesAndReleases protects the ownership contract: while
// the lower endpoint is busy, the queue fills to its limit and refuses the
// rest with ErrNoBufferSpace (each to OnDrop, counted in Stats); accepted
// packets are written in order holding the qdisc's reference; and after
// Close every packet is back to the caller's single reference.
func TestWritePacketRefusesAndReleases(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	var mu sync.Mutex
	var dropped []aqm.Verdict
	var dequeued int
	q, err := New(r, Config{
		Queue:     "fifo",
		Options:   queues.Options{LimitPackets: 4},
		OnDrop:    func(_ *stack.PacketBuffer, why aqm.Verdict) { mu.Lock(); dropped = append(dropped, why); mu.Unlock() },
		OnDequeue: func(*stack.PacketBuffer) { dequeued++ },
	})
	require.NoError(t, err)

	const n = 10
	pkts := make([]*stack.PacketBuffer, n)
	for i := range pkts {
		pkts[i] = packet4(0, l4{proto: header.UDPProtocolNumber, srcPort: uint16(1000 + i), dstPort: 9}, 100, 0, 0)
	}
	require.Nil(t, q.WritePacket(pkts[0]))
	<-r.entered // the dispatcher holds packet 0 in a blocked write
	var refused int
	for _, p := range pkts[1:] {
		switch err := q.WritePacket(p); err.(type) {
		case nil:
		case *tcpip.ErrNoBufferSpace:
			refused++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	require.Equal(t, n-1-4, refused)
	require.Equal(t, int64(2), pkts[1].ReadRefs(), "a queued packet holds the qdisc's reference")
	require.Equal(t, int64(1), pkts[n-1].ReadRefs(), "a refused packet is released")
	close(r.gate)
	require.Eventually(t, func() bool { return r.n.Load() == 5 }, 10*time.Second, time.Millisecond)

	q.Close()
	_, ok := q.WritePacket(pkts[0]).(*tcpip.ErrClosedForSend)
	require.True(t, ok, "WritePacket after Close")

	got, refs := r.written()
	require.Len(t, got, 5)
	for i, b := range got {
		require.Equal(t, bytesOf(pkts[i]), b, "packet %d in order", i)
		require.Equal(t, int64(2), refs[i], "packet %d is written holding the qdisc's reference", i)
	}
	for i, p := range pkts {
		require.Equal(t, int64(1), p.ReadRefs(), "packet %d keeps only the caller's reference", i)
		p.DecRef()
	}
	require.Equal(t, 5, dequeued)
	require.Len(t, dropped, n-5)
	for _, v := range dropped {
		require.Equal(t, aqm.DroppedOverlimit, v)
	}
	st := q.Stats()
	require.Equal(t, uint64(5), st.Dequeued.Packets)
	require.Equal(t, uint64(n-5), st.DroppedOverlimit.Packets)
	require.Equal(t, 0, st.Len)
}

// TestCloseDiscardsQueued protects Close: packets still queued are
// released (one DecRef each), go to OnDrop and count as drops, also in the
// NIC's counters once CountDrops is set; the dispatcher stops.
func TestCloseDiscardsQueued(t *testing.T) {
	s := stack.New(stack.Options{})
	defer s.Destroy()
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	var drops int
	q, err := New(r, Config{Queue: "codel", OnDrop: func(*stack.PacketBuffer, aqm.Verdict) { drops++ }})
	require.NoError(t, err)
	ep := &sink{recorder: r}
	require.Nil(t, s.CreateNICWithOptions(1, ep, stack.NICOptions{QDisc: q}))
	require.True(t, q.CountDrops(s, 1))
	require.False(t, q.CountDrops(s, 2))

	pkts := make([]*stack.PacketBuffer, 6)
	for i := range pkts {
		pkts[i] = packet4(0, udp, 100, 0, 0)
	}
	require.Nil(t, q.WritePacket(pkts[0]))
	<-r.entered
	for _, p := range pkts[1:] {
		require.Nil(t, q.WritePacket(p))
	}
	go func() { time.Sleep(10 * time.Millisecond); close(r.gate) }()
	q.Close() // packet 0 is being written; 1..5 are discarded
	got, _ := r.written()
	require.Len(t, got, 1)
	require.Equal(t, 5, drops)
	require.Equal(t, uint64(5), s.NICInfo()[1].Stats.TxPacketsDroppedNoBufferSpace.Value())
	require.Equal(t, uint64(5), s.Stats().NICs.TxPacketsDroppedNoBufferSpace.Value())
	for _, p := range pkts {
		require.Equal(t, int64(1), p.ReadRefs())
		p.DecRef()
	}
}

// TestCEWrittenAtDequeue protects marking end to end with a real AQM:
// DualPI2's L4S step marks ECT(1) packets that waited longer than 1 ms,
// and exactly those reach the link with CE in their header (and a valid
// checksum); the classic Not-ECT and ECT(0) packets beside them do not.
func TestCEWrittenAtDequeue(t *testing.T) {
	clk := newAtomicClock()
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	q, err := New(r, Config{Queue: "dualpi2", Options: queues.Options{Seed: 1}, Clock: clk})
	require.NoError(t, err)

	first := packet4(0, udp, 100, 0, 0)
	require.Nil(t, q.WritePacket(first))
	<-r.entered
	type sent struct {
		pkt  *stack.PacketBuffer
		want []byte
	}
	var all []sent
	for i := range 12 {
		ecn := uint8(i % 3) // Not-ECT, ECT(1), ECT(0)
		var pkt *stack.PacketBuffer
		if i%2 == 0 {
			pkt = packet4(ecn, l4{proto: header.UDPProtocolNumber, srcPort: uint16(2000 + i), dstPort: 9}, 200, 0, 0)
		} else {
			pkt = packet6(ecn, l4{proto: header.UDPProtocolNumber, srcPort: uint16(2000 + i), dstPort: 9}, 200)
		}
		want := bytesOf(pkt)
		if ecn == 1 {
			require.NoError(t, iphdr.SetCE(want))
		}
		require.Nil(t, q.WritePacket(pkt))
		all = append(all, sent{pkt, want})
	}
	clk.t.Add(int64(10 * time.Millisecond)) // every queued packet has waited 10 ms
	close(r.gate)
	require.Eventually(t, func() bool { return r.n.Load() == 13 }, 10*time.Second, time.Millisecond)
	q.Close()

	got, _ := r.written()
	require.Equal(t, bytesOf(first), got[0])
	// DualPI2 serves its L4S queue first; match the packets by content.
	remaining := map[string]int{}
	for _, b := range got[1:] {
		remaining[string(b)]++
	}
	for i, s := range all {
		require.Positive(t, remaining[string(s.want)], "packet %d (ECN %d) reached the link as expected", i, i%3)
		remaining[string(s.want)]--
		if i%2 == 0 {
			require.Equal(t, uint16(0xffff), checksum.Checksum(s.want[:header.IPv4MinimumSize], 0))
		}
		require.Equal(t, int64(1), s.pkt.ReadRefs())
		s.pkt.DecRef()
	}
	require.Equal(t, uint64(4), q.Detail().Marked)
	require.Equal(t, uint64(4), q.Stats().Marked.Packets)
	first.DecRef()
}

// TestUnsentCounted protects the count of packets a lower endpoint
// declines: WritePackets returning fewer than it was given shows in
// Detail.Unsent, and those packets are still released.
func TestUnsentCounted(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 1), take: 1}
	q, err := New(r, Config{Queue: "fifo"})
	require.NoError(t, err)
	pkts := make([]*stack.PacketBuffer, 5)
	for i := range pkts {
		pkts[i] = packet4(0, udp, 10, 0, 0)
	}
	require.Nil(t, q.WritePacket(pkts[0]))
	<-r.entered
	for _, p := range pkts[1:] {
		require.Nil(t, q.WritePacket(p))
	}
	close(r.gate)
	require.Eventually(t, func() bool { return q.Stats().Dequeued.Packets == 5 }, 10*time.Second, time.Millisecond)
	q.Close()
	require.Equal(t, int64(2), r.n.Load(), "one packet taken from each of the two writes")
	require.Equal(t, uint64(3), q.Detail().Unsent)
	for _, p := range pkts {
		require.Equal(t, int64(1), p.ReadRefs())
		p.DecRef()
	}
}

// TestNewErrors protects construction: a nil lower endpoint, an unknown
// queue and a bad option are errors, not panics.
func TestNewErrors(t *testing.T) {
	_, err := New(nil, Config{})
	require.ErrorIs(t, err, ErrNilLower)
	_, err = New(&recorder{}, Config{Queue: "nope"})
	require.ErrorIs(t, err, queues.ErrUnknown)
	_, err = New(&recorder{}, Config{Options: queues.Options{LimitPackets: -1}})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
	_, err = New(&recorder{}, Config{BurstBytes: -1})
	require.ErrorIs(t, err, aqm.ErrInvalidConfig)
}

// sink is a minimal stack.LinkEndpoint over a recorder, for installing a
// qdisc on a NIC.
type sink struct {
	*recorder
	dispatcher stack.NetworkDispatcher
}

func (*sink) MTU() uint32                                  { return 1500 }
func (*sink) SetMTU(uint32)                                {}
func (*sink) Capabilities() stack.LinkEndpointCapabilities { return 0 }
func (*sink) MaxHeaderLength() uint16                      { return 0 }
func (*sink) LinkAddress() tcpip.LinkAddress               { return "" }
func (*sink) SetLinkAddress(tcpip.LinkAddress)             {}
func (s *sink) Attach(d stack.NetworkDispatcher)           { s.dispatcher = d }
func (s *sink) IsAttached() bool                           { return s.dispatcher != nil }
func (*sink) Wait()                                        {}
func (*sink) ARPHardwareType() header.ARPHardwareType      { return header.ARPHardwareNone }
func (*sink) AddHeader(*stack.PacketBuffer)                {}
func (*sink) ParseHeader(*stack.PacketBuffer) bool         { return true }
func (*sink) Close()                                       {}
func (*sink) SetOnCloseAction(func())                      {}

// TestMetaNeeds protects the shortcuts of classification: a queue that
// never marks nor keeps flows apart gets the size alone, a marking queue
// the ECN codepoint too (read from IPv4 and IPv6), and a fair queue the
// whole Meta; and every name in flowQueues is a registry queue.
func TestMetaNeeds(t *testing.T) {
	h := iphdr.NewHasherWithKey(1, 2)
	for _, pkt := range []*stack.PacketBuffer{packet4(46<<2|2, udp, 300, 0, 0), packet6(10<<2|1, udp, 300)} {
		full, err := h.Meta(bytesOf(pkt))
		require.NoError(t, err)
		require.Equal(t, aqm.Meta{Size: uint32(pkt.Size())}, meta(&h, pkt, 0))
		require.Equal(t, aqm.Meta{Size: uint32(pkt.Size()), ECN: full.ECN}, meta(&h, pkt, needECN))
		require.NotEqual(t, aqm.NotECT, full.ECN)
		require.Equal(t, full, meta(&h, pkt, needECN|needHash))
		pkt.DecRef()
	}
	for name := range flowQueues {
		_, ok := queues.Lookup(name)
		require.True(t, ok, name)
	}
	q, err := New(&recorder{}, Config{Queue: "fifo"})
	require.NoError(t, err)
	require.Equal(t, need(0), q.need)
	q.Close()
	q, err = New(&recorder{}, Config{Queue: "codel"})
	require.NoError(t, err)
	require.Equal(t, needECN, q.need)
	q.Close()
	q, err = New(&recorder{}, Config{})
	require.NoError(t, err)
	require.Equal(t, needECN|needHash, q.need)
	q.Close()
}

// TestMetaEndpointHash protects the use of netstack's endpoint hash: a
// packet that carries one (as TCP endpoints set it) gets it as its flow
// hash, with the ECN codepoint and size of its own header, in IPv4 and
// IPv6; the same packet without it gets the keyed SipHash of its headers;
// and a queue that does not keep flows apart never sees it.
func TestMetaEndpointHash(t *testing.T) {
	h := iphdr.NewHasherWithKey(1, 2)
	tcp := l4{proto: header.TCPProtocolNumber, srcPort: 40000, dstPort: 443}
	for _, pkt := range []*stack.PacketBuffer{packet4(46<<2|2, tcp, 300, 0, 0), packet6(10<<2|1, tcp, 300)} {
		full, err := h.Meta(bytesOf(pkt))
		require.NoError(t, err)
		require.NotEqual(t, aqm.NotECT, full.ECN)
		require.Equal(t, full, meta(&h, pkt, needECN|needHash))
		pkt.Hash = 0x5eed1234
		require.Equal(t, aqm.Meta{Size: uint32(pkt.Size()), Hash: 0x5eed1234, ECN: full.ECN}, meta(&h, pkt, needECN|needHash))
		require.Equal(t, aqm.Meta{Size: uint32(pkt.Size()), ECN: full.ECN}, meta(&h, pkt, needECN))
		require.Equal(t, aqm.Meta{Size: uint32(pkt.Size())}, meta(&h, pkt, 0))
		pkt.DecRef()
	}
}

// TestMetaBehindLinkHeader protects classification of packets that carry
// a link header (an Ethernet NIC's): the Meta skips it and equals that of
// the same packet without one, and a lower endpoint that adds a link
// header never gets the linkless shortcut, while one that adds none does.
func TestMetaBehindLinkHeader(t *testing.T) {
	h := iphdr.NewHasherWithKey(1, 2)
	tcp := l4{proto: header.TCPProtocolNumber, srcPort: 40000, dstPort: 443}
	for _, mk := range []func() *stack.PacketBuffer{
		func() *stack.PacketBuffer { return packet4(46<<2|2, tcp, 300, 0, 0) },
		func() *stack.PacketBuffer { return packet6(10<<2|1, udp, 300) },
	} {
		plain := mk()
		want := meta(&h, plain, needHash|needECN)
		require.NotEqual(t, aqm.NotECT, want.ECN)
		plain.DecRef()
		// The same headers with 14 bytes of link header in front, all in
		// the first view as a stack builds them.
		pkt := relinked(mk(), 14)
		require.Equal(t, want.Size+14, uint32(pkt.Size()))
		got := meta(&h, pkt, needHash|needECN)
		require.Equal(t, want.Hash, got.Hash)
		require.Equal(t, want.ECN, got.ECN)
		require.Equal(t, want.ECN, meta(&h, pkt, needECN).ECN)
		pkt.DecRef()
	}
	for mhl, wantLinkless := range map[uint16]bool{0: true, 14: false} {
		q, err := New(&headerRecorder{mhl: mhl}, Config{})
		require.NoError(t, err)
		require.Equal(t, wantLinkless, q.need&linkless != 0, "MaxHeaderLength %d", mhl)
		q.Close()
	}
}

// relinked returns a packet with pkt's headers and payload and n bytes of
// link header in front of them, all headers in its first view; it
// releases pkt.
func relinked(pkt *stack.PacketBuffer, n int) *stack.PacketBuffer {
	nh := append([]byte(nil), pkt.NetworkHeader().Slice()...)
	th := append([]byte(nil), pkt.TransportHeader().Slice()...)
	payload := append([]byte(nil), pkt.Data().AsRange().ToSlice()...)
	proto := pkt.NetworkProtocolNumber
	pkt.DecRef()
	out := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: n + len(nh) + len(th),
		Payload:            buffer.MakeWithData(payload),
	})
	copy(out.TransportHeader().Push(len(th)), th)
	copy(out.NetworkHeader().Push(len(nh)), nh)
	link := out.LinkHeader().Push(n)
	for i := range link {
		link[i] = 0x45 // looks like an IPv4 header's first byte, to mislead
	}
	out.NetworkProtocolNumber = proto
	return out
}

// headerRecorder is a recorder whose link header is mhl bytes at most.
type headerRecorder struct {
	recorder
	mhl uint16
}

func (r *headerRecorder) MaxHeaderLength() uint16 { return r.mhl }
