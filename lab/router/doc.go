// Package router is a user-space IP router built on aqmkit: it reads packets
// from a TUN device, puts each into the queue of its direction, releases
// them at a rate, holds them for a fixed delay, and writes them back into
// the device, where the kernel routes them on. Its command is
// lab/cmd/aqmrouter.
//
// # Directions
//
// A direction is a destination prefix: by default each destination /24
// (IPv4) or /64 (IPv6) gets its own queue the first time a packet to it
// arrives, up to Config.MaxQueues, so a router between two subnets has two
// directions, one per egress side, with no configuration. Each direction
// has its own queue (any algorithm of package queues, by name: fifo,
// codel, fq-codel, cake, ...), its own front (package front) that releases packets at
// Config.Rate, and its own delay line.
//
// # Path of a packet
//
//	TUN read ─▶ direction by destination prefix ─▶ classify (flow hash, ECN)
//	  ─▶ front: queue + rate ─▶ CE written if marked ─▶ delay line ─▶ TUN write
//
// The queue's sojourn time runs from the read to the moment the rate lets
// the packet leave; the delay line then holds it until that departure
// instant plus Config.Delay (an absolute deadline, so timer lateness does
// not add up), in order, with a bound (Config.DelayLimit). The AQM so sees
// the shaped rate alone, and the delay behaves as a separate hop of fixed
// propagation delay, which is how flent's tests model a path's base RTT. With
// Rate zero the front releases at once and the router is a delay-only hop,
// to put behind a kernel qdisc as the anchor of a comparison. Unshaped, the
// reader that offered a batch of packets also takes them out of the queue
// again, so no consumer goroutine is woken per packet; the queue still sees
// (and counts) every packet.
//
// A packet a queue marks leaves with CE written into its IP header
// (iphdr.SetCE, IPv4 checksum updated). CAKE gets CAKE's classifier (host
// hashes, DSCP tins, the ACK summary) and shapes by itself; its front keeps
// a token bucket at the same rate behind it, which never holds a packet
// CAKE releases on time but bounds what CAKE catches up after a late
// wake-up to the burst (Config.Burst), as for every other queue.
//
// # Accounting
//
// Every packet read is written, dropped for a reason, or still queued:
// Stats gives read, written, dropped by reason (the queue's overlimit,
// early and overload drops; closed, delay_full, flushed, write_error;
// and not_ip, truncated, bad_header, no_queue, no_buffer before a packet
// has a queue), marked, and queued, per queue and in total. Every
// snapshot, while the router runs too, is taken as of one instant, so
// read = written + dropped + queued exactly (Stats.Conserved); account.go
// says where a packet is counted at each step.
//
// # Changing a running router
//
// Reconfigure changes the queue, its parameters, its limit and the rate
// while packets flow: in place when the algorithm stays, or by moving the
// queued packets into a new queue. No packet is lost or duplicated by the
// change. FaultDevice wraps a device to inject write errors and a down
// state, for tests and soak runs.
//
// # Memory and cost
//
// Buffers come from a pool bounded by Config.Buffers and are reused, queues
// and delay lines are sized when a direction is made, and nothing is
// allocated per packet in steady state. Consumers sleep until the next
// departure or arrival and never spin. A plain TUN costs one system call per
// packet each way: that, not the queue, bounds the packet rate of one core.
//
// # Putting it in a path (policy routing)
//
// Run the router in a namespace (or host) that already forwards between two
// interfaces, r0 and r1, and send every packet forwarded between them
// through the TUN first:
//
//	sysctl -w net.ipv4.ip_forward=1
//	for i in all default r0 r1; do sysctl -w net.ipv4.conf.$i.rp_filter=0; done
//	aqmrouter -tun tun0 -aqm fq-codel -rate 50mbit -delay 10ms &
//	sysctl -w net.ipv4.conf.tun0.rp_filter=0
//	ip rule add iif r0 table 100
//	ip rule add iif r1 table 100
//	ip route add default dev tun0 table 100
//
// A packet arriving on r0 or r1 is then routed by table 100 into tun0, where
// the router reads it. What the router writes back arrives with input
// interface tun0, which no rule matches, so the main table routes it out of
// r0 or r1 as usual. Reverse-path filtering must be off, since tun0 is not
// the route back to the sources. Turn TSO, GSO and GRO off on the veths
// (ethtool -K r0 tso off gso off gro off) so that every queue sees packets
// of at most the MTU. With Config.VnetHdr (a TUN opened with offloads) the
// kernel hands the router TSO and UDP GSO super-packets of up to 64 KiB;
// Config.GSO then keeps each whole when it takes at most 2 ms at the
// direction's rate (front.GSOAuto), where one read and one write
// per super-packet instead of per segment is what makes the router
// several times faster, and splits a longer one into its segments, so
// that no queue serves a flow's burst of more than 2 ms in one piece. On
// the way out, the TCP segments of a flow that leave a direction in one
// batch, consecutive in their flow (contiguous data, the same addresses,
// ports, ECN field, TCP options and flags but a final PSH), are joined
// into one super-packet with a partial checksum and written once
// (Config.DisableCoalesce turns it off); the kernel cuts it into the same
// segments, so a mark stays on the segments the queue marked, and the
// counters still count segments. For IPv6,
// add the same rules with ip -6 and enable net.ipv6.conf.all.forwarding.
//
// The rate counts IP bytes. A kernel shaper on an Ethernet device (htb on
// a veth) counts the 14-byte link header too: scale its rate by 1514/1500
// to compare the two at the same packet rate.
//
// # Concurrency
//
// Run starts one reader per device, and per direction one consumer (when
// shaped) and, with a delay, one delay-line goroutine. Stats and Queue.Metrics may be read from
// any goroutine at any time.
package router
