package router

import "encoding/binary"

// malformed returns why the bytes p, which iphdr refused, are not a
// forwardable IP packet: not IP (empty, or a version other than 4 or 6),
// cut short (shorter than the header or total length it declares), or a
// header that contradicts itself (an IPv4 IHL below 5, a total length
// shorter than the header). The order follows the checks a receiving host
// makes: version, then header length, then total length.
func malformed(p []byte) reason {
	if len(p) == 0 {
		return dropTruncated
	}
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 {
			return dropTruncated
		}
		hl := int(p[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(p[2:4]))
		switch {
		case hl < 20, total < hl:
			return dropBadHeader
		case len(p) < hl, len(p) < total:
			return dropTruncated
		}
	case 6:
		return dropTruncated // iphdr refuses IPv6 only when it is cut short
	default:
		return dropNotIP
	}
	return dropNotIP
}
