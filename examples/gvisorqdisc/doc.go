// Package gvisorqdisc is a queueing discipline for gVisor's netstack
// (gvisor.dev/gvisor/pkg/tcpip/stack) backed by any aqmkit queue: FQ-CoDel,
// CAKE, PIE, DualPI2 or any other name of package queues, behind a
// [front.Front] that paces it at a rate.
//
//	q, err := gvisorqdisc.New(linkEP, gvisorqdisc.Config{Queue: "fq-codel", Rate: 95 * aqm.Mbit})
//	s.CreateNICWithOptions(1, linkEP, stack.NICOptions{QDisc: q})
//	q.CountDrops(s, 1)
//
// It has the shape of netstack's own fifo qdisc: WritePacket takes a
// reference to the packet and queues it, and one dispatcher goroutine
// hands packets to the link endpoint's WritePackets in batches of up to
// [BatchSize], then releases them. A packet the queue refuses is released
// at once and WritePacket returns [tcpip.ErrNoBufferSpace], as a full fifo
// does, so the NIC counts it and TCP treats it as a local drop.
//
// # Classification and marking
//
// The queue's [aqm.Meta] comes from the headers netstack already built,
// read where they lie: the size is pkt.Size(), the ECN codepoint is read
// from the IP header, and the flow hash is netstack's own endpoint hash
// (PacketBuffer.Hash, which every TCP endpoint sets on the packets it
// sends, to a random value per connection) or, for a packet without one
// (UDP, ICMP, forwarded packets), a keyed SipHash (package iphdr) of the
// addresses, protocol and ports, or the ICMP echo identifier. Either way
// the queue mixes it with its own secret key, and the payload is never
// touched. Behind a link endpoint that adds no link header
// (MaxHeaderLength 0, as a TUN), the link header is not looked up.
//
// When the queue marks a packet, its IP header gets CE when it leaves:
// in IPv4 with the header checksum updated incrementally (RFC 1624), in
// IPv6 in the traffic class. The QueueingDiscipline contract lets a qdisc
// modify the packet; a packet socket that cloned it before the qdisc sees
// the mark too.
//
// # Rate
//
// The queue only builds up where packets wait, so give the qdisc the rate
// of the real bottleneck, or a little less ([Config.Rate]); without one,
// packets queue only while the link endpoint's WritePackets blocks (as an
// fdbased endpoint does when its socket is full). A queue that shapes by
// itself (CAKE) paces at the rate and the front runs unlimited.
//
// # Drops
//
// Every packet is released exactly once: after the link endpoint took it,
// when the queue refuses it (WritePacket returns ErrNoBufferSpace, which
// the NIC counts in TxPacketsDroppedNoBufferSpace), when the queue drops
// it later (an AQM drop at dequeue, or an eviction to make room, which
// [QDisc.CountDrops] adds to the same NIC counters), or when Close
// discards it. [Config.OnDrop] sees each of those drops, and
// [Config.OnDequeue] each packet that leaves, for stacks that tell senders.
// The queue's Stats explain every drop; [QDisc.Metrics] lists them for an
// exporter.
package gvisorqdisc
