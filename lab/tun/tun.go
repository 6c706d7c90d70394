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
}

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
