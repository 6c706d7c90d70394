//go:build !linux

package ecnsock

import (
	"errors"
	"net"
)

// EnableRecvTOS reports errors.ErrUnsupported outside Linux.
func EnableRecvTOS(c *net.UDPConn) error { return errors.ErrUnsupported }

// SetTOS reports errors.ErrUnsupported outside Linux.
func SetTOS(c *net.UDPConn, tos byte) error { return errors.ErrUnsupported }

// TOS reports no TOS byte outside Linux.
func TOS(oob []byte) (byte, bool) { return 0, false }
