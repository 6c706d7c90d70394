package iphdr

import "net/netip"

// Endpoints are a packet's source and destination addresses, its
// transport protocol and, for protocols with ports, its ports: what a
// router, a firewall rule or a log line needs to name the packet's flow.
// They come from the same parse as the flow key ([Hasher.Flow]), so they
// agree with it.
type Endpoints struct {
	// Src and Dst are the source and destination addresses and ports. The
	// addresses are IPv4 (Is4) for IPv4 packets and IPv6 (Is6, never
	// 4-in-6 unless the header holds one) for IPv6 packets, without a zone.
	// The ports are zero unless Ports is set.
	Src, Dst netip.AddrPort
	// Protocol is the IPv4 protocol, or the last IPv6 Next Header value
	// read once extension headers are skipped, as in [Flow.Protocol].
	Protocol uint8
	// Ports reports that the packet is TCP, UDP, UDP-Lite, SCTP or DCCP,
	// not a fragment, with its first four transport bytes (the two ports)
	// inside the IP packet. The first fragment carries the ports too, but
	// gets none here, as it gets none in the flow key.
	Ports bool
}

// ParseEndpoints returns the addresses, protocol and ports of the IPv4 or
// IPv6 packet that starts at pkt[0]. IPv6 extension headers and AH are
// walked as for the flow key (see the package doc), at most eight of them;
// a packet whose walk stops early (a truncated header, the bound) has no
// ports, and its Protocol is the last Next Header value read. On an error ([ErrTruncated], [ErrNotIP]) it returns
// the zero Endpoints. It reads pkt in place and does not allocate.
func ParseEndpoints(pkt []byte) (Endpoints, error) {
	t, err := parse(pkt)
	if err != nil {
		return Endpoints{}, err
	}
	var e Endpoints
	e.Protocol = uint8(t.tail >> 32)
	var src, dst netip.Addr
	var end int
	if t.flags&tupleV6 != 0 {
		src, dst = netip.AddrFrom16([16]byte(pkt[8:24])), netip.AddrFrom16([16]byte(pkt[24:40]))
		end = len(pkt)
		if n := int(be16(pkt[4:6])); n != 0 {
			end = 40 + n
		}
	} else {
		src, dst = netip.AddrFrom4([4]byte(pkt[12:16])), netip.AddrFrom4([4]byte(pkt[16:20]))
		end = int(be16(pkt[2:4]))
	}
	// parse stops at the transport header only when it reached it (l4off
	// is then at least 20), never for a fragment.
	off := int(t.l4off)
	if off != 0 && t.flags&tupleFrag == 0 && hasPorts(e.Protocol) && off+4 <= end {
		e.Ports = true
		e.Src = netip.AddrPortFrom(src, be16(pkt[off:off+2]))
		e.Dst = netip.AddrPortFrom(dst, be16(pkt[off+2:off+4]))
		return e, nil
	}
	e.Src, e.Dst = netip.AddrPortFrom(src, 0), netip.AddrPortFrom(dst, 0)
	return e, nil
}

// hasPorts reports whether protocol proto starts its header with a 16-bit
// source and destination port.
func hasPorts(proto uint8) bool {
	switch proto {
	case protoTCP, protoUDP, protoDCCP, protoSCTP, protoUDPLite:
		return true
	}
	return false
}
