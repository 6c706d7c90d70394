package lab

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The lab turns segmentation and receive offloads off on its veth pairs,
// so that every queue on the path (the router's and the kernel's anchors)
// sees packets of at most the MTU, as a real link would carry them. It
// uses the SIOCETHTOOL ioctl that the ethtool program issues, with the
// single-feature commands (ETHTOOL_STSO, _SGSO, _SGRO), so no ethtool
// binary is needed.

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqPtr is struct ifreq with ifr_data: the name and one pointer, padded
// to the union's size.
type ifreqPtr struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

type offloadFeature struct {
	name     string
	get, set uint32
}

var offloadFeatures = []offloadFeature{
	{"tso", unix.ETHTOOL_GTSO, unix.ETHTOOL_STSO},
	{"gso", unix.ETHTOOL_GGSO, unix.ETHTOOL_SGSO},
	{"gro", unix.ETHTOOL_GGRO, unix.ETHTOOL_SGRO},
}

func ethtool(fd int, ifname string, cmd, data uint32) (uint32, error) {
	var ifr ifreqPtr
	if len(ifname) >= len(ifr.name) {
		return 0, fmt.Errorf("lab: interface name %q too long", ifname)
	}
	copy(ifr.name[:], ifname)
	v := ethtoolValue{cmd: cmd, data: data}
	ifr.data = unsafe.Pointer(&v)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&v)
	if errno != 0 {
		return 0, errno
	}
	return v.data, nil
}

// DisableOffloads turns TSO, GSO and GRO off on the named interfaces of the
// calling process's network namespace and reads them back. It returns one
// line per interface ("c0: tso off, gso off, gro off").
func DisableOffloads(ifnames ...string) ([]string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lab: socket for SIOCETHTOOL: %v", err)
	}
	defer unix.Close(fd)
	var out []string
	for _, ifn := range ifnames {
		var parts []string
		for _, f := range offloadFeatures {
			if _, err := ethtool(fd, ifn, f.set, 0); err != nil {
				return out, fmt.Errorf("lab: %s: turning %s off: %v", ifn, f.name, err)
			}
			v, err := ethtool(fd, ifn, f.get, 0)
			if err != nil {
				return out, fmt.Errorf("lab: %s: reading %s: %v", ifn, f.name, err)
			}
			state := "off"
			if v != 0 {
				state = "ON"
			}
			parts = append(parts, f.name+" "+state)
		}
		out = append(out, ifn+": "+strings.Join(parts, ", "))
	}
	return out, nil
}
