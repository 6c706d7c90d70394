package tun

import "errors"

// Config says which TUN device to open and how to set it up.
type Config struct {
	// Name is the interface name, at most 15 bytes. Empty lets the kernel
	// pick one (tun0, tun1, ...); [Device.Name] reports it.
	Name string
	// MTU, when positive, is set on the interface; zero keeps the device's
	// MTU (1500 for a new TUN).
	MTU int
	// MultiQueue opens the device with IFF_MULTI_QUEUE: each Open of the
	// same name adds a queue. A persistent device must have been created
	// multi-queue ("ip tuntap add ... multi_queue") to attach this way, and
	// one created single-queue refuses it.
	MultiQueue bool
	// KeepDown leaves the link's state as it is; by default Open sets the
	// link up.
	KeepDown bool
	// Offload opens the device with IFF_VNET_HDR and asks the kernel for
	// checksum, TCP segmentation and UDP segmentation offloads
	// (TUNSETOFFLOAD with TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6, TUN_F_TSO_ECN,
	// TUN_F_USO4, TUN_F_USO6, dropping the UDP ones, then all, if the kernel
	// refuses them). Every packet read then starts with a 10-byte
	// virtio-net header (iphdr.VnetHdr) and may be a super-packet of up to
	// 64 KiB; every packet written must start with one. If the kernel
	// refuses IFF_VNET_HDR (a persistent device made without it), Open
	// opens the device without it: [Device.VnetHdr] reports false and
	// [Device.OffloadNote] says why.
	Offload bool
}

// Offload flags of TUNSETOFFLOAD, from <linux/if_tun.h>.
const (
	OffloadCsum   = 0x01 // TUN_F_CSUM: the program takes packets with a partial checksum
	OffloadTSO4   = 0x02 // TUN_F_TSO4: IPv4 TCP super-packets
	OffloadTSO6   = 0x04 // TUN_F_TSO6: IPv6 TCP super-packets
	OffloadTSOECN = 0x08 // TUN_F_TSO_ECN: TCP super-packets that carry CWR
	OffloadUSO4   = 0x20 // TUN_F_USO4: IPv4 UDP GSO super-packets
	OffloadUSO6   = 0x40 // TUN_F_USO6: IPv6 UDP GSO super-packets
)

// OffloadBufferSize is the buffer a read from a device opened with
// Offload needs: the virtio-net header and a 64 KiB super-packet.
const OffloadBufferSize = 10 + 65535

// MaxNameLen is the longest interface name Linux accepts: IFNAMSIZ minus the
// terminating zero.
const MaxNameLen = 15

// ErrUnsupported is returned by Open on systems other than Linux.
var ErrUnsupported = errors.New("tun: TUN devices are supported on Linux only")

// ErrBadName is returned by Open for a name longer than MaxNameLen or one
// that holds a zero byte, a slash or white space.
var ErrBadName = errors.New("tun: bad interface name")

func checkName(name string) error {
	if len(name) > MaxNameLen {
		return ErrBadName
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == 0, c == '/', c == ' ', c == '\t', c == '\n', c == ':':
			return ErrBadName
		}
	}
	return nil
}
