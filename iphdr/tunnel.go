package iphdr

import (
	"encoding/binary"
	"errors"

	"github.com/aqmkit/aqmkit/aqm"
)

// ECN across IP tunnels, RFC 6040 in normal mode: at the ingress,
// Encapsulate copies the inner packet's ECN field into the outer header, CE
// included (section 4.1), so that routers inside the tunnel can mark the
// outer header; at the egress, Decapsulate folds the outer header's ECN
// field into the inner packet by the table of section 4.2 (decapECN). Both
// change only the two ECN bits of the one header they write and, in IPv4,
// its header checksum, updated incrementally (RFC 1624), so that an error
// in a corrupted header is carried through rather than repaired. Neither
// allocates.

// ErrDecapDrop is returned by [Decapsulate] for a Not-ECT inner packet that
// arrived under a CE outer header: RFC 6040 requires the egress to drop it.
// The inner packet is left unchanged.
var ErrDecapDrop = errors.New("iphdr: Not-ECT packet arrived under a CE outer header and must be dropped")

// decap classifies an arriving pair of inner and outer ECN codepoints by
// RFC 6040's decapsulation table (see [decapECN]). The values are ordered:
// every value from [decapSuspect] on deserves a log line.
type decap uint8

const (
	// decapNormal is a combination a compliant tunnel produces.
	decapNormal decap = iota
	// decapUnusual is the table's (!) cell: an ECT(1) inner packet under
	// an ECT(0) outer header, forwarded as ECT(1). RFC 6040 lets the
	// egress log it.
	decapUnusual
	// decapSuspect is a (!!!) cell that is forwarded: a Not-ECT inner
	// packet under an ECT(0) or ECT(1) outer header (forwarded Not-ECT),
	// or a CE inner packet under an ECT(1) outer header (forwarded CE).
	// RFC 6040 asks the egress to log it.
	decapSuspect
	// decapDrop is the (!!!) cell that must be dropped: a Not-ECT inner
	// packet under a CE outer header.
	decapDrop
)

// String names the classification.
func (d decap) String() string {
	switch d {
	case decapNormal:
		return "normal"
	case decapUnusual:
		return "unusual (!)"
	case decapSuspect:
		return "suspect (!!!)"
	case decapDrop:
		return "drop (!!!)"
	}
	return "decap(?)"
}

// decapECN returns the ECN codepoint RFC 6040 section 4.2 gives the inner
// packet leaving a tunnel, from the codepoints of the arriving outer and
// inner headers, and how the pair is classified ([decap]):
//
//	inner \ outer   Not-ECT   ECT(0)          ECT(1)          CE
//	Not-ECT         Not-ECT   Not-ECT (!!!)   Not-ECT (!!!)   drop (!!!)
//	ECT(0)          ECT(0)    ECT(0)          ECT(1)          CE
//	ECT(1)          ECT(1)    ECT(1) (!)      ECT(1)          CE
//	CE              CE        CE              CE (!!!)        CE
//
// The rule behind the table: an outer CE turns any ECN-capable inner
// packet CE; an outer ECT(1) turns an inner ECT(0) into ECT(1); every
// other combination leaves the inner codepoint as it is. The cells marked
// (!!!) are combinations no compliant tunnel produces, which RFC 6040 asks
// the egress to log (it may also raise an alarm); the (!) cell may be
// logged. A Not-ECT packet under a CE outer header must be dropped, since
// its congestion signal cannot be passed on: for [decapDrop] the returned
// codepoint is inner's, unchanged. Bits above the two ECN bits of either
// argument are ignored.
func decapECN(outer, inner aqm.ECN) (aqm.ECN, decap) {
	outer &= aqm.ECNMask
	inner &= aqm.ECNMask
	switch inner {
	case aqm.NotECT:
		switch outer {
		case aqm.NotECT:
			return aqm.NotECT, decapNormal
		case aqm.CE:
			return aqm.NotECT, decapDrop
		}
		return aqm.NotECT, decapSuspect
	case aqm.ECT0:
		if outer == aqm.NotECT {
			return aqm.ECT0, decapNormal
		}
		return outer, decapNormal // ECT(0), ECT(1) or CE: the outer's
	case aqm.ECT1:
		switch outer {
		case aqm.CE:
			return aqm.CE, decapNormal
		case aqm.ECT0:
			return aqm.ECT1, decapUnusual
		}
		return aqm.ECT1, decapNormal
	}
	// inner CE
	if outer == aqm.ECT1 {
		return aqm.CE, decapSuspect
	}
	return aqm.CE, decapNormal
}

// Encapsulate sets the ECN field of outer, a tunnel packet from its outer
// IP header on, to the ECN codepoint of inner, the packet it carries from
// its IP header on: RFC 6040's normal mode, which copies every codepoint,
// CE included. Only outer's two ECN bits and, for IPv4, its header
// checksum (updated incrementally) change; inner is only read. An invalid
// header, either one ([ErrTruncated], [ErrNotIP]), leaves both unchanged.
//
// Call it after the outer header, checksum included, is complete, or
// recompute the checksum afterwards. RFC 6040's compatibility mode, for
// tunnels whose egress may not know ECN, instead leaves the outer header
// Not-ECT, which needs no call.
func Encapsulate(outer, inner []byte) error {
	ov6, _, _, err := check(outer)
	if err != nil {
		return err
	}
	iv6, _, _, err := check(inner)
	if err != nil {
		return err
	}
	tunnelSetECN(outer, ov6, tunnelECN(inner, iv6))
	return nil
}

// Decapsulate applies RFC 6040's decapsulation (section 4.2) at a tunnel
// egress: it reads the ECN codepoint of outer, the arriving tunnel packet
// from its outer IP header on, and rewrites, in place, the ECN field of
// inner, the packet it carried from its IP header on, by the RFC's table:
//
//	inner \ outer   Not-ECT   ECT(0)          ECT(1)          CE
//	Not-ECT         Not-ECT   Not-ECT (!!!)   Not-ECT (!!!)   drop (!!!)
//	ECT(0)          ECT(0)    ECT(0)          ECT(1)          CE
//	ECT(1)          ECT(1)    ECT(1) (!)      ECT(1)          CE
//	CE              CE        CE              CE (!!!)        CE
//
// Only inner's two ECN bits and, for IPv4, its header checksum (updated
// incrementally) change, and only when the codepoint changes; outer is
// only read. suspect reports a marked cell, (!) or (!!!): combinations no
// compliant tunnel produces, which RFC 6040 asks the egress to log.
//
// A Not-ECT inner packet under a CE outer header is suspect and gets
// [ErrDecapDrop], and is left unchanged: drop it. An invalid header,
// either one ([ErrTruncated], [ErrNotIP]), leaves both unchanged and
// returns false with the error.
func Decapsulate(outer, inner []byte) (suspect bool, err error) {
	d, err := decapsulate(outer, inner)
	return d != decapNormal, err
}

// decapsulate is Decapsulate with the pair's classification.
func decapsulate(outer, inner []byte) (decap, error) {
	ov6, _, _, err := check(outer)
	if err != nil {
		return decapNormal, err
	}
	iv6, _, _, err := check(inner)
	if err != nil {
		return decapNormal, err
	}
	e, d := decapECN(tunnelECN(outer, ov6), tunnelECN(inner, iv6))
	if d == decapDrop {
		return d, ErrDecapDrop
	}
	tunnelSetECN(inner, iv6, e)
	return d, nil
}

// tunnelECN returns the ECN codepoint of a checked header.
func tunnelECN(pkt []byte, v6 bool) aqm.ECN {
	if v6 {
		return aqm.ECN(pkt[1]>>4) & aqm.ECNMask
	}
	return aqm.ECN(pkt[1]) & aqm.ECNMask
}

// tunnelSetECN writes codepoint e into a checked header. In IPv4 the
// 16-bit word at bytes 0-1 changes from m to m', and RFC 1624 Eqn 3,
// HC' = ~(~HC + ~m + m') summed in ones'-complement (32 bits, folded
// twice), gives the checksum a full recomputation gives, 0x0000 rather
// than 0xFFFF included. Nothing is written when nothing changes (the case
// of RFC 1624 erratum 4782).
func tunnelSetECN(pkt []byte, v6 bool, e aqm.ECN) {
	if v6 {
		pkt[1] = pkt[1]&^0x30 | byte(e)<<4
		return
	}
	_ = pkt[11]
	b := pkt[1]&^3 | byte(e)
	if b == pkt[1] {
		return
	}
	m := uint32(pkt[0])<<8 | uint32(pkt[1])
	m2 := uint32(pkt[0])<<8 | uint32(b)
	s := uint32(^binary.BigEndian.Uint16(pkt[10:12])) + (^m & 0xffff) + m2
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	binary.BigEndian.PutUint16(pkt[10:12], ^uint16(s))
	pkt[1] = b
}
