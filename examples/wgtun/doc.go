// Package wgtun puts an AQM on a wireguard-go [tun.Device]: the packets the
// operating system sends into the tunnel wait in FQ-CoDel or DualPI2 and
// leave at a configured rate, with Congestion Experienced set in their
// headers when the AQM marks them. Because these are the inner packets,
// the marks survive encryption and reach the far end.
//
//	dev, _ := tun.CreateTUN("wg0", 1420)
//	shaped, err := wgtun.New(dev, wgtun.Config{
//		Rate:          95 * aqm.Mbit,      // a little below the uplink
//		Algorithm:     wgtun.FQCoDel,      // or wgtun.DualPI2
//		OverheadBytes: wgtun.OverheadIPv4, // WireGuard + UDP + outer IPv4
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	wg := device.NewDevice(shaped, conn.NewDefaultBind(), device.NewLogger(device.LogLevelError, ""))
//	defer wg.Close() // closes shaped, which closes dev
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
// A goroutine started by [New] reads bursts from the device into buffers
// of its own (a fixed pool: one buffer per packet the queue may hold, plus
// a burst for the reader and one for Read), parses each packet with
// package iphdr (keyed flow hash, ECN codepoint, size plus
// [Config.OverheadBytes]) and offers the burst to an front under one
// lock at one clock reading. [Device.Read] takes the packets the rate lets
// leave, writes CE into the ones the AQM marked (with the IPv4 checksum
// update), and copies them into the caller's buffers, so the caller may
// reuse its buffers freely. In steady state nothing allocates per packet.
//
// [Device.Metrics] makes a *Device an [aqm.MetricSource] for exporters.
package wgtun
