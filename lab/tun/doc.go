// Package tun opens Linux TUN devices: layer-3 virtual interfaces whose
// packets a program reads and writes as raw IPv4 and IPv6 bytes.
//
//	d, err := tun.Open(tun.Config{Name: "tun0", MTU: 1500})
//	n, err := d.Read(buf)   // one IP packet, no link header
//	_, err = d.Write(pkt)   // handed to the kernel as if it arrived on tun0
//	d.Close()               // unblocks a blocked Read with os.ErrClosed
//
// [Open] attaches to the persistent TUN of that name if one exists (made
// with "ip tuntap add dev tun0 mode tun", say) and creates a TUN otherwise;
// a device it created disappears when its last queue is closed, a
// persistent one stays. It opens the device as IFF_TUN|IFF_NO_PI, so every
// read is exactly one IP packet without the four-byte packet-information
// prefix, and sets the link up (and its MTU when [Config.MTU] is given) with
// ioctls on a datagram socket. It uses only the standard library's syscall
// package and never runs an external command.
//
// # Queues and batches
//
// A plain TUN is one packet per read or write system call: the kernel has no
// recvmmsg for a character device. [Device.ReadBatch] and
// [Device.WriteBatch] still save work: a batch read returns every packet the
// kernel already holds, up to the batch size, from one wake-up of Go's
// network poller, with one read system call per packet; a batch write writes
// its packets in one poller turn. So under load a reader pays one system call
// per packet and one wake-up per batch.
//
// For more than one core, open the device with [Config.MultiQueue] once per
// reader: each [Open] of the same name is one more queue (IFF_MULTI_QUEUE),
// and the kernel spreads flows over the queues by their hash, so each queue
// can have its own reader goroutine. Every queue can write any packet.
// # Offloads
//
// By default the kernel segments what it sends into the device, so reads
// never exceed the MTU, and a router pays a system call per wire packet.
// With [Config.Offload] the device is opened with IFF_VNET_HDR and the
// kernel is told (TUNSETOFFLOAD) that the program takes partial checksums
// and TCP and UDP super-packets: a read then returns a 10-byte virtio-net
// header and a packet of up to 64 KiB ([OffloadBufferSize]) that stands for
// many wire packets, and a write takes the same, so one system call moves a
// whole TSO burst. The header's 16-bit fields are in the host's byte order
// (little-endian on x86 and arm64), which iphdr.VnetHdr reads;
// iphdr.SplitGSO cuts a super-packet into its segments.
//
// # Concurrency
//
// Read and ReadBatch may be called from one goroutine at a time per queue,
// Write and WriteBatch from any number (they are serialised); Close and
// SetReadDeadline from any goroutine at any time.
//
// # Platforms
//
// Linux only. Elsewhere [Open] returns [ErrUnsupported].
package tun
