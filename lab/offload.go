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

// IfOffloads is one interface's TSO, GSO and GRO state, in the order of
// offloadFeatures.
type IfOffloads struct {
	Name string
	On   [3]bool
}

// String is the state as the lab prints it: "c0: tso off, gso on, gro off".
func (o IfOffloads) String() string {
	parts := make([]string, len(offloadFeatures))
	for i, f := range offloadFeatures {
		state := "off"
		if o.On[i] {
			state = "on"
		}
		parts[i] = f.name + " " + state
	}
	return o.Name + ": " + strings.Join(parts, ", ")
}

// ParseIfOffloads reads back a line of IfOffloads.String.
func ParseIfOffloads(s string) (IfOffloads, error) {
	name, rest, ok := strings.Cut(s, ": ")
	if !ok || name == "" {
		return IfOffloads{}, fmt.Errorf("lab: offload state %q: want \"IF: tso on|off, gso on|off, gro on|off\"", s)
	}
	o := IfOffloads{Name: name}
	parts := strings.Split(rest, ", ")
	if len(parts) != len(offloadFeatures) {
		return IfOffloads{}, fmt.Errorf("lab: offload state %q: want %d features", s, len(offloadFeatures))
	}
	for i, f := range offloadFeatures {
		switch parts[i] {
		case f.name + " on":
			o.On[i] = true
		case f.name + " off":
		default:
			return IfOffloads{}, fmt.Errorf("lab: offload state %q: feature %d is %q, want %q on or off", s, i+1, parts[i], f.name)
		}
	}
	return o, nil
}

// ReadOffloads reads the TSO, GSO and GRO state of the named interfaces of
// the calling process's network namespace.
func ReadOffloads(ifnames ...string) ([]IfOffloads, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lab: socket for SIOCETHTOOL: %v", err)
	}
	defer unix.Close(fd)
	return readOffloads(fd, ifnames)
}

func readOffloads(fd int, ifnames []string) ([]IfOffloads, error) {
	var out []IfOffloads
	for _, ifn := range ifnames {
		o := IfOffloads{Name: ifn}
		for i, f := range offloadFeatures {
			v, err := ethtool(fd, ifn, f.get, 0)
			if err != nil {
				return out, fmt.Errorf("lab: %s: reading %s: %v", ifn, f.name, err)
			}
			o.On[i] = v != 0
		}
		out = append(out, o)
	}
	return out, nil
}

// SetOffloads sets each interface's TSO, GSO and GRO as given, in the
// calling process's network namespace, and returns the state read back
// (which may differ where the driver refuses a change).
func SetOffloads(want []IfOffloads) ([]IfOffloads, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lab: socket for SIOCETHTOOL: %v", err)
	}
	defer unix.Close(fd)
	names := make([]string, len(want))
	for k, o := range want {
		names[k] = o.Name
		for i, f := range offloadFeatures {
			var v uint32
			if o.On[i] {
				v = 1
			}
			if _, err := ethtool(fd, o.Name, f.set, v); err != nil {
				return nil, fmt.Errorf("lab: %s: setting %s to %d: %v", o.Name, f.name, v, err)
			}
		}
	}
	return readOffloads(fd, names)
}

// DisableOffloads turns TSO, GSO and GRO off on the named interfaces of the
// calling process's network namespace and returns the state read back.
func DisableOffloads(ifnames ...string) ([]IfOffloads, error) {
	want := make([]IfOffloads, len(ifnames))
	for i, n := range ifnames {
		want[i] = IfOffloads{Name: n}
	}
	return SetOffloads(want)
}
