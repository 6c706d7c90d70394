package gvisorqdisc

import (
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/clock"
)

// Addresses of the documentation ranges (RFC 5737, RFC 3849): the packets
// built here never leave the process.
var (
	src4 = tcpip.AddrFrom4([4]byte{192, 0, 2, 1})
	dst4 = tcpip.AddrFrom4([4]byte{192, 0, 2, 2})
	src6 = tcpip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1})
	dst6 = tcpip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2})
)

// l4 describes the transport header of a test packet.
type l4 struct {
	proto   tcpip.TransportProtocolNumber
	srcPort uint16
	dstPort uint16
}

var udp = l4{proto: header.UDPProtocolNumber, srcPort: 4000, dstPort: 9}

// packet4 builds an outgoing IPv4 packet as netstack does: headers pushed
// into the reserved space, a payload of n bytes, a valid header checksum.
func packet4(tos uint8, t l4, n int, flags uint8, fragOff uint16) *stack.PacketBuffer {
	th := transportLen(t.proto)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: header.IPv4MinimumSize + th,
		Payload:            buffer.MakeWithData(make([]byte, n)),
	})
	pushTransport(pkt, t, n)
	ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
	ip.Encode(&header.IPv4Fields{
		TOS: tos, TotalLength: uint16(header.IPv4MinimumSize + th + n), ID: 7, TTL: 64,
		Flags: flags, FragmentOffset: fragOff,
		Protocol: uint8(t.proto), SrcAddr: src4, DstAddr: dst4,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	return pkt
}

// packet6 builds an outgoing IPv6 packet with traffic class tc.
func packet6(tc uint8, t l4, n int) *stack.PacketBuffer {
	th := transportLen(t.proto)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: header.IPv6MinimumSize + th,
		Payload:            buffer.MakeWithData(make([]byte, n)),
	})
	pushTransport(pkt, t, n)
	ip := header.IPv6(pkt.NetworkHeader().Push(header.IPv6MinimumSize))
	ip.Encode(&header.IPv6Fields{
		TrafficClass: tc, FlowLabel: 0x12345, PayloadLength: uint16(th + n),
		TransportProtocol: t.proto, HopLimit: 64, SrcAddr: src6, DstAddr: dst6,
	})
	pkt.NetworkProtocolNumber = header.IPv6ProtocolNumber
	return pkt
}

func transportLen(p tcpip.TransportProtocolNumber) int {
	switch p {
	case header.TCPProtocolNumber:
		return header.TCPMinimumSize
	case header.UDPProtocolNumber:
		return header.UDPMinimumSize
	case header.ICMPv4ProtocolNumber:
		return header.ICMPv4MinimumSize
	}
	return 0
}

func pushTransport(pkt *stack.PacketBuffer, t l4, n int) {
	switch t.proto {
	case header.TCPProtocolNumber:
		h := header.TCP(pkt.TransportHeader().Push(header.TCPMinimumSize))
		h.Encode(&header.TCPFields{SrcPort: t.srcPort, DstPort: t.dstPort, SeqNum: 1, DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagAck, WindowSize: 1000})
	case header.UDPProtocolNumber:
		h := header.UDP(pkt.TransportHeader().Push(header.UDPMinimumSize))
		h.Encode(&header.UDPFields{SrcPort: t.srcPort, DstPort: t.dstPort, Length: uint16(header.UDPMinimumSize + n)})
	case header.ICMPv4ProtocolNumber:
		h := header.ICMPv4(pkt.TransportHeader().Push(header.ICMPv4MinimumSize))
		h.SetType(header.ICMPv4Echo)
		h.SetIdent(t.srcPort)
	}
}

// bytesOf returns a copy of the whole packet, from the network header on.
func bytesOf(pkt *stack.PacketBuffer) []byte {
	v := pkt.ToView()
	defer v.Release()
	b := append([]byte(nil), v.AsSlice()...)
	return b
}

// recorder is a stack.LinkWriter that keeps a copy of every packet written
// and the packet's reference count at the time. With a gate, each call
// first reports on entered and then waits until the gate is closed.
type recorder struct {
	gate    chan struct{}
	entered chan struct{}
	take    int // if > 0, each call takes at most this many packets

	mu    sync.Mutex
	pkts  [][]byte
	refs  []int64
	calls int
	n     atomic.Int64
}

func (r *recorder) WritePackets(l stack.PacketBufferList) (int, tcpip.Error) {
	if r.entered != nil {
		select {
		case r.entered <- struct{}{}:
		default:
		}
	}
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	n := l.Len()
	if r.take > 0 {
		n = min(n, r.take)
	}
	for _, p := range l.AsSlice()[:n] {
		r.pkts = append(r.pkts, bytesOf(p))
		r.refs = append(r.refs, p.ReadRefs())
	}
	r.n.Add(int64(n))
	return n, nil
}

func (r *recorder) written() ([][]byte, []int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.pkts...), append([]int64(nil), r.refs...)
}

// atomicClock is a manual clock that is safe for concurrent use.
type atomicClock struct{ t atomic.Int64 }

func newAtomicClock() *atomicClock {
	c := &atomicClock{}
	c.t.Store(int64(clock.Epoch))
	return c
}

func (c *atomicClock) Now() aqm.Time { return aqm.Time(c.t.Load()) }
