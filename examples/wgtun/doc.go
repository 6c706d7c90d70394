// Package wgtun puts an AQM on a wireguard-go [tun.Device]: the packets the
// operating system sends into the tunnel wait in a queue of package queues'
// registry (FQ-CoDel by default, DualPI2, CAKE, a FIFO, …) and leave at a
// configured rate, with Congestion Experienced set in their headers when
// the AQM marks them. Because these are the inner packets, the marks
// survive encryption and reach the far end.
//
//	dev, _ := tun.CreateTUN("wg0", 1420)
//	shaped, err := wgtun.New(dev, wgtun.Config{
//		Rate:          95 * aqm.Mbit,      // a little below the uplink
//		Algorithm:     wgtun.FQCoDel,      // or wgtun.DualPI2, "cake", …
//		OverheadBytes: wgtun.OverheadIPv4, // WireGuard + UDP + outer IPv4
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	wg := device.NewDevice(shaped, conn.NewDefaultBind(), device.NewLogger(device.LogLevelError, ""))
//	defer wg.Close() // closes shaped, which closes dev
//
// [Config.Algorithm] takes any registry name, with [Config.Params] for the
// algorithm's own settings ("target=10ms"); [PassThrough] puts no queue at
// all, to measure what the wrapper itself costs, and [FIFO] is the
// drop-tail baseline to compare an AQM with.
//
// # Why here
//
// wireguard-go moves packets from the TUN device through channels that
// block when full, so without shaping the standing queue forms in those
// channels, in the kernel's TUN queue and in the network, where no AQM
// sees it. Shaping slightly below the bottleneck moves it into the
// wrapper's queue. Only the Read side (towards the tunnel) is queued;
// Write (from the tunnel) passes through unchanged.
//
// # How
//
// Shaped (a non-zero Rate), a goroutine started by [New] reads bursts from
// the device into buffers of its own (a fixed pool: one buffer per packet
// the queue may hold, plus a burst for the reader and one for Read), parses
// each packet with package iphdr (keyed flow hash, ECN codepoint, size plus
// [Config.OverheadBytes]) and offers the burst to a front under one lock at
// one clock reading. [Device.Read] takes the packets the rate lets leave,
// writes CE into the ones the AQM marked (with the IPv4 checksum update),
// and copies them into the caller's buffers, so the caller may reuse its
// buffers freely.
//
// Unshaped (Rate zero, and a queue that does not pace itself), there is no
// rate to wait for, so a Read that finds the queue empty reads the device
// itself: the burst goes through the queue at one clock reading, and the
// packets the queue hands back stay in the caller's buffers, where the
// device put them, when they come out in the order they were read (always
// through a FIFO; through a fair queue, a burst of one flow, which is what
// a Linux TUN with offloads returns: each of its reads is one kernel
// packet, split into segments). Every packet is still
// parsed, enqueued, counted and judged by the AQM, at a sojourn of zero;
// the goroutine hand-over and the copy are saved. A queue with a backlog
// (left from a shaped period) is drained first, and packets never overtake
// each other within a flow, or at all through a FIFO. The price: while the
// wrapper is unshaped, packets that arrive while the caller is busy wait in
// the kernel's TUN queue rather than the wrapper's. [Device.SetRate]
// switches between the two at any time.
//
// In steady state nothing allocates per packet.
//
// # Offsets
//
// On Linux, wireguard-go opens the TUN with offloads (IFF_VNET_HDR, TSO and
// GSO, batches of up to 128 packets): each read may be a segmented
// super-packet and each write a coalesced one, prefixed by a 10-byte
// virtio-net header that the device writes in front of the packet. A
// program that writes packets back to such a device (a router that reads
// from one TUN and writes to another) must leave at least
// [VirtioNetHdrBytes] before each packet: read at an offset of at least 10
// (wireguard-go uses 16) and write at the same offset. [Device.Write]
// refuses a smaller offset on a device that batches with [ErrWriteOffset]
// instead of passing it on. Read takes any offset; at 16 or more, with
// buffers of at least offset+MaxPacketBytes, the unshaped path reads in
// place.
//
// [Device.Metrics] makes a *Device an [aqm.MetricSource] for exporters.
package wgtun
