package iphdr

import (
	"encoding/binary"
	"errors"

	"github.com/aqmkit/aqmkit/aqm"
)

// The errors of this package. They are bare sentinels, so returning one
// never allocates; compare with errors.Is or ==.
var (
	// ErrTruncated reports a slice too short for what its header claims:
	// empty, shorter than the fixed IPv4 (20 bytes) or IPv6 (40 bytes)
	// header, shorter than the IPv4 header length, or shorter than the IPv4
	// total length or 40 plus the IPv6 payload length.
	ErrTruncated = errors.New("iphdr: packet truncated")
	// ErrNotIP reports bytes that do not start with a valid IP header: the
	// version is neither 4 nor 6, or an IPv4 header has IHL below 5 or a
	// total length below its header length.
	ErrNotIP = errors.New("iphdr: not an IPv4 or IPv6 packet")
	// ErrNotECT is returned by [SetCE] for a Not-ECT packet, which must be
	// dropped instead of marked. The packet is left unchanged.
	ErrNotECT = errors.New("iphdr: packet is Not-ECT and cannot be marked")
)

// ECN returns the ECN codepoint of the packet that starts at pkt[0]. It
// checks the header as [Hasher.Meta] does and returns [aqm.NotECT] with the
// error if the header is invalid.
func ECN(pkt []byte) (aqm.ECN, error) {
	v6, _, _, err := check(pkt)
	if err != nil {
		return aqm.NotECT, err
	}
	if v6 {
		return aqm.ECN(pkt[1]>>4) & aqm.ECNMask, nil
	}
	return aqm.ECN(pkt[1]) & aqm.ECNMask, nil
}

// DSCP returns the Differentiated Services codepoint (RFC 2474), the top
// six bits of the IPv4 TOS byte or the IPv6 traffic class, of the packet
// that starts at pkt[0]. It checks the header as [Hasher.Meta] does and
// returns 0 with the error if the header is invalid.
func DSCP(pkt []byte) (uint8, error) {
	v6, _, _, err := check(pkt)
	if err != nil {
		return 0, err
	}
	if v6 {
		return (pkt[0]&0x0f)<<2 | pkt[1]>>6, nil
	}
	return pkt[1] >> 2, nil
}

// SetCE marks the packet that starts at pkt[0] Congestion Experienced, in
// place, as a queue must before it sends a packet that left Dequeue with
// [aqm.CE]:
//
//   - ECT(0) or ECT(1) becomes CE. In IPv4 the header checksum is updated
//     incrementally (RFC 1624); in IPv6 only the two ECN bits change.
//   - CE is left as it is and SetCE returns nil.
//   - Not-ECT is left as it is and SetCE returns [ErrNotECT].
//   - An invalid header ([ErrTruncated], [ErrNotIP]) is left as it is.
//
// Nothing but the ECN bits and the IPv4 checksum ever changes; the DSCP
// never does. Transport checksums do not cover the ECN field, so they stay
// valid.
func SetCE(pkt []byte) error {
	if len(pkt) >= 20 && pkt[0] == 0x45 && be16(pkt[2:4]) >= 20 && int(be16(pkt[2:4])) <= len(pkt) {
		return setCE4(pkt)
	}
	if len(pkt) >= 40 && pkt[0]>>4 == 6 && int(be16(pkt[4:6])) <= len(pkt)-40 {
		return setCE6(pkt)
	}
	return setCESlow(pkt)
}

// setCESlow is SetCE for every packet; SetCE inlines the check for IPv4
// without options.
func setCESlow(pkt []byte) error {
	v6, _, _, err := check(pkt)
	if err != nil {
		return err
	}
	if !v6 {
		return setCE4(pkt)
	}
	return setCE6(pkt)
}

// setCE6 marks a checked IPv6 header.
func setCE6(pkt []byte) error {
	switch pkt[1] & 0x30 {
	case 0:
		return ErrNotECT
	case 0x30:
		return nil
	}
	pkt[1] |= 0x30
	return nil
}

// setCE4 marks a checked IPv4 header.
func setCE4(pkt []byte) error {
	_ = pkt[11]
	e := pkt[1] & 3
	switch e {
	case 0:
		return ErrNotECT
	case 3:
		return nil // never run an update that changes nothing
	}
	// The 16-bit word at bytes 0–1 grows by d = 3-e (1 from ECT(0), 2 from
	// ECT(1)), so RFC 1624 Eqn 3, HC' = ~(~HC + ~m + m'), reduces to
	// HC' = HC - d in ones'-complement: add 0xFFFF-d, the ones'-complement
	// negative of d, with end-around carry. A sum of exactly 0xFFFF (-0)
	// also takes the +1 and becomes 0x0000, which is what a full
	// recomputation gives: a computed checksum is never 0xFFFF.
	s := uint32(be16(pkt[10:12])) + 0xffff - uint32(3-e)
	if s >= 0xffff {
		s++
	}
	binary.BigEndian.PutUint16(pkt[10:12], uint16(s))
	pkt[1] |= 3
	return nil
}
