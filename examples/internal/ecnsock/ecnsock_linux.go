package ecnsock

import (
	"net"
	"syscall"
)

// EnableRecvTOS asks the kernel to report each received datagram's TOS byte
// in its control message.
func EnableRecvTOS(c *net.UDPConn) error {
	return control(c, func(fd int) error {
		return syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, syscall.IP_RECVTOS, 1)
	})
}

// SetTOS sets the TOS byte (DSCP and ECN) of the datagrams c sends from now
// on. Linux keeps the ECN bits a UDP socket sets (it masks them only for
// TCP).
func SetTOS(c *net.UDPConn, tos byte) error {
	return control(c, func(fd int) error {
		return syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, syscall.IP_TOS, int(tos))
	})
}

// TOS returns the TOS byte from the control message of a datagram read with
// ReadMsgUDPAddrPort on a socket with EnableRecvTOS.
func TOS(oob []byte) (byte, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.IPPROTO_IP && m.Header.Type == syscall.IP_TOS && len(m.Data) >= 1 {
			return m.Data[0], true
		}
	}
	return 0, false
}

func control(c *net.UDPConn, fn func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
