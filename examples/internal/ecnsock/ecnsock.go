// Package ecnsock reads and writes the ECN bits of UDP datagrams on IPv4
// sockets through the IP_TOS socket option and its control message, with the
// standard library only. On systems other than Linux the functions report
// errors.ErrUnsupported and the examples run without ECN.
package ecnsock

// OOBSize is enough out-of-band space for the TOS control message.
const OOBSize = 64
